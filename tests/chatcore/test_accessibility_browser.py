"""WCAG 2.1 AA in a real browser: axe-core on every page state of the product, the channel page
at 200% and 400% zoom and at 320 px, and the keyboard path through a long conversation.

Screenshots at 200% zoom and 320 px go to var/screenshots/ beside the others.
"""

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from playwright.sync_api import expect

from compaction.services import channel_compact
from tests.a11y import assert_accessible
from tests.chatcore.factories import UserFactory
from tests.chatcore.test_views_browser import SCREENSHOTS, TIMEOUT_MS, log_in, pressured_channel, scripts_ready

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("migration_rows")]

# A browser window of 1280×800 at 200% zoom shows 640×400 CSS pixels; at 400%, 320×200.
ZOOM_200 = {"width": 640, "height": 400}
ZOOM_400 = {"width": 320, "height": 256}
NARROW = {"width": 320, "height": 640}
PHONE = {"width": 375, "height": 667}


def open_page(chromium, live_server, viewport, *, scale: float = 1):
    context = chromium.new_context(viewport=viewport, device_scale_factor=scale, base_url=live_server.url)
    context.set_default_timeout(TIMEOUT_MS)
    return context.new_page()


def no_horizontal_overflow(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def fully_visible(page, locator) -> bool:
    """The element is inside the viewport and nothing (a sticky bar, a footer) covers its centre."""
    return locator.evaluate(
        """el => {
            const r = el.getBoundingClientRect();
            if (r.width === 0 || r.height === 0) return false;
            if (r.top < 0 || r.left < 0 || r.bottom > window.innerHeight || r.right > window.innerWidth) return false;
            const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
            return hit !== null && (hit === el || el.contains(hit));
        }"""
    )


def test_every_page_state_passes_axe(chromium, live_server, user):
    staff = UserFactory(is_staff=True, is_superuser=True)
    channel = pressured_channel(user, messages=16)
    second = pressured_channel(user, messages=18, title="Capacity plan")
    page = open_page(chromium, live_server, {"width": 1180, "height": 860})
    try:
        page.goto("/login/")
        assert_accessible(page, "the login page")
        log_in(page, user)
        assert_accessible(page, "the channel list")
        page.goto(f"/channels/{channel.pk}/")
        scripts_ready(page)
        assert_accessible(page, "the channel page with the context warning")

        page.locator(".ctx-warning").get_by_role("link", name="Summarize & Continue").click()
        dialog = page.get_by_role("dialog", name="Summarize & Continue")
        expect(dialog).to_be_visible()
        assert_accessible(page, "the Summarize & Continue panel")
        dialog.get_by_role("button", name="Preview").click()
        expect(dialog.get_by_test_id("stat-messages")).to_be_visible()
        assert_accessible(page, "the panel with a draft")
        dialog.get_by_role("button", name="Replace").click()
        expect(dialog).to_be_hidden()

        page.locator(".boundary-bar").click()
        page.get_by_role("link", name="Show the original messages").click()
        expect(page.locator(".original-list .msg").first).to_be_visible()
        assert_accessible(page, "the summarized history, opened with its originals")

        page.goto(f"/channels/{channel.pk}/settings/")
        assert_accessible(page, "the channel settings")
        page.goto(f"/channels/{channel.pk}/search/?q=ledger")
        expect(page.locator("mark").first).to_be_visible()
        assert_accessible(page, "the search results of a channel")
        page.goto(f"/channels/{channel.pk}/compact/")
        assert_accessible(page, "the Summarize & Continue page without the dialog")

        page.goto(f"/channels/{second.pk}/")
        scripts_ready(page)
        page.get_by_role("link", name="Summarize…").click()
        page.get_by_role("dialog").get_by_role("button", name="Preview").click()
        page.get_by_role("dialog").get_by_role("button", name="Branch into a new channel").click()
        expect(page.locator(".carried-summary")).to_be_visible()
        assert_accessible(page, "a branched channel opening with its carried-over summary")
    finally:
        page.context.close()

    admin = open_page(chromium, live_server, {"width": 1280, "height": 860})
    try:
        log_in_admin(admin, staff)
        for path in admin_pages(channel):
            admin.goto(path)
            assert_accessible(admin, f"the admin page {path}")
    finally:
        admin.context.close()


def log_in_admin(page, staff) -> None:
    page.goto("/admin/login/")
    page.get_by_label("Username").fill(staff.username)
    page.get_by_label("Password").fill("pass-word-123")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#site-name")).to_be_visible()


def admin_pages(channel) -> list[str]:
    """The admin index and every list of this product's models, plus the change pages people use most."""
    from django.apps import apps
    from django.contrib import admin

    pages = [reverse("admin:index")]
    for app_label in ("chatcore", "compaction"):
        for model in apps.get_app_config(app_label).get_models():
            if admin.site.is_registered(model):
                pages.append(reverse(f"admin:{app_label}_{model._meta.model_name}_changelist"))
    pages.append(reverse("admin:chatcore_channel_change", args=[channel.pk]))
    from compaction.models import CompactionProfile

    pages.append(reverse("admin:compaction_compactionprofile_change", args=[CompactionProfile.objects.first().pk]))
    return pages


@pytest.mark.parametrize(
    ("name", "viewport", "scale"),
    [("zoom-200", ZOOM_200, 2), ("zoom-400", ZOOM_400, 4), ("width-320", NARROW, 1), ("width-375", PHONE, 2)],
)
def test_channel_page_reflows_at_any_zoom_and_width(chromium, live_server, user, name, viewport, scale):
    channel = pressured_channel(user, messages=60)
    channel_compact(channel=channel, actor=user, keep_recent=20)
    page = open_page(chromium, live_server, viewport, scale=scale)
    try:
        log_in(page, user)
        assert no_horizontal_overflow(page), f"the channel list scrolls sideways at {name}"
        if name == "width-320":
            page.screenshot(path=str(SCREENSHOTS / "channel-list-320px.png"), full_page=True)
        page.goto(f"/channels/{channel.pk}/")
        scripts_ready(page)
        assert no_horizontal_overflow(page), f"the channel page scrolls sideways at {name}"

        # The conversation is readable: at least half of the window shows it (in its own scrolling
        # pane, or as a page that scrolls as a whole).
        visible = page.locator(".chat-scroll").evaluate(
            """area => area.scrollHeight > area.clientHeight + 1 ? area.clientHeight
                     : Math.min(area.getBoundingClientRect().height, window.innerHeight)"""
        )
        assert visible >= viewport["height"] / 2, f"the conversation shows {visible} px at {name}"
        if name in {"zoom-200", "width-320"}:
            page.screenshot(path=str(SCREENSHOTS / f"channel-{name}.png"))

        # A control that gets the keyboard focus is not hidden behind a bar.
        middle = page.locator("#channel-main > .msg-assistant").nth(3)
        middle.focus()
        page.keyboard.press("Tab")
        focused = page.locator(":focus")
        expect(focused).to_have_text("Regenerate")
        assert fully_visible(page, focused), f"the focused Regenerate button is covered or off-screen at {name}"

        # The summary bar can be reached and opened with the pointer (nothing covers it).
        page.locator(".boundary-bar").click()
        expect(page.locator(".summary-content")).to_be_visible()
        composer = page.get_by_label("Message", exact=True)
        composer.focus()
        assert fully_visible(page, composer), f"the composer is covered or off-screen at {name}"
    finally:
        page.context.close()


def test_forms_do_not_scroll_sideways_at_320px(chromium, live_server, user):
    from tests.chatcore.factories import LLMModelFactory

    LLMModelFactory(
        name="a-model-with-a-very-long-name", label="A model whose label is far longer than a phone is wide, really"
    )
    channel = pressured_channel(user, messages=8)
    page = open_page(chromium, live_server, NARROW)
    try:
        log_in(page, user)
        for path in ("/", f"/channels/{channel.pk}/settings/", f"/channels/{channel.pk}/compact/", "/login/"):
            page.goto(path)
            assert no_horizontal_overflow(page), f"{path} scrolls sideways at 320 px"
        page.goto("/")
        select = page.get_by_label("Model")
        assert select.evaluate("el => el.getBoundingClientRect().right") <= 320
    finally:
        page.context.close()


def test_the_home_page_with_the_demo_data_fits_320px(chromium, live_server):
    """The channel list as a newcomer sees it (the demo's channels, personas and gauges): no item is wider
    than the window, and nothing scrolls sideways."""
    call_command("seed_demo", stdout=StringIO())
    page = open_page(chromium, live_server, NARROW)
    try:
        page.goto("/login/")
        page.get_by_label("Username").fill("demo")
        page.get_by_label("Password").fill("demo-password")
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("heading", name="Your channels")).to_be_visible()
        items = page.locator(".channel-item")
        assert items.count() >= 3
        rights = items.evaluate_all("items => items.map(item => item.getBoundingClientRect().right)")
        assert max(rights) <= NARROW["width"], rights
        assert no_horizontal_overflow(page), "the channel list scrolls sideways at 320 px"
    finally:
        page.context.close()


LONG_WORD = "Supercalifragilistic" * 6
LONG_URL = "https://grafana.example.org/d/" + "ledger-settlement-latency-" * 6 + "?from=now-30d"


def test_long_names_and_urls_wrap_at_320px(chromium, live_server, user):
    """Names, labels and text wider than a phone wrap: the channel page (header with its search box,
    messages, summary) and the search results never scroll sideways and cut nothing off."""
    from chatcore import services
    from chatcore.models import LLMModel, Persona

    channel = pressured_channel(user, messages=40, title=f"Title {LONG_WORD}")
    Persona.objects.filter(pk=channel.persona_id).update(name=f"Persona {LONG_WORD}"[:100])  # the field holds 100
    LLMModel.objects.filter(pk=channel.model_id).update(label=f"Model {LONG_WORD}")
    for role in ("user", "assistant"):
        services.message_append(channel=channel, user=user, role=role, content=f"See {LONG_URL} and {LONG_WORD}.")
    channel_compact(channel=channel, actor=user, keep_recent=10)
    page = open_page(chromium, live_server, NARROW)
    try:
        log_in(page, user)
        page.goto(f"/channels/{channel.pk}/")
        scripts_ready(page)
        expect(page.get_by_text(LONG_URL).first).to_be_visible()
        assert no_horizontal_overflow(page), "the channel page with long names and a long URL scrolls sideways"
        title = page.get_by_role("heading", level=1)
        assert title.evaluate("h => h.scrollWidth <= h.clientWidth"), "the channel title is cut off"
        for control in (
            page.get_by_role("searchbox", name="Search this channel"),
            page.get_by_role("link", name="Summarize…"),
            page.get_by_role("link", name="Settings"),
        ):
            control.scroll_into_view_if_needed()
            assert fully_visible(page, control), f"{control} is cut off at 320 px"

        page.get_by_role("searchbox", name="Search this channel").fill(LONG_WORD)
        page.keyboard.press("Enter")
        expect(page.locator(".search-results mark").first).to_be_visible()
        assert no_horizontal_overflow(page), "the search results scroll sideways at 320 px"
    finally:
        page.context.close()


def test_keyboard_reaches_the_composer_and_moves_between_messages(chromium, live_server, user):
    channel = pressured_channel(user, messages=120)
    page = open_page(chromium, live_server, {"width": 1180, "height": 860})
    try:
        log_in(page, user)
        page.goto(f"/channels/{channel.pk}/")
        scripts_ready(page)
        composer = page.get_by_label("Message", exact=True)

        # Within five Tab presses: the first stop is the skip link to the composer.
        for _presses in range(5):
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.hasAttribute('data-skip')"):
                break
        expect(page.locator(":focus")).to_have_text("Skip to the composer")
        page.keyboard.press("Enter")
        expect(composer).to_be_focused()

        # Without the skip links, the whole conversation is one tab stop, whatever its length.
        page.evaluate("document.activeElement.blur(); window.scrollTo(0, 0)")
        stops = 0
        while not page.evaluate("document.activeElement && document.activeElement.id === 'composer-input'"):
            page.keyboard.press("Tab")
            stops += 1
            assert stops <= 20, "more than 20 Tab stops before the composer on a 120-message channel"

        # The composer's focus is drawn as strongly as any other control's.
        ring = page.locator("#composer").evaluate(
            "f => getComputedStyle(f).outlineStyle + ' ' + getComputedStyle(f).outlineWidth"
        )
        assert ring.startswith("solid") and float(ring.split()[1].removesuffix("px")) >= 2

        # The latest message, then the arrow keys walk the conversation; Tab reaches that message's actions.
        page.keyboard.press("Shift+Tab")
        latest = page.locator("#channel-main > .msg").last
        page.evaluate("document.querySelector('[data-skip-latest]').click()")
        expect(latest).to_be_focused()
        page.keyboard.press("ArrowUp")
        previous = page.locator("#channel-main > .msg").nth(-2)
        expect(previous).to_be_focused()
        page.keyboard.press("Home")
        expect(page.locator("#channel-main > .msg").first).to_be_focused()
        page.keyboard.press("End")
        expect(latest).to_be_focused()
        page.keyboard.press("ArrowUp")
        page.keyboard.press("Tab")
        expect(page.locator(":focus")).to_have_text("Edit")
        assert page.locator(":focus").evaluate("el => el.closest('.msg')") is not None
        assert previous.evaluate("m => m.contains(document.activeElement)")
    finally:
        page.context.close()


def test_a_branch_switch_is_announced(chromium, live_server, user, chat_model, llm_server):
    channel = pressured_channel(user, messages=4, base_url=llm_server.url)
    first = channel.messages.order_by("depth", "id").first()
    page = open_page(chromium, live_server, {"width": 1180, "height": 860})
    try:
        log_in(page, user)
        page.goto(f"/channels/{channel.pk}/")
        scripts_ready(page)
        message = page.locator(f"#m{first.pk}")
        message.get_by_text("Edit", exact=True).click()
        message.get_by_label("Edit your message").fill("An edited first question")
        message.get_by_role("button", name="Send as a new version").click()
        switch = page.locator("#channel-main > .msg-user").first
        expect(switch.get_by_text("Version 2 of 2")).to_be_attached()
        switch.get_by_role("button", name="Previous version").click()
        expect(page.locator("#announcer")).to_have_text("Version 1 of 2 shown")
        # The position has a proper accessible name, not an aria-label on a plain span.
        assert page.locator(".sibling-pos[aria-label]").count() == 0
    finally:
        page.context.close()
