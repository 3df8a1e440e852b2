"""Whatever an older row holds is read safely: pages, the API and copies see metadata in the shapes
they need, and nothing raises (chatcore.metadata.stored)."""

import json

import pytest
from django.urls import reverse

from chatcore import services
from chatcore.metadata.stored import metadata_display, metadata_repaired, stored_tool_calls
from chatcore.models import Message
from tests.chatcore.factories import ChannelFactory

CALL = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}


@pytest.fixture
def channel(user):
    return ChannelFactory(owner=user)


def test_stored_tool_calls_are_read_in_the_protocol_shape_whatever_the_row_holds():
    assert stored_tool_calls({"tool_calls": [CALL]}) == [CALL]
    assert stored_tool_calls(
        {"tool_calls": [{"function": "x"}, "ls", {"id": 3, "name": "f", "arguments": {"a": 1}}]}
    ) == [
        {"id": "", "type": "function", "function": {"name": "x", "arguments": ""}},
        {"id": "", "type": "function", "function": {"name": "tool", "arguments": "ls"}},
        {"id": "3", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
    ]
    assert stored_tool_calls({"tool_calls": 5}) == [
        {"id": "", "type": "function", "function": {"name": "tool", "arguments": "5"}}
    ]
    assert stored_tool_calls(["not", "an", "object"]) == []


def test_display_and_repair_keep_only_what_is_safe_to_use():
    shown = metadata_display({"copied_from": {"channel": "x", "message": 2}, "source_channel": True, "model": "m"})
    assert shown == {"model": "m", "tool_calls": [], "tool_call_id": "", "source_channel": None, "source_summary": None}
    assert metadata_display(json.loads('"a string"'))["tool_calls"] == []
    assert metadata_repaired(role="user", value={"tool_calls": [CALL], "tool_call_id": "c", "speaker": "Ann"}) == {
        "speaker": "Ann"
    }
    assert metadata_repaired(role="assistant", value={"tool_calls": [{"function": "x"}]}) == {
        "tool_calls": [{"id": "", "type": "function", "function": {"name": "x", "arguments": ""}}]
    }


def test_the_reported_row_already_stored_renders_on_the_page_and_in_the_api(channel, user, client_user, api):
    """The row main accepted before this check: every page load of its channel was a 500."""
    services.message_append(channel=channel, user=user, role="user", content="List the files.")
    row = services.message_append(channel=channel, user=user, role="assistant", content="x")
    Message.objects.filter(pk=row.pk).update(metadata={"tool_calls": [{"function": "x"}]})
    page = client_user.get(reverse("chat:channel", args=[channel.pk]))
    assert page.status_code == 200 and "Tool call <code>x</code>" in page.content.decode()
    listed = api.get(reverse("chat_api:messages", args=[channel.pk]))
    assert listed.status_code == 200
    assert listed.json()["results"][-1]["metadata"] == {"tool_calls": [{"function": "x"}]}
    assert Message.objects.get(pk=row.pk).metadata == {"tool_calls": [{"function": "x"}]}
