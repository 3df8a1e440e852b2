"""Issue 11 item 6: message metadata is checked on every write (shape of tool calls, depth, size,
plain JSON), and whatever an older row holds is read safely (chatcore.metadata)."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from chatcore import services
from chatcore.bulk import NewMessage, messages_bulk_import
from chatcore.metadata import (
    MAX_DEPTH,
    JSONTooDeep,
    json_depth_exceeds,
    json_loads_bounded,
    json_lone_surrogate,
    metadata_display,
    metadata_repaired,
    stored_tool_calls,
)
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
    response = api.post(reverse("api-messages", args=[channel.pk]), body, format="json")
    assert response.status_code == 400
    payload = response.json()
    assert set(payload) == {"detail", "code", "errors"} and payload["code"] == "invalid"
    [message] = payload["errors"]["metadata"]
    assert message.startswith(problem) and message.endswith(f"each tool call is {SHAPE}.")
    assert payload == {"detail": f"metadata: {message}", "code": "invalid", "errors": {"metadata": [message]}}
    assert not Message.objects.filter(channel=channel).exists()


def test_the_reported_call_is_refused_with_the_whole_body(channel, api):
    body = {"role": "assistant", "content": "x", "metadata": {"tool_calls": [{"function": "x"}]}}
    response = api.post(reverse("api-messages", args=[channel.pk]), body, format="json")
    message = f"tool_calls[0] needs an id that is a string: each tool call is {SHAPE}."
    assert (response.status_code, response.json()) == (
        400,
        {"detail": f"metadata: {message}", "code": "invalid", "errors": {"metadata": [message]}},
    )
    assert Message.objects.count() == 0


def test_well_formed_tool_calls_and_results_are_stored_as_sent(channel, api):
    url = reverse("api-messages", args=[channel.pk])
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
        reverse("api-messages", args=[channel.pk]),
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


@pytest.mark.parametrize(
    ("text", "limit", "deeper"),
    [
        ("[" * 5_000 + "]" * 5_000, 64, True),
        ('{"a": [[{"b": 1}]]}', 4, False),
        ('{"a": [[{"b": 1}]]}', 3, True),
        ('{"text": "[[[[[[[[[[ \\" {{{{{{{{{{"}', 2, False),  # brackets inside strings, an escaped quote
        ('[{"a": "]"}, [[]], {"b": {"c": {}}}]', 4, False),
        ('[{"a": "]"}, [[]], {"b": {"c": {}}}]', 3, True),
        ("[[}}", 5, False),  # not JSON: left to the parser to say so
        ('["\\\\", [[[]]]]', 3, True),  # an escaped backslash does not escape the quote after it
        ('["\\\\", [[[]]]]', 4, False),
        ('[{"a": ""}, "", {"b": "{"}]', 1, True),
        ("", 1, False),
    ],
)
def test_depth_of_json_text_is_read_without_parsing(text, limit, deeper):
    assert json_depth_exceeds(text, limit) is deeper


def test_bounded_loading_refuses_deep_text_and_reads_the_rest():
    with pytest.raises(JSONTooDeep, match="nested more than 64 levels deep"):
        json_loads_bounded("[" * 100_000 + "]" * 100_000)
    assert json_loads_bounded(b'{"a": [1, "[["]}') == {"a": [1, "[["]}
    assert json_loads_bounded("[[[]]]", max_depth=3) == [[[]]]


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
    listed = api.get(reverse("api-messages", args=[channel.pk]))
    assert listed.status_code == 200
    assert listed.json()["results"][-1]["metadata"] == {"tool_calls": [{"function": "x"}]}
    assert Message.objects.get(pk=row.pk).metadata == {"tool_calls": [{"function": "x"}]}


@pytest.mark.parametrize(
    "raw, path",
    [
        (b'{"messages": [{"content": "a"}, {"content": ["x", "\\ud800"]}]}', "messages[1].content[1]"),
        ('{"\\uDFFF": 1}', "\udfff"),
        ('"\\ud800"', ""),
        ('{"text": "\\ud83d\\ude80 launched"}', None),  # a whole pair is the character it encodes
        ('{"text": "\\\\ud800 as written"}', None),  # an escaped backslash, then letters
        ('{"text": "plain"}', None),
    ],
)
def test_a_lone_surrogate_is_found_where_json_escaped_it(raw, path):
    assert json_lone_surrogate(raw, json.loads(raw)) == path
