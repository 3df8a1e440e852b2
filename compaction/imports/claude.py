"""Claude's export (conversations.json): a list of conversations
({uuid, name, created_at, chat_messages: [...]}).

Each chat message ({uuid, sender: human|assistant, text, content blocks,
attachments, files, created_at}) becomes one or more messages: text blocks
are the turn's text; an assistant's `tool_use` blocks become a tool call
(with the text before them) and each `tool_result` a tool message, so a
turn in which Claude searched the web reads as call → result → answer.
`thinking` blocks are kept in the message's metadata; images and other
block types as text with a note. Attachments and files keep their names
(and an attachment's extracted text in metadata).

Messages are in order, each under the previous; where they name a
`parent_message_uuid` (exports of branched conversations) they hang from
it instead, and `current_leaf_message_uuid` is the cursor.
"""

import json
from collections.abc import Iterable, Iterator

from compaction.imports.tree import (
    ExportItem,
    ImportedConversation,
    ImportedMessage,
    conversations_of,
    invalid,
    timestamp,
    unknown_content,
)

SENDERS = {"human": "user", "user": "user", "assistant": "assistant"}
ROOT_UUID = "00000000-0000-4000-8000-000000000000"  # the parent Claude names for a conversation's first message


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text") or "") if isinstance(block, dict) and block.get("type") == "text" else _block(block)
            for block in content
        )
    return unknown_content(type(content).__name__, content)


def _block(block: object) -> str:
    if not isinstance(block, dict):
        return unknown_content(type(block).__name__, block)
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind == "image":
        return "[image]"
    return unknown_content(str(kind), {k: v for k, v in block.items() if k != "type"})


def _files(raw: dict, where: str) -> tuple[list[dict], list[str]]:
    kept, notes = [], []
    for key in ("attachments", "files"):
        for item in raw.get(key) or []:
            if not isinstance(item, dict) or not item.get("file_name"):
                raise invalid(where, f"an entry of '{key}' has no file_name")
            entry = {k: item[k] for k in ("file_name", "file_type", "file_size", "extracted_content") if item.get(k)}
            kept.append(entry)
            notes.append(f"[attachment: {item['file_name']}]")
    return kept, notes


def _tool_message(block: dict, unpaired: list[str], when) -> ImportedMessage:
    """A tool_result: paired with its tool_use by id, or with the oldest unanswered call; kept as text when
    no call precedes it."""
    call_id = str(block.get("tool_use_id") or (unpaired[0] if unpaired else ""))
    text = _result_text(block.get("content"))
    if call_id not in unpaired:
        name = block.get("name") or "a tool"
        return ImportedMessage("", None, "user", f"[output of {name}, with no call before it in the export]\n{text}")
    unpaired.remove(call_id)
    metadata: dict = {"tool_call_id": call_id, "name": str(block.get("name") or "tool")}
    if block.get("is_error"):
        metadata["is_error"] = True
    return ImportedMessage("", None, "tool", text, metadata, when)


def _turn(raw: object, where: str, unpaired: list[str]) -> list[ImportedMessage]:
    """One chat message as our messages, first to last (keys and parents are set by the caller)."""
    if not isinstance(raw, dict) or not raw.get("uuid"):
        raise invalid(where, "the message has no uuid")
    role = SENDERS.get(str(raw.get("sender")))
    if role is None:
        raise invalid(where, f"the sender {raw.get('sender')!r} is neither human nor assistant")
    when = timestamp(raw.get("created_at"), where)
    blocks = raw.get("content")
    if not isinstance(blocks, list) or not blocks:
        blocks = [{"type": "text", "text": raw.get("text") or ""}]
    attachments, notes = _files(raw, where)
    out: list[ImportedMessage] = []
    texts: list[str] = []
    calls: list[dict] = []
    thinking: list[str] = []

    def flush() -> None:
        if texts or calls:
            metadata = {"tool_calls": list(calls)} if calls else {}
            out.append(ImportedMessage("", None, role, "\n\n".join(t for t in texts if t).strip(), metadata, when))
            unpaired.extend(call["id"] for call in calls)
        texts.clear()
        calls.clear()

    for position, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "thinking":
            thinking.append(str(block.get("thinking") or ""))
        elif kind == "tool_use":
            function = {"name": str(block.get("name") or "tool"), "arguments": json.dumps(block.get("input") or {})}
            calls.append(
                {"id": str(block.get("id") or f"{raw['uuid']}-{position}"), "type": "function", "function": function}
            )
        elif kind == "tool_result":
            flush()
            out.append(_tool_message(block, unpaired, when))
        else:
            if calls:
                flush()
            texts.append(_block(block))
    texts.extend(notes)
    flush()
    if not out or not any(m.content.strip() or m.metadata.get("tool_calls") for m in out):
        out = [ImportedMessage("", None, role, "[an empty message in the export]", {}, when)]
    if attachments:
        out[0].metadata["attachments"] = attachments
    if thinking:
        out[-1].metadata["thinking"] = thinking
    for message in out:
        message.created_at = when
    return out


def _conversation(item: object, index: int) -> ImportedConversation:
    title = str(item.get("name") or "") if isinstance(item, dict) else ""
    label = f'conversations[{index}] ("{title}")' if title else f"conversations[{index}]"
    if not isinstance(item, dict) or not isinstance(item.get("chat_messages"), list):
        raise invalid(label, "not a Claude conversation: it has no 'chat_messages' list")
    uuids = {m.get("uuid") for m in item["chat_messages"] if isinstance(m, dict)}
    tree = any(isinstance(m, dict) and m.get("parent_message_uuid") for m in item["chat_messages"])
    messages: list[ImportedMessage] = []
    last_of: dict[str, str | None] = {}  # a chat message's uuid → the key of its last stored message
    unpaired: list[str] = []
    previous: str | None = None
    for position, raw in enumerate(item["chat_messages"]):
        where = f"{label}, chat_messages[{position}]"
        pieces = _turn(raw, where, unpaired)
        if tree:
            parent_uuid = raw.get("parent_message_uuid")
            if parent_uuid not in (None, "", ROOT_UUID) and parent_uuid not in uuids:
                raise invalid(where, f"its parent_message_uuid {parent_uuid!r} is not in the conversation")
            if parent_uuid not in (None, "", ROOT_UUID) and parent_uuid not in last_of:
                raise invalid(where, f"it comes before its parent {parent_uuid!r}")
            parent = last_of.get(parent_uuid) if parent_uuid not in (None, "", ROOT_UUID) else None
        else:
            parent = previous
        for offset, piece in enumerate(pieces):
            piece.key = f"{raw['uuid']}#{offset}" if offset else str(raw["uuid"])
            piece.parent = parent
            parent = piece.key
            messages.append(piece)
        last_of[str(raw["uuid"])] = previous = parent
    current = item.get("current_leaf_message_uuid")
    if current is not None and current not in last_of:
        raise invalid(label, f"current_leaf_message_uuid {current!r} is not among its messages")
    return ImportedConversation(
        title or "Claude conversation", messages, last_of.get(current) if current else None, label
    )


def _unwrap(data: object) -> list:
    if isinstance(data, dict) and "chat_messages" in data:
        return [data]
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        return data["conversations"]
    raise invalid("The file", "not a Claude export: expected the list of conversations of conversations.json")


def claude_conversations(items: Iterable[ExportItem]) -> Iterator[ImportedConversation]:
    return conversations_of(items, conversation=_conversation, unwrap=_unwrap)
