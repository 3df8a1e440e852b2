"""Message metadata is checked on every write (shape of tool calls, depth, size, plain JSON), by the
service, the bulk importer and the API alike (chatcore.metadata.validation)."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from chatcore import services
from chatcore.bulk import NewMessage, messages_bulk_import
from chatcore.metadata.validation import MAX_DEPTH
from chatcore.models import Message
from tests.chatcore.factories import ChannelFactory

CALL = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}
SHAPE = '{"id": string, "type": "function", "function": {"name": string, "arguments": string}}'


def _nested(levels: int) -> dict:
    """Metadata `levels` containers deep, the object itself being the first."""
    value: dict = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


@pytest.fixture
def channel(user):
    return ChannelFactory(owner=user)


@pytest.mark.parametrize(
    ("tool_calls", "problem"),
    [
        ([{"function": "x"}], "tool_calls[0] needs an id that is a string"),
        ([{**CALL, "id": 7}], "tool_calls[0] needs an id that is a string"),
        ([{**CALL, "type": "custom"}], 'tool_calls[0] needs "type": "function"'),
        ([CALL, {**CALL, "function": "read_file"}], "tool_calls[1] needs a function object"),
        ([{**CALL, "function": {"arguments": "{}"}}], "tool_calls[0] needs a function name that is a string"),
        ([{**CALL, "function": {"name": "f", "arguments": {"path": "a"}}}], "tool_calls[0] needs function arguments"),
        (["read_file"], "tool_calls[0] is not an object"),
    ],
)
def test_malformed_tool_calls_are_refused_by_the_api_and_nothing_is_written(tool_calls, problem, channel, api):
    body = {"role": "assistant", "content": "Looking.", "metadata": {"tool_calls": tool_calls}}
    response = api.post(reverse("chat_api:messages", args=[channel.pk]), body, format="json")
    assert response.status_code == 400
    payload = response.json()
    assert set(payload) == {"detail", "code", "errors"} and payload["code"] == "invalid"
    [message] = payload["errors"]["metadata"]
    assert message.startswith(problem) and message.endswith(f"each tool call is {SHAPE}.")
    assert payload == {"detail": f"metadata: {message}", "code": "invalid", "errors": {"metadata": [message]}}
    assert not Message.objects.filter(channel=channel).exists()


def test_the_reported_call_is_refused_with_the_whole_body(channel, api):
    body = {"role": "assistant", "content": "x", "metadata": {"tool_calls": [{"function": "x"}]}}
    response = api.post(reverse("chat_api:messages", args=[channel.pk]), body, format="json")
    message = f"tool_calls[0] needs an id that is a string: each tool call is {SHAPE}."
    assert (response.status_code, response.json()) == (
        400,
        {"detail": f"metadata: {message}", "code": "invalid", "errors": {"metadata": [message]}},
    )
    assert Message.objects.count() == 0


def test_well_formed_tool_calls_and_results_are_stored_as_sent(channel, api):
    url = reverse("chat_api:messages", args=[channel.pk])
    call = api.post(url, {"role": "assistant", "content": "", "metadata": {"tool_calls": [CALL]}}, format="json")
    result = api.post(url, {"role": "tool", "content": "hello", "metadata": {"tool_call_id": "call_1"}}, format="json")
    assert (call.status_code, result.status_code) == (201, 201)
    assert Message.objects.get(pk=call.json()["id"]).metadata == {"tool_calls": [CALL]}
    assert Message.objects.get(pk=result.json()["id"]).metadata == {"tool_call_id": "call_1"}


@pytest.mark.parametrize(
    ("role", "metadata", "message"),
    [
        ("user", {"tool_calls": [CALL]}, "Only assistant messages carry tool_calls."),
        ("assistant", {"tool_calls": CALL}, f"tool_calls must be a list of tool calls, each {SHAPE}."),
        ("assistant", {"tool_call_id": "call_1"}, "Only tool messages carry a tool_call_id."),
        ("tool", {"tool_call_id": 1}, "tool_call_id must be a string: the id of the call this result answers."),
        ("user", {"note": "a\x00b"}, "note may not contain NUL characters."),
        ("user", {"score": float("nan")}, "score must be a finite number."),
        ("user", {"when": {1, 2}}, "when is not a JSON value."),
        ("user", {"a": {1: "x"}}, "The keys of a must be text without NUL characters."),
        ("user", {"note": ["ok", "half \ud800"]}, "note[1] may not contain a lone surrogate (U+D800 to U+DFFF)."),
        ("user", {"a": {"\udc00": 1}}, "The keys of a may not contain a lone surrogate (U+D800 to U+DFFF)."),
        ("user", ["not", "an", "object"], "Metadata must be an object."),
    ],
)
def test_the_service_refuses_what_cannot_be_stored(role, metadata, message, channel, user):
    with pytest.raises(ValidationError) as refused:
        services.message_append(channel=channel, user=user, role=role, content="text", metadata=metadata)
    assert refused.value.message_dict == {"metadata": [message]}
    assert not Message.objects.filter(channel=channel).exists()


def test_depth_is_limited_to_twenty_levels(channel, user, api):
    kept = services.message_append(channel=channel, user=user, role="user", content="a", metadata=_nested(MAX_DEPTH))
    assert kept.metadata == _nested(MAX_DEPTH)
    response = api.post(
        reverse("chat_api:messages", args=[channel.pk]),
        {"role": "user", "content": "b", "metadata": _nested(MAX_DEPTH + 1)},
        format="json",
    )
    assert response.status_code == 400
    deepest = ".".join(["a"] * MAX_DEPTH)  # the 21st object
    assert response.json()["errors"] == {
        "metadata": [f"Metadata may be nested at most 20 levels deep; {deepest} is deeper."]
    }
    assert list(Message.objects.filter(channel=channel)) == [kept]


def test_a_structure_far_too_deep_for_recursion_is_refused_by_the_service(channel, user):
    deep: list = []
    for _ in range(50_000):
        deep = [deep]
    with pytest.raises(ValidationError, match="nested at most 20 levels"):
        services.message_append(channel=channel, user=user, role="user", content="a", metadata={"x": deep})
    assert not Message.objects.exists()


def test_size_is_limited_by_a_setting(channel, user, settings):
    settings.CHATCORE_MAX_METADATA_BYTES = 100
    fits = {"note": "x" * 80}
    services.message_append(channel=channel, user=user, role="user", content="a", metadata=fits)
    with pytest.raises(ValidationError) as refused:
        services.message_append(channel=channel, user=user, role="user", content="b", metadata={"note": "é" * 60})
    assert refused.value.message_dict == {"metadata": ["Metadata is 131 bytes of JSON; at most 100 are accepted."]}
    assert Message.objects.filter(channel=channel).count() == 1


def test_the_bulk_importer_checks_every_item(channel, user):
    items = [
        NewMessage("user", "Run it."),
        NewMessage("assistant", "", parent=0, metadata={"tool_calls": [{"function": "x"}]}),
    ]
    with pytest.raises(ValidationError) as refused:
        messages_bulk_import(channel=channel, user=user, items=items)
    assert refused.value.message_dict["metadata"][0].startswith("Item 1: tool_calls[0] needs an id that is a string")
    assert not Message.objects.exists()
