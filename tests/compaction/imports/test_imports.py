"""Imports of each format from fixtures written after the published export formats
(tests/compaction/imports/exports/): branches, cursor, tool calls, odd content, malformed files."""

import copy
import datetime as dt
import json
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from chatcore import selectors
from chatcore.context import context_assemble
from chatcore.models import AuditEntry, Channel, Cursor, Message
from compaction.imports import conversations_import
from compaction.imports.files import export_read

EXPORTS = Path(__file__).parent / "exports"


def load(name: str):
    return export_read((EXPORTS / name).read_bytes(), name)


def active_path(channel: Channel) -> list[Message]:
    cursor = Cursor.objects.get(channel=channel, user=channel.owner)
    return selectors.message_path(leaf_id=cursor.leaf_id)


def by_source(channel: Channel) -> dict[str, Message]:
    return {m.metadata["source_id"]: m for m in Message.objects.filter(channel=channel)}


def damaged(data, damage):
    """A deep copy of a loaded export with `damage` applied to it (the loaded one is left as it was)."""
    data = copy.deepcopy(data)
    damage(data)
    return data


def assert_refused(user, *, data, format: str, expected: str) -> None:
    """The import refuses `data` with exactly the one message `expected`, and writes nothing."""
    with pytest.raises(ValidationError) as caught:
        conversations_import(owner=user, data=data, format=format)
    assert caught.value.messages == [expected]
    assert_nothing_written(user)


def assert_nothing_written(user) -> None:
    assert not Channel.objects.filter(owner=user).exists()
    assert not Message.objects.exists()
    assert not AuditEntry.objects.filter(action="conversation.import").exists()


# --- ChatGPT --------------------------------------------------------------------------------------


def test_chatgpt_keeps_every_branch_and_puts_the_cursor_on_current_node(user):
    trip, poster = conversations_import(owner=user, data=load("chatgpt.json"), format="chatgpt")

    assert (trip.title, poster.title) == ("Trip to Lisbon", "Tram poster")
    nodes = by_source(trip)
    assert sorted(nodes) == sorted(
        ["ctx-1", "u-1", "a-1", "a-1b", "u-2", "u-2b", "call-1", "tool-1", "a-3", "u-4", "odd-5", "a-5"]
    )  # the empty root and the hidden blank system message are left out
    assert [m.metadata["source_id"] for m in active_path(trip)] == [
        "ctx-1", "u-1", "a-1b", "u-2b", "call-1", "tool-1", "a-3", "u-4", "odd-5", "a-5",
    ]  # fmt: skip
    assert nodes["a-1"].parent == nodes["a-1b"].parent == nodes["u-1"]  # a regeneration: siblings
    assert nodes["u-2"].parent == nodes["u-2b"].parent == nodes["a-1b"]  # an edit: siblings
    assert nodes["ctx-1"].role == "system" and nodes["ctx-1"].content == "I live in Porto.\n\nAnswer briefly."
    assert nodes["u-1"].created_at == dt.datetime(2025, 11, 30, 8, 0, 1, 250000, tzinfo=dt.UTC)
    assert nodes["a-1"].metadata["model"] == "gpt-4o"


def test_chatgpt_tool_calls_attachments_images_and_unknown_content(user):
    trip, poster = conversations_import(owner=user, data=load("chatgpt.json"), format="chatgpt")
    nodes = by_source(trip)

    call = nodes["call-1"]
    assert (call.role, call.content) == ("assistant", "")
    assert call.metadata["tool_calls"] == [
        {
            "id": "call-1",
            "type": "function",
            "function": {"name": "python", "arguments": "nights = 3\nprint(nights * 140)"},
        }
    ]
    tool = nodes["tool-1"]
    assert (tool.role, tool.content, tool.metadata["tool_call_id"], tool.metadata["name"]) == (
        "tool", "420", "call-1", "python",
    )  # fmt: skip
    assert nodes["u-1"].content == "Plan a three-day trip to Lisbon for me.\n[attachment: itinerary-draft.pdf]"
    assert nodes["u-1"].metadata["attachments"] == [
        {"name": "itinerary-draft.pdf", "mime_type": "application/pdf", "size": 48211}
    ]
    assert nodes["u-4"].content == (
        "[image: file-service://file-Tram28, 1024x768]\nIs this tram the 28?\n"
        "[content of unsupported type 'sonic_hologram', kept as it was: {\"frequency_hz\": 440}]"
    )
    assert nodes["odd-5"].content == (
        '[content of unsupported type \'quantum_widget\', kept as it was: {"state": "superposed", "qubits": 3}]'
    )
    posters = by_source(poster)
    assert posters["p-2"].metadata["tool_calls"][0]["function"]["name"] == "dalle.text2im"
    assert posters["p-3"].metadata["tool_call_id"] == "p-2"
    assert posters["p-3"].content == "[image: file-service://file-Poster, 1024x1024]"
    assert posters["p-4"].content == "Tram 28 history https://example.org/tram-28:\nRunning since 1914."
    sent = context_assemble(channel=trip, user=user).messages
    assert sent[4] == {"role": "assistant", "content": "", "tool_calls": call.metadata["tool_calls"]}
    assert sent[5] == {"role": "tool", "content": "420", "tool_call_id": "call-1"}


@pytest.mark.parametrize(
    "damage, expected",
    [
        (
            lambda data: data[1]["mapping"]["p-3"].update(parent="gone"),
            "conversations[1] (\"Tram poster\"), mapping node 'p-3': its parent 'gone' is not in the mapping",
        ),
        (
            lambda data: data[0]["mapping"]["a-3"]["message"].pop("author"),
            "conversations[0] (\"Trip to Lisbon\"), mapping node 'a-3': the message has no author",
        ),
        (
            lambda data: data[0].update(current_node="nowhere"),
            "conversations[0] (\"Trip to Lisbon\"): current_node 'nowhere' is not in the mapping",
        ),
        (
            lambda data: data[1].pop("mapping"),
            "conversations[1] (\"Tram poster\"): not a ChatGPT conversation: it has no 'mapping' object",
        ),
        (
            lambda data: data[0]["mapping"]["u-1"]["message"].update(create_time="yesterday"),
            "conversations[0] (\"Trip to Lisbon\"), mapping node 'u-1': the timestamp 'yesterday' is not a date",
        ),
    ],
)
def test_a_malformed_chatgpt_export_names_the_entry_and_writes_nothing(user, damage, expected):
    assert_refused(user, data=damaged(load("chatgpt.json"), damage), format="chatgpt", expected=expected)


# --- Claude ---------------------------------------------------------------------------------------


def test_claude_branches_tool_use_thinking_attachments_and_cursor(user):
    garden, quick = conversations_import(owner=user, data=load("claude.json"), format="claude")

    nodes = by_source(garden)
    assert [(m.metadata["source_id"], m.role) for m in active_path(garden)] == [
        ("m-1", "user"), ("m-2", "assistant"), ("m-2#1", "tool"), ("m-2#2", "assistant"),
        ("m-5", "user"), ("m-6", "assistant"),
    ]  # fmt: skip
    assert nodes["m-3"].parent == nodes["m-5"].parent == nodes["m-2#2"]  # two questions after one answer
    assert nodes["m-1"].content == (
        "How much water does a 20 m2 vegetable bed need per week?\n\n"
        "[attachment: bed-layout.txt]\n\n[attachment: photo-of-bed.jpg]"
    )
    assert nodes["m-1"].metadata["attachments"] == [
        {"file_name": "bed-layout.txt", "file_type": "text/plain", "file_size": 312,
         "extracted_content": "Bed A: tomatoes\nBed B: beans"},
        {"file_name": "photo-of-bed.jpg"},
    ]  # fmt: skip
    assert nodes["m-2"].content == "Let me check today's rainfall first."
    assert nodes["m-2"].metadata["tool_calls"] == [
        {"id": "toolu_01A", "type": "function",
         "function": {"name": "web_search", "arguments": '{"query": "rainfall Porto this week"}'}}
    ]  # fmt: skip
    assert (nodes["m-2#1"].content, nodes["m-2#1"].metadata["tool_call_id"]) == (
        "12 mm of rain expected this week.", "toolu_01A",
    )  # fmt: skip
    assert nodes["m-2#2"].metadata["thinking"] == ["25 mm per week is the usual rule; 20 m2 x 25 mm = 500 l."]
    assert "thinking" not in nodes["m-2#2"].content and "usual rule" not in nodes["m-2"].content
    assert nodes["m-6"].content == (
        "A sprinkler loses some to evaporation: plan 20% more.\n\n"
        "[content of unsupported type 'voice_note', kept as it was: "
        '{"duration_s": 4.2, "transcript": "twenty percent more"}]'
    )
    assert nodes["m-1"].created_at == dt.datetime(2026, 11, 2, 9, 15, tzinfo=dt.UTC)
    assert [(m.role, m.content) for m in active_path(quick)] == [("user", "What is 7 x 6?"), ("assistant", "42.")]


@pytest.mark.parametrize(
    "damage, expected",
    [
        (
            lambda data: data[0]["chat_messages"][3].update(parent_message_uuid="m-99"),
            'conversations[0] ("Garden irrigation"), chat_messages[3]: '
            "its parent_message_uuid 'm-99' is not in the conversation",
        ),
        (
            lambda data: data[1]["chat_messages"][1].update(sender="robot"),
            'conversations[1] ("Quick question"), chat_messages[1]: '
            "the sender 'robot' is neither human nor assistant",
        ),
        (
            lambda data: data[0]["chat_messages"][0]["attachments"][0].pop("file_name"),
            "conversations[0] (\"Garden irrigation\"), chat_messages[0]: an entry of 'attachments' has no file_name",
        ),
    ],
)
def test_a_malformed_claude_export_names_the_entry_and_writes_nothing(user, damage, expected):
    assert_refused(user, data=damaged(load("claude.json"), damage), format="claude", expected=expected)


# --- Open WebUI -----------------------------------------------------------------------------------


def test_openwebui_keeps_the_history_tree_files_and_current_id(user):
    (chat,) = conversations_import(owner=user, data=load("openwebui.json"), format="openwebui")

    nodes = by_source(chat)
    assert chat.title == "Sourdough starter" and len(nodes) == 7
    assert [m.metadata["source_id"] for m in active_path(chat)] == ["s-1", "s-2", "s-3b", "s-4b"]
    assert nodes["s-3"].parent == nodes["s-3b"].parent == nodes["s-2"]
    assert nodes["s-4b"].parent == nodes["s-4c"].parent == nodes["s-3b"]
    first = nodes["s-1"]
    assert first.content == "My starter smells like acetone. What now?\n[image: jar.png]\n[attachment: feeding-log.csv]"
    assert [a["name"] for a in first.metadata["attachments"]] == ["jar.png", "feeding-log.csv"]
    assert first.metadata["content_parts"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="},
    }
    assert first.created_at == dt.datetime.fromtimestamp(1762164000, tz=dt.UTC)
    assert nodes["s-4c"].created_at == dt.datetime.fromtimestamp(1762164220.123, tz=dt.UTC)  # milliseconds
    assert nodes["s-4c"].content.startswith('<details type="tool_calls"') and nodes["s-4c"].metadata["model"] == (
        "qwen2.5:7b"
    )
    assert context_assemble(channel=chat, user=user).messages[0]["content"][1]["type"] == "image_url"


def test_a_malformed_openwebui_export_names_the_entry_and_writes_nothing(user):
    data = damaged(load("openwebui.json"), lambda d: d[0]["chat"]["history"]["messages"]["s-4"].update(role="oracle"))
    expected = (
        "chats[0] (\"Sourdough starter\"), history.messages['s-4']: the role 'oracle' is not one of "
        "assistant, system, tool, user"
    )
    assert_refused(user, data=data, format="openwebui", expected=expected)


# --- OpenAI messages ------------------------------------------------------------------------------


def test_openai_messages_json_lines_hold_one_conversation_each(user):
    conversion, breed = conversations_import(owner=user, data=load("openai_messages.jsonl"), format="openai-messages")

    assert (conversion.title, breed.title) == (
        "Unit conversion",
        "What breed is this? [image] [file: pedigree.pdf] [audio]",
    )
    path = active_path(conversion)
    assert [m.role for m in path] == ["system", "user", "assistant", "tool", "assistant"]
    assert path[2].metadata["tool_calls"][0]["function"]["name"] == "convert"
    assert path[3].metadata["tool_call_id"] == "call_c1"
    question = active_path(breed)[1]
    assert question.content == "What breed is this?\n[image]\n[file: pedigree.pdf]\n[audio]"
    assert len(question.metadata["content_parts"]) == 4
    assert active_path(breed)[0].metadata["openai_role"] == "developer"


def test_a_malformed_messages_list_names_the_message_and_writes_nothing(user):
    data = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "tool", "content": "x"},
    ]
    expected = "The conversation: messages[2].tool_call_id: A tool message needs the tool_call_id it answers."
    assert_refused(user, data=data, format="openai-messages", expected=expected)


# --- files ----------------------------------------------------------------------------------------


def test_a_zip_archive_is_read_through_its_conversations_json(tmp_path):
    import zipfile

    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("chat.html", "<html></html>")
        zipped.writestr("conversations.json", (EXPORTS / "chatgpt.json").read_text())
    assert export_read(archive.read_bytes(), "export.zip") == load("chatgpt.json")


@pytest.mark.parametrize(
    "raw, expected",
    [
        (b"", "upload.json is empty."),
        (b"{not json", "upload.json is not valid JSON: Expecting property name enclosed in double quotes at "
         "byte 1."),
        (b'[{"a": 1}, {"b": ]', "upload.json is not valid JSON at [1]: Expecting value at byte 17."),
        (b'[{"a": 1} {"b": 2}]', "upload.json is not valid JSON: expected ',' or ']' after [0] at byte 10."),
        (b'[{"a": 1}] []', "upload.json is not valid JSON: extra data after the list at byte 11."),
        (b'[{"a": 1},', "upload.json is not valid JSON at [1]: the file ends at byte 10, where a value should be."),
        (b'\xef\xbb\xbf[{"a": 1}, x]', "upload.json is not valid JSON at [1]: Expecting value at byte 14."),
        (b'[{"a": "caf\xc3"}]', "upload.json is not UTF-8 text (byte 11)."),
        (b"\xff\xfe", "upload.json is not UTF-8 text (byte 0)."),
        (b'[{"role": "user", "content": "Hi \\ud800"}]', "upload.json holds a lone surrogate (U+D800 to U+DFFF) at "
         "[0].content, which is not text: it was escaped as half of a pair that the rest of the file does not "
         "complete."),
        (b'{"a": 1}\n{"b": "\\udc00"}', "upload.json holds a lone surrogate (U+D800 to U+DFFF) at [1].b, which is "
         "not text: it was escaped as half of a pair that the rest of the file does not complete."),
    ],
)  # fmt: skip
def test_an_unreadable_file_says_why(raw, expected):
    with pytest.raises(ValidationError) as caught:
        export_read(raw, "upload.json")
    assert caught.value.messages == [expected]


def test_the_import_is_audited(user):
    channels = conversations_import(owner=user, data=load("claude.json"), format="claude")
    entry = AuditEntry.objects.get(action="conversation.import")
    assert (entry.actor, entry.details) == (user, {"format": "claude", "channels": [c.pk for c in channels]})
    assert json.dumps(entry.details)
