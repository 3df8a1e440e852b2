"""Browser tests of the pages' usability (Debian's Chromium through Playwright):
Undo and other in-place actions keep the reading position, the API tokens
page against the live API. Screenshots go to var/screenshots/ (the usage dashboard's to docs/assets/screens/,
which the Admin guide shows)."""

import json
import urllib.error
import urllib.request

import pytest
from django.conf import settings
from playwright.sync_api import expect

from chatcore import services
from compaction.services import channel_compact
from tests.a11y import assert_accessible
from tests.browser import DOCS_SCREENS, browser_page, scripts_ready
from tests.chatcore.factories import ChannelFactory
from tests.compaction.factories import converse

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("migration_rows")]

SCREENSHOTS = settings.VAR_DIR / "screenshots"
TIMEOUT_MS = 15_000
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture
def page(chromium, live_server):
    with browser_page(chromium, live_server.url, width=1280, timeout_ms=TIMEOUT_MS) as page:
        yield page


def log_in(page, user, password: str = "pass-word-123") -> None:
    page.goto("/login/")
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Your channels")).to_be_visible()


def api_status(base_url: str, path: str, key: str) -> tuple[int, dict]:
    request = urllib.request.Request(base_url + path, headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_token_page_creates_a_working_token_and_revokes_it(page, live_server, user):
    log_in(page, user)
    page.get_by_role("link", name="API tokens").click()
    expect(page.get_by_role("heading", name="API tokens", exact=True)).to_be_visible()
    page.get_by_label("Name").fill("deploy script")
    page.get_by_label("Expires").select_option(label="In 30 days")
    page.get_by_role("button", name="Create token").click()
    key_field = page.get_by_label("The new token's key")
    expect(key_field).to_be_visible()
    key = key_field.input_value()
    assert_accessible(page, "the API tokens page showing a new key")
    assert key.startswith("cmp_")
    expect(page.locator(".token-table")).to_contain_text("deploy script")
    expect(page.locator(".token-table")).to_contain_text(key[:15] + "…")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "api-tokens-created.png"), full_page=True)

    status, body = api_status(live_server.url, "/api/tokens/", key)
    assert status == 200 and [t["name"] for t in body["results"]] == ["deploy script"]

    page.reload()  # the key is not shown again
    expect(page.get_by_label("The new token's key")).to_have_count(0)
    page.get_by_role("button", name="Revoke deploy script").click()
    expect(page.locator(".flash-success")).to_contain_text("revoked")
    expect(page.locator(".token-table")).to_have_count(0)

    status, body = api_status(live_server.url, "/api/channels/", key)
    assert (status, body) == (401, {"detail": "Invalid token.", "code": "authentication_failed"})


def viewport_top(page, selector: str) -> float:
    """Where an element is, relative to the scroll area's top (what the reader sees)."""
    return page.evaluate(
        "s => document.querySelector(s).getBoundingClientRect().top - "
        "document.querySelector('.chat-scroll').getBoundingClientRect().top",
        selector,
    )


def in_view(page, selector: str) -> bool:
    return page.evaluate(
        """s => { const el = document.querySelector(s), box = document.querySelector('.chat-scroll');
                  if (!el) return false;
                  const r = el.getBoundingClientRect(), b = box.getBoundingClientRect();
                  return r.top >= b.top && r.bottom <= b.bottom; }""",
        selector,
    )


def test_undo_keeps_the_reading_position_and_confirms_in_view(page, user):
    """A 321-message history: after Undo the reader still sees the place of the summary's bar, now with
    the confirmation, the restored originals above it (out of view), not the top of the history."""
    channel = ChannelFactory(owner=user, title="Long history")
    messages = converse(channel, 321)
    summary = channel_compact(channel=channel, actor=user, keep_recent=4).summary
    log_in(page, user)
    page.goto(f"/channels/{channel.pk}/")
    scripts_ready(page)
    page.locator(".boundary-bar").click()
    undo = page.get_by_role("button", name="Undo summary")
    undo.scroll_into_view_if_needed()
    before = undo.evaluate(
        "el => el.getBoundingClientRect().top - document.querySelector('.chat-scroll').getBoundingClientRect().top"
    )
    undo.click()
    confirmation = page.locator(f"#confirm-m{summary.through_message_id}")
    expect(confirmation).to_contain_text("Summary undone")
    expect(page.locator(".msg")).to_have_count(321)
    after = viewport_top(page, f"#confirm-m{summary.through_message_id}")
    assert abs(after - before) < 60, (before, after)
    assert in_view(page, f"#confirm-m{summary.through_message_id}")
    assert in_view(page, f"#m{summary.through_message_id}") or viewport_top(page, f"#m{summary.through_message_id}") < 0
    assert not in_view(page, f"#m{messages[0].pk}")
    assert page.evaluate("document.querySelector('.chat-scroll').scrollTop") > 10_000
    expect(confirmation).to_be_focused()
    assert_accessible(page, "the channel page after Undo, with its confirmation")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "undo-keeps-position.png"))
    summary.refresh_from_db()
    assert summary.reverted_at is not None


def test_switching_a_version_mid_history_keeps_that_message_in_place(page, user):
    channel = ChannelFactory(owner=user, title="Versions")
    messages = converse(channel, 60)
    middle = messages[30]  # a user turn, edited into a sibling
    services.message_append(
        channel=channel, user=user, role="user", content="Second version.", parent_id=middle.parent_id
    )
    services.cursor_move(channel=channel, user=user, message_id=middle.pk)
    log_in(page, user)
    page.goto(f"/channels/{channel.pk}/")
    scripts_ready(page)
    article = page.locator(f"#m{middle.pk}")
    article.scroll_into_view_if_needed()
    page.evaluate("document.querySelector('.chat-scroll').scrollTop -= 200")
    before = viewport_top(page, f"#m{middle.pk}")
    article.get_by_role("button", name="Next version").click()
    expect(page.locator(f'article[data-depth="{middle.depth}"] .sibling-pos')).to_have_text("2/2")
    after = viewport_top(page, f'article[data-depth="{middle.depth}"]')
    assert abs(after - before) < 30, (before, after)


def admin_log_in(page, user) -> None:
    page.goto("/admin/login/")
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill("pass-word-123")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Site administration")).to_be_visible()


@pytest.fixture
def busy_site(db):
    """Rows for the staff pages: channels with long titles, summaries of every trigger, usage and audit rows."""
    import datetime
    from decimal import Decimal

    from django.utils import timezone

    from chatcore.models import AuditEntry, Summary, UsageEntry
    from tests.chatcore.factories import LLMModelFactory, PersonaFactory, UserFactory, build_path

    staff = UserFactory(is_staff=True, is_superuser=True, username="ops-anna")
    model = LLMModelFactory(name="gpt-4o-mini-2024-07-18", price_in_per_million=Decimal("0.15"))
    persona = PersonaFactory(name="Site reliability engineer")
    now = timezone.now()
    for index in range(12):
        channel = ChannelFactory(
            owner=staff,
            persona=persona,
            model=model,
            title=f"Quarterly capacity review of the ledger cluster, part {index} (long title)",
        )
        path = build_path(channel, 3)
        channel.context_ratio = 0.3 + index * 0.05
        channel.save(update_fields=["context_ratio"])
        for day in range(0, 28, 3):
            when = now - datetime.timedelta(days=day, hours=index)
            trigger = ("manual", "auto", "gateway")[(index + day) % 3]
            summary = Summary.objects.create(
                channel=channel,
                through_message=path[1],
                content="Earlier: the plan.",
                tokens_before=9_000 + 500 * index,
                tokens_after=1_200 + 40 * day,
                trigger=trigger,
                model=model.name,
                profile_slug="structured",
                extracts={"decisions": ["Ship on Friday."], "files": ["src/ledger/io.py"], "tools": {"grep": 2}},
                created_by=staff,
            )
            Summary.objects.filter(pk=summary.pk).update(created_at=when)
            for success in (True, True, day % 9 != 0):
                entry = UsageEntry.objects.create(
                    user=staff,
                    channel=channel,
                    role="utility",
                    model=model.name,
                    trigger=trigger,
                    success=success,
                    error="" if success else "timeout: the model did not answer in time",
                    duration_ms=800 + 97 * ((index * 7 + day) % 23),
                    cost=Decimal("0.0004"),
                    input_tokens=9_000,
                    output_tokens=900,
                )
                UsageEntry.objects.filter(pk=entry.pk).update(created_at=when)
        AuditEntry.objects.create(actor=staff, actor_label=f"user:{staff.pk}", action="summary.compact", resource="x")
    return staff


ADMIN_LISTS = [
    ("chatcore/channel", "admin-channels-1280.png"),
    ("chatcore/summary", "admin-summaries-1280.png"),
    ("chatcore/usageentry", "admin-usage-1280.png"),
    ("chatcore/auditentry", "admin-audit-1280.png"),
    ("compaction/compactionprofile", "admin-profiles-1280.png"),
    ("chatcore/message", "admin-messages-1280.png"),
]


def test_admin_lists_fit_at_1280_px(page, busy_site):
    admin_log_in(page, busy_site)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for path, shot in ADMIN_LISTS:
        page.goto(f"/admin/{path}/")
        table = page.locator("#result_list")
        expect(table).to_be_visible()
        sizes = page.evaluate(
            "() => { const box = document.querySelector('#result_list').parentElement;"
            " return {page: document.documentElement.scrollWidth, view: window.innerWidth,"
            " table: document.querySelector('#result_list').scrollWidth, box: box.clientWidth}; }"
        )
        # Nothing cut off: no horizontal scrolling of the page or of the list's own box.
        assert sizes["page"] <= sizes["view"] and sizes["table"] <= sizes["box"], (path, sizes)
        assert_accessible(page, f"the admin list {path}")
        page.screenshot(path=str(SCREENSHOTS / shot))


def test_dashboard_renders_its_charts(page, busy_site):
    admin_log_in(page, busy_site)
    page.get_by_role("link", name="Usage dashboard").first.click()
    expect(page.get_by_role("heading", name="Usage dashboard")).to_be_visible()
    charts = page.locator("svg.chart")
    expect(charts).to_have_count(3)
    for index in range(3):
        box = charts.nth(index).bounding_box()
        assert box and box["width"] > 300 and box["height"] > 100
    assert page.locator("svg.chart rect").count() > 30
    expect(page.locator(".dash-table").first).to_contain_text("timeout")
    expect(page.locator(".dash-table").last).to_contain_text("Quarterly capacity review")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    DOCS_SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(DOCS_SCREENS / "usage-dashboard.png"), full_page=True)
    assert_accessible(page, "the usage dashboard")
    page.get_by_label("Persona").select_option(index=1)
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".dash-range")).to_contain_text("persona")
    expect(page.locator("svg.chart")).to_have_count(3)
