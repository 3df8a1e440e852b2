"""The pages in a real browser (Debian's Chromium through Playwright) against
a live server and the loopback model server: chatting, branches, the context
bar, Summarize & Continue, the summarized-history bar, Undo and Branch.

Screenshots of the channel page before and after a compaction, and of a
channel branched from a summary, are written to docs/assets/screens/: the
Getting started page shows them, so a change to the pages shows there with
the next browser run (commit the new pictures with the change).
"""

import re

import pytest
from playwright.sync_api import expect

from chatcore import services
from chatcore.models import Channel, Summary
from compaction.models import CompactionProfile
from compaction.services import channel_compact
from devtools.loopback_llm import Reply
from tests.browser import DOCS_SCREENS, browser_page, scripts_ready
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, PersonaFactory
from tests.compaction.factories import converse

# The shipped profiles are written again before each test (migration_rows), whatever ran before.
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("migration_rows")]

SCREENSHOTS = DOCS_SCREENS
TIMEOUT_MS = 15_000
expect.set_options(timeout=TIMEOUT_MS)


def _answer(request: dict) -> Reply:
    question = request["messages"][-1]["content"]
    return Reply(
        content=f"You asked: *{question[:60]}*.\n\nHere is what I would do:\n\n"
        f"1. Check the **ledger** schema.\n2. Run `make migrate` and read the output.\n"
        f"3. Report back with the numbers."
    )


@pytest.fixture
def page(chromium, live_server):
    with browser_page(chromium, live_server.url, width=1180, timeout_ms=TIMEOUT_MS) as page:
        yield page


def log_in(page, user):
    page.goto("/login/")
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill("pass-word-123")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Your channels")).to_be_visible()


def pressured_channel(
    user,
    *,
    messages: int = 16,
    ratio: float = 0.8,
    title: str = "Ledger migration",
    base_url: str = "http://127.0.0.1:9/v1",
) -> Channel:
    """A channel whose active path fills `ratio` of its model's window."""
    channel = ChannelFactory(owner=user, title=title, persona=PersonaFactory(name="Engineer", symbol="E"))
    converse(channel, messages)
    channel.refresh_from_db()
    window = int(channel.context_tokens / ratio)
    model = LLMModelFactory(name=f"window-{window}", context_window=window, base_url=base_url)
    return services.channel_update(channel=channel, actor=user, model=model)


def test_chat_branches_and_the_context_warning(page, user, chat_model, llm_server):
    llm_server.responder = _answer
    PersonaFactory(name="Engineer", symbol="E")
    LLMModelFactory(name="tiny-window", label="Tiny window", context_window=420, base_url=llm_server.url)
    log_in(page, user)

    page.get_by_label("Title").fill("Schema questions")
    page.get_by_label("Persona").select_option(label="E Engineer")
    page.get_by_label("Model").select_option(label="Tiny window")
    page.get_by_role("button", name="Create channel").click()
    expect(page.get_by_role("heading", name="Schema questions")).to_be_visible()
    scripts_ready(page)
    channel = Channel.objects.get(owner=user)

    composer = page.get_by_label("Message", exact=True)
    llm_server.script(Reply(content="Thinking done: **yes**.", delay=0.8))
    composer.fill("Should the ledger move to PostgreSQL?")
    composer.press("Enter")
    expect(page.locator("#working .busy")).to_be_visible()
    expect(page.locator(".msg.pending")).to_contain_text("Should the ledger move to PostgreSQL?")
    expect(page.locator(".msg-assistant").last).to_contain_text("Thinking done: yes.")
    expect(page.locator(".msg-assistant strong").last).to_have_text("yes")
    expect(page.locator("#working .busy")).to_be_hidden()
    expect(composer).to_have_value("")
    assert page.url.endswith(f"/channels/{channel.pk}/")

    # Edit the first message: a sibling, then back to the original with ‹.
    first = page.locator(".msg-user").first
    first.get_by_text("Edit", exact=True).click()
    first.get_by_label("Edit your message").fill("Should the ledger stay on MySQL?")
    first.get_by_role("button", name="Send as a new version").click()
    expect(page.locator(".msg-user").first).to_contain_text("stay on MySQL")
    expect(page.locator(".msg-user").first.locator(".sibling-pos")).to_have_text("2/2")
    page.locator(".msg-user").first.get_by_role("button", name="Previous version").click()
    expect(page.locator(".msg-user").first.locator(".sibling-pos")).to_have_text("1/2")
    # The keyboard stays on the switch: Enter on the focused › goes forward again.
    expect(page.locator(".msg-user").first.get_by_role("button", name="Next version")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(".msg-user").first.locator(".sibling-pos")).to_have_text("2/2")
    page.locator(".msg-user").first.get_by_role("button", name="Previous version").click()
    expect(page.locator(".msg-user").first.locator(".sibling-pos")).to_have_text("1/2")
    expect(page.locator(".msg-user").first).to_contain_text("move to PostgreSQL")
    expect(page.locator(".msg-assistant").first).to_contain_text("Thinking done")

    # Regenerate the reply: a sibling reply.
    page.locator(".msg-assistant").first.get_by_role("button", name="Regenerate").click()
    expect(page.locator(".msg-assistant").first.locator(".sibling-pos")).to_have_text("2/2")
    expect(page.locator(".msg-assistant").first).to_contain_text("Here is what I would do")

    # Keep talking until the context bar warns.
    expect(page.locator(".ctx-warning")).to_have_count(0)
    for turn in range(8):
        if page.locator(".ctx-warning").count():
            break
        composer.fill(f"Follow-up number {turn}: what about the indexes on the settlement table?")
        page.get_by_role("button", name="Send").click()
        expect(page.locator(".msg-user").last).to_contain_text(f"Follow-up number {turn}")
        expect(page.locator("#working .busy")).to_be_hidden()
    warning = page.locator(".ctx-warning")
    expect(warning).to_be_visible()
    expect(warning.get_by_role("link", name="Summarize & Continue")).to_be_visible()
    channel.refresh_from_db()
    assert channel.context_ratio >= 0.75
    expect(page.get_by_test_id("ctx-tokens")).to_have_text(f"{channel.context_tokens:,}")

    # A model failure is reported clearly and the turn is kept.
    llm_server.responder = None
    llm_server.default = Reply(status=500)
    composer.fill("And now?")
    composer.press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("The model did not answer.")
    expect(page.locator(".msg-user").last).to_contain_text("And now?")
    expect(page.get_by_role("button", name="Get a reply")).to_be_visible()

    # A session that ended sends the browser to the login page, not into the conversation.
    page.context.clear_cookies(name="sessionid")
    page.get_by_role("button", name="Get a reply").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    assert "/login/?next=" in page.url


def test_preview_edit_and_replace_then_undo(page, user):
    channel = pressured_channel(user)
    log_in(page, user)
    page.goto(f"/channels/{channel.pk}/")
    expect(page.locator(".ctx-warning")).to_be_visible()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "channel-before-compaction.png"))

    # The panel is a modal dialog: focus goes in, Esc closes it, focus comes back.
    opener = page.locator(".ctx-warning").get_by_role("link", name="Summarize & Continue")
    opener.click()
    dialog = page.get_by_role("dialog", name="Summarize & Continue")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_label("Profile")).to_be_focused()
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.getElementById('panel-dialog').contains(document.activeElement)")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(opener).to_be_focused()

    opener.press("Enter")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Keep recent").fill("4")
    dialog.get_by_label("Focus").fill("the settlement table")
    dialog.get_by_role("button", name="Preview").click()
    expect(dialog.get_by_test_id("stat-messages")).to_have_text("16 → 5")
    expect(dialog.get_by_test_id("stat-tokens")).to_have_text(re.compile(r"^[\d,]+ → [\d,]+$"))
    draft = dialog.get_by_label(re.compile("^Draft summary"))
    expect(draft).to_be_focused()
    page.screenshot(path=str(SCREENSHOTS / "summarize-panel-preview.png"))
    assert Summary.objects.count() == 0
    draft.fill("## Goal\n- Move the ledger to PostgreSQL 16.\n\n## Decisions\n- Batch stays at midnight.")
    dialog.get_by_role("button", name="Replace").click()
    expect(dialog).to_be_hidden()

    bar = page.locator(".boundary-bar").first
    expect(bar).to_have_text(re.compile(r"▸\s+12 earlier messages summarized\s"))
    expect(bar).not_to_contain_text("(auto)")
    expect(page.get_by_role("status").filter(has_text="Summarized 12 messages")).to_be_visible()
    expect(page.locator(".msg")).to_have_count(4)
    expect(page.locator(".ctx-warning")).to_have_count(0)
    summary = Summary.objects.get()
    assert (summary.edited, summary.trigger, summary.content.startswith("## Goal")) == (True, "manual", True)
    page.evaluate("document.querySelector('.chat-scroll').scrollTop = 0")
    page.screenshot(path=str(SCREENSHOTS / "channel-after-compaction.png"))
    bar.click()
    expect(page.locator(".summary-content h2").first).to_have_text("Goal")
    page.screenshot(path=str(SCREENSHOTS / "channel-after-compaction-expanded.png"))

    page.get_by_role("button", name="Undo summary").click()
    expect(page.locator(".boundary-bar")).to_have_count(0)
    expect(page.locator(".msg")).to_have_count(16)
    summary.refresh_from_db()
    assert summary.reverted_at is not None


def test_automatic_summary_bar_expands_and_undoes(page, user):
    channel = pressured_channel(user, messages=20, title="Night shift")
    result = channel_compact(channel=channel, actor=None, trigger="auto", keep_recent=4)
    log_in(page, user)
    page.goto(f"/channels/{channel.pk}/")
    bar = page.locator(".boundary-bar")
    expect(bar).to_have_text(re.compile(rf"▸\s+{result.summarized_count} earlier messages summarized \(auto\)"))
    expect(page.locator(".msg")).to_have_count(4)

    bar.click()
    expect(page.locator(".summary-content")).to_be_visible()
    expect(page.locator(".original-list")).to_have_count(0)
    page.get_by_role("link", name="Show the original messages").click()
    originals = page.locator(".original-list .msg")
    expect(originals).to_have_count(result.summarized_count)
    expect(originals.first).to_contain_text("Turn 0.")

    page.get_by_role("button", name="Undo summary").click()
    expect(page.locator(".boundary-bar")).to_have_count(0)
    expect(page.locator(".msg")).to_have_count(20)
    assert Summary.objects.get().reverted_at is not None


def test_branch_into_a_new_channel_and_one_click_summary(page, user):
    channel = pressured_channel(user, title="Capacity plan")
    log_in(page, user)
    page.goto(f"/channels/{channel.pk}/")
    page.get_by_role("link", name="Summarize…").click()
    dialog = page.get_by_role("dialog", name="Summarize & Continue")
    dialog.get_by_role("button", name="Preview").click()
    dialog.get_by_label(re.compile("^Draft summary")).fill("Where we stand: 40 connections, 30 s timeout.")
    dialog.get_by_role("button", name="Branch into a new channel").click()
    expect(page.get_by_role("heading", name="Capacity plan (continued)")).to_be_visible()
    branch = Channel.objects.get(branched_from=channel)
    assert page.url.endswith(f"/channels/{branch.pk}/")
    # The carried-over summary is a block of its own, followed by copies of the kept messages.
    carried = page.locator(".carried-summary")
    expect(carried).to_contain_text("Summary carried over")
    expect(carried).to_contain_text("Where we stand: 40 connections, 30 s timeout.")
    expect(carried.get_by_role("button", name="Edit")).to_have_count(0)
    copies = branch.messages.filter(depth__gt=0).count()
    assert copies == CompactionProfile.objects.get(slug="structured").keep_recent
    expect(page.locator("article.msg")).to_have_count(copies)
    expect(page.locator(".copied-from")).to_have_count(copies)
    newest = channel.messages.order_by("-depth").first()
    expect(page.locator("article.msg").last).to_contain_text(newest.content[:40])
    expect(page.get_by_text("has no reply yet")).to_have_count(0)
    head = page.locator(".branched-from")
    expect(head.get_by_role("link", name="“Capacity plan”")).to_have_attribute("href", f"/channels/{channel.pk}/")
    page.locator(".chat-scroll").evaluate("element => element.scrollTo(0, 0)")
    page.screenshot(path=str(SCREENSHOTS / "channel-branched.png"))
    assert Summary.objects.count() == 0

    page.goto(f"/channels/{channel.pk}/")
    page.get_by_role("link", name="Summarize…").click()
    page.get_by_role("dialog").get_by_role("button", name="Summarize now").click()
    expect(page.get_by_role("dialog")).to_be_hidden()
    expect(page.locator(".boundary-bar")).to_contain_text("earlier messages summarized")
    assert Summary.objects.get().edited is False


def test_essential_paths_work_without_javascript(chromium, live_server, user, llm_server):
    context = chromium.new_context(java_script_enabled=False, base_url=live_server.url)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        llm_server.default = Reply(content="Answered **without** scripts.")
        channel = pressured_channel(user, title="No script", base_url=llm_server.url)
        log_in(page, user)
        page.goto(f"/channels/{channel.pk}/")
        page.get_by_label("Message", exact=True).fill("Plain form post")
        page.get_by_role("button", name="Send").click()
        expect(page.locator(".msg-user").last).to_contain_text("Plain form post")
        expect(page.locator(".msg-assistant").last).to_contain_text("Answered without scripts.")
        page.locator(".ctx-warning").get_by_role("link", name="Summarize & Continue").click()
        expect(page.get_by_role("heading", name="Summarize & Continue")).to_be_visible()
        page.get_by_role("button", name="Preview").click()
        expect(page.get_by_test_id("stat-messages")).to_be_visible()
        page.get_by_role("button", name="Replace").click()
        expect(page.get_by_role("heading", name="No script")).to_be_visible()
        page.locator(".boundary-bar").click()
        page.get_by_role("link", name="Show the original messages").click()
        expect(page.get_by_role("heading", name="Messages covered by a summary")).to_be_visible()
        assert Summary.objects.get().edited is False
    finally:
        context.close()
