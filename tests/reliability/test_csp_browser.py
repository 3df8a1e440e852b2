"""The pages under the Content-Security-Policy in a real browser (Debian's Chromium through
Playwright): chatting, the Summarize & Continue dialog (htmx), the admin and the API docs work,
and the browser reports no violation of the policy. Also the limit on model calls as a person
meets it: a refused send says why and keeps the words."""

import pytest
from playwright.sync_api import expect

from chatcore.models import Message
from tests.browser import scripts_ready
from tests.chatcore.factories import ChannelFactory
from tests.compaction.factories import converse

# Not serialized_rollback: the tests need none of the migrations' rows, and restoring them after the
# non-serialized transactional tests of other modules (which re-create the content types) would collide.
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TIMEOUT_MS = 15_000
expect.set_options(timeout=TIMEOUT_MS)
# Every violation the page sees, by the policy's own event (before any page script runs).
WATCH = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (event) {
  window.__cspViolations.push(event.violatedDirective + " " + (event.blockedURI || "inline"));
});
"""


@pytest.fixture
def page(chromium, live_server):
    context = chromium.new_context(viewport={"width": 1180, "height": 860}, base_url=live_server.url)
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(WATCH)
    page = context.new_page()
    page.console_violations = []
    page.on(
        "console",
        lambda message: "Content Security Policy" in message.text and page.console_violations.append(message.text),
    )
    yield page
    context.close()


def assert_no_violation(page, where: str) -> None:
    assert page.evaluate("window.__cspViolations") == [], where
    assert page.console_violations == [], where


def log_in(page, user, path: str = "/login/") -> None:
    page.goto(path)
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill("pass-word-123")
    page.get_by_role("button", name="Log in").click()


def test_chat_and_the_compaction_dialog_work_under_the_policy(page, user, chat_model, llm_server):
    channel = ChannelFactory(owner=user, title="Ledger")
    converse(channel, 16)
    log_in(page, user)
    expect(page.get_by_role("heading", name="Your channels")).to_be_visible()
    assert_no_violation(page, "channel list")

    page.goto(f"/channels/{channel.pk}/")
    scripts_ready(page)
    composer = page.get_by_label("Message", exact=True)
    composer.fill("Where are we?")
    composer.press("Enter")  # app.js: Enter sends; stream.js streams the reply
    expect(page.locator(".msg-assistant").last).to_contain_text("ok")
    expect(page.locator("#working .busy")).to_be_hidden()
    assert page.locator(".ctx-track svg rect.ctx-fill").get_attribute("width") is not None

    page.get_by_role("link", name="Summarize").first.click()
    dialog = page.get_by_role("dialog", name="Summarize & Continue")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Keep recent").fill("4")
    dialog.get_by_role("button", name="Preview").click()  # htmx
    expect(dialog.get_by_test_id("stat-messages")).to_be_visible()
    dialog.get_by_role("button", name="Replace").click()
    expect(dialog).to_be_hidden()
    expect(page.locator(".boundary-bar").first).to_contain_text("earlier messages summarized")
    assert_no_violation(page, "channel page, streamed reply, dialog")

    page.goto("/account/tokens/")
    page.get_by_label("Name").fill("laptop")
    page.get_by_role("button", name="Create token").click()
    expect(page.get_by_text("cmp_")).to_be_visible()
    assert_no_violation(page, "tokens page")


def test_the_admin_and_the_api_docs_work_under_the_policy(page, staff_user):
    log_in(page, staff_user, "/admin/login/")
    expect(page.get_by_role("heading", name="Site administration")).to_be_visible()
    page.goto("/admin/chatcore/channel/add/")
    expect(page.get_by_role("heading", name="Add channel")).to_be_visible()
    page.goto("/admin/compaction/usagedashboard/")
    expect(page.get_by_role("heading", name="Channels closest to their threshold")).to_be_visible()
    assert_no_violation(page, "admin")

    page.goto("/api/docs/")
    expect(page.get_by_role("heading", name="Conversation compaction API")).to_be_visible()
    expect(page.locator(".opblock").first).to_be_visible()
    assert_no_violation(page, "API docs")


def test_a_refused_send_says_why_and_gives_the_words_back(page, settings, user, chat_model):
    settings.CHATCORE_THROTTLE_EXPENSIVE_RATE = "1/min"
    channel = ChannelFactory(owner=user, title="Ledger")
    log_in(page, user)
    page.goto(f"/channels/{channel.pk}/")
    scripts_ready(page)
    composer = page.get_by_label("Message", exact=True)
    composer.fill("First question")
    composer.press("Enter")
    expect(page.locator(".msg-assistant").last).to_contain_text("ok")
    expect(page.locator("#working .busy")).to_be_hidden()

    composer.fill("Second question, too soon")
    composer.press("Enter")

    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("Not sent. Too many requests that call a model: at most 1 a minute.")
    expect(composer).to_have_value("Second question, too soon")
    expect(page.locator(".msg-user")).to_have_count(1)
    assert not Message.objects.filter(content="Second question, too soon").exists()
    assert_no_violation(page, "refused send")
