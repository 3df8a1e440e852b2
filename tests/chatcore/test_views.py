"""The chat pages through Django's test client: status, content, redirects,
other people's channels (404), CSRF, and the query count of the channel page."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from chatcore import services
from chatcore.models import Channel, Message, Summary
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, PersonaFactory, build_path, tool_round_append

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def channel(user):
    return ChannelFactory(owner=user, title="Planning")


def url(name, *args):
    return reverse(name, args=args)


# Log in, log out, the channel list


def test_root_requires_login(db):
    response = Client().get("/")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/"


def test_login_page_and_login_redirects_to_channel_list(user):
    client = Client()
    page = client.get("/login/")
    assert page.status_code == 200
    assert b'<label for="id_username">Username</label>' in page.content
    assert b"csrfmiddlewaretoken" in page.content
    response = client.post("/login/", {"username": user.username, "password": "pass-word-123"})
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_login_with_a_wrong_password_says_so(user):
    response = Client().post("/login/", {"username": user.username, "password": "wrong"})
    assert response.status_code == 200
    assert b"do not match" in response.content


def test_logout_is_a_post_and_ends_the_session(client_user):
    assert client_user.get("/logout/").status_code == 405
    response = client_user.post("/logout/")
    assert response.status_code == 302
    assert response["Location"] == "/login/"
    assert client_user.get("/").status_code == 302


def test_channel_list_shows_own_channels_with_persona_and_gauge(client_user, user, other_user):
    persona = PersonaFactory(name="Navigator", symbol="🧭")
    mine = ChannelFactory(owner=user, title="Mine with persona", persona=persona)
    build_path(mine, 4)
    ChannelFactory(owner=other_user, title="Someone else's")
    response = client_user.get("/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "Mine with persona" in body
    assert "🧭 Navigator" in body
    assert "Someone else&#x27;s" not in body and "Someone else's" not in body
    mine.refresh_from_db()
    assert f"{round(mine.context_ratio * 100)}%" in body
    assert f'href="{url("chat:channel", mine.pk)}"' in body
    assert "just now</time>" in body


def test_channel_list_says_how_long_ago(client_user, user):
    import datetime

    from django.utils import timezone

    old = ChannelFactory(owner=user, title="Old one")
    Channel.objects.filter(pk=old.pk).update(last_activity_at=timezone.now() - datetime.timedelta(hours=3, minutes=5))
    assert "3\xa0hours ago</time>" in client_user.get("/").content.decode()


def test_staff_see_the_admin_link_and_others_do_not(client_user, staff_user):
    assert b'href="/admin/"' not in client_user.get("/").content
    staff = Client()
    staff.force_login(staff_user)
    assert b'href="/admin/"' in staff.get("/").content


def test_new_channel_form_creates_and_redirects(client_user, user):
    persona = PersonaFactory()
    model = LLMModelFactory(name="big-window", context_window=64_000)
    response = client_user.post("/", {"title": "  Research log ", "persona": persona.pk, "model": model.pk})
    channel = Channel.objects.get(owner=user)
    assert response.status_code == 302
    assert response["Location"] == url("chat:channel", channel.pk)
    assert (channel.title, channel.persona, channel.model, channel.context_budget) == (
        "Research log",
        persona,
        model,
        64_000,
    )


def test_new_channel_without_title_is_refused(client_user, user):
    response = client_user.post("/", {"title": "   ", "persona": "", "model": ""})
    assert response.status_code == 400
    assert b"Give the channel a title." in response.content
    assert not Channel.objects.filter(owner=user).exists()


# The channel page


def test_channel_page_of_someone_else_is_not_found(client_user, other_user):
    theirs = ChannelFactory(owner=other_user)
    build_path(theirs, 2)
    message = theirs.messages.first()
    assert client_user.get(url("chat:channel", theirs.pk)).status_code == 404
    posts = [
        url("chat:send", theirs.pk),
        url("chat:cursor", theirs.pk),
        url("chat:edit", theirs.pk, message.pk),
        url("chat:regenerate", theirs.pk, message.pk),
    ]
    for address in posts:
        assert client_user.post(address, {"content": "x", "message_id": message.pk}).status_code == 404
    assert Message.objects.filter(channel=theirs).count() == 2


def test_empty_channel_page(client_user, channel):
    response = client_user.get(url("chat:channel", channel.pk))
    assert response.status_code == 200
    body = response.content.decode()
    assert "<h1>Planning</h1>" in body
    assert "A fresh channel." in body
    assert 'id="composer"' in body and 'name="csrfmiddlewaretoken"' in body
    assert "Summarize &amp; Continue</a>" not in body


def test_send_without_javascript_posts_and_redirects(client_user, channel, chat_model, llm_server):
    llm_server.script(Reply(content="Here is **the plan**:\n\n```python\nprint('step 1')\n```"))
    response = client_user.post(url("chat:send", channel.pk), {"content": "What is the plan?"})
    assert response.status_code == 302
    assert response["Location"] == url("chat:channel", channel.pk) + "#composer"
    assert list(channel.messages.values_list("role", "content")) == [
        ("user", "What is the plan?"),
        ("assistant", "Here is **the plan**:\n\n```python\nprint('step 1')\n```"),
    ]
    page = client_user.get(url("chat:channel", channel.pk)).content.decode()
    assert "Here is <strong>the plan</strong>:" in page
    assert "<pre><code class=\"language-python\">print('step 1')" in page
    assert "loopback-chat" in page


def test_send_with_htmx_returns_the_conversation_and_the_context_bar(client_user, channel, chat_model):
    response = client_user.post(url("chat:send", channel.pk), {"content": "Hello"}, **HTMX)
    assert response.status_code == 200
    body = response.content.decode()
    assert body.startswith('<div id="channel-main"')
    assert '<div id="contextbar" class="contextbar contextbar-ok" hx-swap-oob="true">' in body
    assert "<p>Hello</p>" in body and "<p>ok</p>" in body
    channel.refresh_from_db()
    assert f">{channel.context_tokens:,}</strong>" in body


def test_offline_model_reply_is_a_reply_not_an_error(client_user, channel):
    response = client_user.post(url("chat:send", channel.pk), {"content": "Anyone there?"}, **HTMX)
    assert response.status_code == 200
    body = response.content.decode()
    assert ">offline</span>" in body
    assert "No language model is configured" in body
    assert 'role="alert"' not in body


def test_model_failure_keeps_the_turn_and_shows_a_clear_error(client_user, channel, chat_model, llm_server):
    llm_server.default = Reply(status=500)
    response = client_user.post(url("chat:send", channel.pk), {"content": "Still there?"}, **HTMX)
    assert response.status_code == 502
    body = response.content.decode()
    assert "<strong>The model did not answer.</strong>" in body
    assert "Your last message has no reply yet." in body
    assert list(channel.messages.values_list("role", flat=True)) == ["user"]


def test_model_failure_without_javascript_redirects_with_the_error(client_user, channel, chat_model, llm_server):
    llm_server.default = Reply(status=500)
    response = client_user.post(url("chat:send", channel.pk), {"content": "Still there?"}, follow=True)
    assert response.redirect_chain == [(url("chat:channel", channel.pk), 302)]
    assert b"<strong>The model did not answer.</strong>" in response.content
    llm_server.default = Reply(content="Back again.")
    leaf = channel.messages.get()
    retry = client_user.post(url("chat:regenerate", channel.pk, leaf.pk), **HTMX)
    assert retry.status_code == 200
    assert list(channel.messages.values_list("role", "content")) == [
        ("user", "Still there?"),
        ("assistant", "Back again."),
    ]


def test_empty_message_is_refused(client_user, channel):
    response = client_user.post(url("chat:send", channel.pk), {"content": "   "}, **HTMX)
    assert response.status_code == 400
    assert b"Write a message first." in response.content
    assert not channel.messages.exists()


def test_markdown_is_sanitised(client_user, channel, user):
    services.message_append(
        channel=channel,
        user=user,
        role="assistant",
        content="<script>alert(1)</script> [click](javascript:alert(2)) "
        "<img src=x onerror=alert(3)> [ok](https://example.org)",
    )
    body = client_user.get(url("chat:channel", channel.pk)).content.decode()
    assert "<script>alert(1)" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert 'href="javascript:' not in body
    assert "<img" not in body
    assert '<a href="https://example.org" rel="noopener noreferrer nofollow">ok</a>' in body


def test_tool_calls_and_results_are_collapsible(client_user, channel, user):
    services.message_append(channel=channel, user=user, role="user", content="Read the file")
    tool_round_append(
        channel, user=user, name="read_file", arguments='{"path": "src/app.py"}', result="line 1\nline 2\n<b>3</b>"
    )
    body = client_user.get(url("chat:channel", channel.pk)).content.decode()
    assert "<summary>Tool call <code>read_file</code></summary>" in body
    assert '"path": "src/app.py"' in body.replace("&quot;", '"')
    assert "<summary>Result of <code>read_file</code>" in body
    assert "3 lines" in body
    assert "&lt;b&gt;3&lt;/b&gt;" in body


def test_edit_makes_a_sibling_and_the_arrows_switch_between_them(client_user, channel, chat_model, llm_server):
    llm_server.script(Reply(content="First answer."), Reply(content="Second answer."))
    client_user.post(url("chat:send", channel.pk), {"content": "Version one"})
    first_user = channel.messages.get(role="user")
    response = client_user.post(url("chat:edit", channel.pk, first_user.pk), {"content": "Version two"}, **HTMX)
    assert response.status_code == 200
    body = response.content.decode()
    assert "Version two" in body and "Second answer." in body and "Version one" not in body
    assert version_markup(2, 2) in body
    assert channel.messages.filter(role="user", parent__isnull=True).count() == 2

    back = client_user.post(
        url("chat:cursor", channel.pk),
        {"message_id": channel.messages.filter(role="user").last().pk, "step": "-1"},
        **HTMX,
    )
    assert back.status_code == 200
    assert "Version one" in back.content.decode() and "First answer." in back.content.decode()
    assert version_markup(1, 2) in back.content.decode()


def test_edit_of_a_later_message_and_regenerate(client_user, channel, chat_model, llm_server):
    llm_server.script(Reply(content="A1"), Reply(content="A2"), Reply(content="A2 edited"), Reply(content="A2 again"))
    client_user.post(url("chat:send", channel.pk), {"content": "Q1"})
    client_user.post(url("chat:send", channel.pk), {"content": "Q2"})
    q2 = channel.messages.get(content="Q2")
    response = client_user.post(url("chat:edit", channel.pk, q2.pk), {"content": "Q2 edited"})
    assert response.status_code == 302
    edited = channel.messages.get(content="Q2 edited")
    assert edited.parent_id == q2.parent_id
    reply = channel.messages.get(content="A2 edited")
    response = client_user.post(url("chat:regenerate", channel.pk, reply.pk), **HTMX)
    assert response.status_code == 200
    again = channel.messages.get(content="A2 again")
    assert again.parent_id == edited.pk
    assert version_markup(2, 2) in response.content.decode()


def test_context_bar_warns_at_three_quarters(client_user, user):
    small = LLMModelFactory(name="small-window", context_window=400)
    channel = ChannelFactory(owner=user, model=small)
    build_path(channel, 2)
    body = client_user.get(url("chat:channel", channel.pk)).content.decode()
    assert "contextbar-ok" in body and "Summarize &amp; Continue</a>" not in body
    build_path(channel, 10, start=2, words=20)
    channel.refresh_from_db()
    assert channel.context_ratio >= 0.75
    body = client_user.get(url("chat:channel", channel.pk)).content.decode()
    assert "contextbar-danger" in body or "contextbar-warn" in body
    assert (
        f'<a class="btn btn-warn" href="{url("compaction:panel", channel.pk)}" data-panel-open>'
        f"Summarize &amp; Continue</a>" in body
    )


def _summarised(channel, count, *, trigger="manual", through_index=None):
    messages = build_path(channel, count)
    through = messages[through_index if through_index is not None else count - 5]
    summary = services.summary_write(
        channel=channel,
        through_message=through,
        content="## Goal\n- ship it",
        created_by=channel.owner,
        trigger=trigger,
        tokens_before=900,
        tokens_after=120,
    )
    return messages, summary


def test_boundary_bar_hides_older_messages_and_marks_auto(client_user, channel):
    messages, summary = _summarised(channel, 12, trigger="auto")
    body = client_user.get(url("chat:channel", channel.pk)).content.decode()
    assert '8 earlier messages summarized <span class="auto-tag">(auto)</span>' in body
    assert "<h2>Goal</h2>" in body
    assert messages[0].content not in body and messages[7].content not in body
    assert messages[8].content in body and messages[11].content in body
    assert f'hx-get="{url("chat:originals", channel.pk, summary.pk)}"' in body


def test_manual_boundary_has_no_auto_label(client_user, channel):
    _summarised(channel, 12)
    body = client_user.get(url("chat:channel", channel.pk)).content.decode()
    assert "8 earlier messages summarized</span>" in body
    assert "(auto)" not in body


def test_originals_load_on_demand_with_the_earlier_boundary(client_user, channel, user):
    messages, first = _summarised(channel, 12, through_index=3)
    second = services.summary_write(
        channel=channel, through_message=messages[7], content="Second summary", created_by=user
    )
    response = client_user.get(url("chat:originals", channel.pk, second.pk), **HTMX)
    assert response.status_code == 200
    body = response.content.decode()
    for message in messages[4:8]:
        assert message.content in body
    assert messages[3].content not in body
    assert f'id="boundary-{first.pk}"' in body and "4 earlier messages summarized" in body
    page = client_user.get(url("chat:originals", channel.pk, second.pk))
    assert page.status_code == 200
    assert b"Messages covered by a summary" in page.content


def test_originals_of_another_channel_are_not_found(client_user, channel, other_user):
    theirs = ChannelFactory(owner=other_user)
    _, summary = _summarised(theirs, 10)
    assert client_user.get(url("chat:originals", theirs.pk, summary.pk)).status_code == 404
    assert client_user.get(url("chat:originals", channel.pk, summary.pk)).status_code == 404


def _page_queries(client, channel) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url("chat:channel", channel.pk))
    assert response.status_code == 200
    return len(captured)


def test_channel_page_query_count_does_not_grow_with_the_history(client_user, user):
    persona = PersonaFactory()
    short = ChannelFactory(owner=user, persona=persona)
    _summarised(short, 10)
    long = ChannelFactory(owner=user, persona=persona)
    messages = build_path(long, 300)
    services.summary_write(channel=long, through_message=messages[289], content="Long ago.", created_by=user)
    # A branch on the rendered stretch, so sibling counts are part of the work.
    services.message_append(channel=long, user=user, role="user", content="A sibling", parent_id=messages[295].pk)
    services.cursor_move(channel=long, user=user, message_id=messages[299].pk)
    _page_queries(client_user, short)  # warm the session and content-type caches
    assert _page_queries(client_user, long) == _page_queries(client_user, short)
    body = client_user.get(url("chat:channel", long.pk)).content.decode()
    assert "290 earlier messages summarized" in body
    assert body.count('class="msg msg-') == 10
    assert version_markup(1, 2) in body


def test_forms_need_the_csrf_token(user, channel):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    build_path(channel, 2)
    message = channel.messages.first()
    for address, data in [
        ("/", {"title": "x"}),
        (url("chat:send", channel.pk), {"content": "x"}),
        (url("chat:cursor", channel.pk), {"message_id": message.pk}),
        (url("chat:edit", channel.pk, message.pk), {"content": "x"}),
        (url("chat:regenerate", channel.pk, message.pk), {}),
        ("/logout/", {}),
    ]:
        response = client.post(address, data)
        assert response.status_code == 403, address
        assert b"This form has expired" in response.content
    assert channel.messages.count() == 2
    assert Channel.objects.filter(owner=user).count() == 1
    assert Summary.objects.count() == 0


def version_markup(index: int, count: int) -> str:
    """The branch position: "2/2" for the eye, "Version 2 of 2" for a screen reader."""
    hidden = f'<span class="visually-hidden" data-version>Version {index} of {count}</span>'
    return f'aria-hidden="true">{index}/{count}</span>{hidden}'
