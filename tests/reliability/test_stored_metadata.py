"""Rows written before metadata was checked (or by hand) may hold any JSON;
every reader of a channel still answers: the page, the API's message list and context, the
exports, the admin, the compaction transcript, a compaction and a branch."""

import pytest
from django.test import Client
from django.urls import reverse

from chatcore import services
from chatcore.models import Message
from compaction.services import channel_compact, summary_branch
from compaction.transcript import transcript_items
from tests.chatcore.factories import ChannelFactory

DEEP_ARGUMENTS = "[" * 3_000 + "]" * 3_000  # a string, so the shape allows it; too deep to parse


def _nested(levels: int) -> dict:
    value: dict = {"end": True}
    for _ in range(levels):
        value = {"a": value}
    return value


# (role, content, metadata as stored by an older version or by hand)
STORED = [
    ("assistant", "Calling.", {"tool_calls": [{"function": "x"}]}),  # the reported row
    ("tool", "result one", {"tool_call_id": {"a": 1}, "name": ["x"]}),
    ("assistant", "More.", {"tool_calls": 5, "copied_from": {"channel": "abc", "message": None}, "model": {"m": 1}}),
    ("user", "A list as metadata.", ["a", "list"]),
    ("assistant", "A string as metadata.", "just text"),
    (
        "user",
        "Carried?",
        {"kind": "branch_summary", "source_channel": "x", "source_summary": -1, "messages_covered": {}},
    ),
    ("assistant", "Deep.", {"deep": _nested(200), "tool_calls": [{"id": 1, "type": "f", "function": {"name": None}}]}),
    ("assistant", "Calls as text.", {"tool_calls": ["ls -la", None, {"id": "c9", "function": "grep"}]}),
    ("tool", "Kiwi output of a tool row whose metadata is a list.", ["kiwi"]),
]


@pytest.fixture
def channel(user):
    """A channel whose rows hold every kind of metadata above, with ordinary turns around them,
    and a well-formed call whose arguments are JSON text far too deep to parse."""
    channel = ChannelFactory(owner=user)
    say = services.message_append
    for index in range(4):
        say(channel=channel, user=user, role="user", content=f"Question {index} about the deploy.")
        say(channel=channel, user=user, role="assistant", content=f"Answer {index}: run the script.")
    for role, content, metadata in STORED:
        message = say(channel=channel, user=user, role=role, content=content)
        Message.objects.filter(pk=message.pk).update(metadata=metadata)
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": DEEP_ARGUMENTS}}
    say(channel=channel, user=user, role="assistant", content="", metadata={"tool_calls": [call]})
    for index in range(4, 7):
        say(channel=channel, user=user, role="user", content=f"Question {index}, after the odd rows.")
        say(channel=channel, user=user, role="assistant", content=f"Answer {index}.")
    return channel


def test_the_stored_rows_hold_what_was_written(channel):
    stored = [m.metadata for m in Message.objects.filter(channel=channel, content__in=[c for _, c, _ in STORED])]
    assert [metadata for _, _, metadata in STORED] == stored


def test_the_channel_page_renders(channel, client_user):
    response = client_user.get(reverse("chat:channel", args=[channel.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Tool call <code>x</code>" in page and "Tool call <code>grep</code>" in page
    assert DEEP_ARGUMENTS in page  # shown as the text it is
    assert "Question 6, after the odd rows." in page


def test_the_api_message_list_and_context_answer(channel, api):
    listed = api.get(reverse("chat_api:messages", args=[channel.pk]), {"limit": 500})
    assert listed.status_code == 200
    by_content = {m["content"]: m["metadata"] for m in listed.json()["results"]}
    assert all(by_content[content] == metadata for _, content, metadata in STORED)
    context = api.get(reverse("chat_api:context", args=[channel.pk]))
    assert context.status_code == 200
    sent_calls = [m["tool_calls"] for m in context.json()["messages"] if m.get("tool_calls")]
    assert {"id": "", "type": "function", "function": {"name": "x", "arguments": ""}} in sent_calls[0]
    assert all(call["type"] == "function" for calls in sent_calls for call in calls)


def test_search_finds_them(channel, api):
    response = api.get(reverse("chat_api:channel-search", args=[channel.pk]), {"q": "kiwi output"})
    assert response.status_code == 200
    [hit] = response.json()["results"]
    assert hit["speaker"] == "tool"


@pytest.mark.parametrize(("format", "scope"), [("openai-messages", "active"), ("chatgpt", "tree")])
def test_the_exports_answer(format, scope, channel, api):
    response = api.get(reverse("chat_api:channel-export", args=[channel.pk]), {"format": format, "scope": scope})
    assert response.status_code == 200
    if format == "openai-messages":
        calls = [c for m in response.json()["messages"] for c in m.get("tool_calls") or []]
        assert all(isinstance(c["function"]["arguments"], str) for c in calls) and len(calls) == 7


def test_the_admin_shows_every_row(channel, staff_user):
    client = Client()
    client.force_login(staff_user)
    for message in Message.objects.filter(channel=channel):
        response = client.get(reverse("admin:chatcore_message_change", args=[message.pk]))
        assert response.status_code == 200, message.metadata


def test_the_transcript_compaction_and_branch_read_them(channel, user):
    messages = list(Message.objects.filter(channel=channel).order_by("depth"))
    items = transcript_items(messages)
    names = [call["name"] for item in items for call in item.tool_calls]
    assert names[:2] == ["x", "tool"] and "grep" in names and "read" in names
    result = channel_compact(channel=channel, actor=user, keep_recent=2)
    assert result.summary is not None and result.summary.through_message.channel_id == channel.pk
    # A branch after the ordinary opening turns copies every odd row, made storable again.
    branch = summary_branch(
        channel=channel, actor=user, content="Earlier: deploy questions.", through_message_id=messages[7].pk
    )
    copies = list(Message.objects.filter(channel=branch).order_by("depth"))
    assert len(copies) == 1 + len(messages) - 8 and copies[0].metadata["kind"] == "branch_summary"
    assert copies[1].metadata == {
        "tool_calls": [{"id": "", "type": "function", "function": {"name": "x", "arguments": ""}}],
        "copied_from": {"channel": channel.pk, "message": messages[8].pk},
    }
    assert copies[4].metadata == {"copied_from": {"channel": channel.pk, "message": messages[11].pk}}
    deep = copies[7].metadata
    assert isinstance(deep["deep"], str) and deep["deep"].startswith('{"a": {"a": ')  # kept as its JSON text
    assert Message.objects.get(pk=messages[8].pk).metadata == {"tool_calls": [{"function": "x"}]}  # untouched
