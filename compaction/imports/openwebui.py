"""Open WebUI's chat export ("Export chats": a list of {id, title, chat:
{title, models, history: {messages: {id: {...}}, currentId}, messages},
created_at, updated_at}).

`history.messages` is the tree (each message names its `parentId`; edits and
regenerations are siblings) and `currentId` the cursor. A message's
`content` is text; its `files` keep their names, and an image given as a
data URL goes to models as an image part again. `timestamp` is in seconds
(milliseconds are recognized). A single chat, or the bare `chat` object, is
accepted too.
"""

from collections.abc import Iterable, Iterator

from compaction.imports.tree import (
    ExportItem,
    ImportedConversation,
    ImportedMessage,
    conversations_of,
    invalid,
    obj,
    text_of,
    timestamp,
    unknown_content,
)

ROLES = {"system", "user", "assistant", "tool"}


def _files(raw: dict, where: str) -> tuple[list[dict], list[str], list[dict]]:
    """(names kept in metadata, notes for the text, image parts for the model)."""
    kept, notes, parts = [], [], []
    for item in raw.get("files") or []:
        if not isinstance(item, dict):
            raise invalid(where, "an entry of 'files' is not an object")
        inner = obj(item.get("file"))
        name = item.get("name") or inner.get("filename") or obj(inner.get("meta")).get("name")
        kind = item.get("type") or "file"
        url = text_of(item.get("url"))
        if kind == "image":
            notes.append(f"[image: {name}]" if name else "[image]")
            if url.startswith("data:image/"):
                parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            notes.append(f"[attachment: {name or 'unnamed'}]")
        kept.append({k: v for k, v in {"name": name, "type": kind, "url": url[:200] or None}.items() if v})
    return kept, notes, parts


def _message(key: str, raw: object, where: str) -> ImportedMessage:
    if not isinstance(raw, dict):
        raise invalid(where, "the message is not an object")
    role = raw.get("role")
    if role not in ROLES:
        raise invalid(where, f"the role {role!r} is not one of {', '.join(sorted(ROLES))}")
    content = raw.get("content")
    text = content if isinstance(content, str) else unknown_content(type(content).__name__, content)
    files, notes, parts = _files(raw, where)
    text = "\n".join(t for t in [text, *notes] if t)
    metadata: dict = {}
    if raw.get("model"):
        metadata["model"] = raw["model"]
    if files:
        metadata["attachments"] = files
    if parts:
        metadata["content_parts"] = [{"type": "text", "text": content or ""}, *parts]
    parent = raw.get("parentId")
    return ImportedMessage(
        key,
        str(parent) if parent else None,
        role,
        text or "[an empty message in the export]",
        metadata,
        timestamp(raw.get("timestamp"), where),
    )


def _conversation(item: object, index: int) -> ImportedConversation:
    chat = item.get("chat") if isinstance(item, dict) and isinstance(item.get("chat"), dict) else item
    title = str(
        (chat.get("title") if isinstance(chat, dict) else "")
        or (item.get("title") if isinstance(item, dict) else "")
        or ""
    )
    label = f'chats[{index}] ("{title}")' if title else f"chats[{index}]"
    history = chat.get("history") if isinstance(chat, dict) else None
    if not isinstance(history, dict) or not isinstance(history.get("messages"), dict):
        raise invalid(label, "not an Open WebUI chat: it has no 'history.messages' object")
    messages = [
        _message(str(key), raw, f"{label}, history.messages[{key!r}]") for key, raw in history["messages"].items()
    ]
    current = history.get("currentId")
    if current is not None and str(current) not in history["messages"]:
        raise invalid(label, f"currentId {current!r} is not among history.messages")
    return ImportedConversation(title or "Open WebUI chat", messages, str(current) if current else None, label)


def _unwrap(data: object) -> list:
    if isinstance(data, dict):
        return [data]
    raise invalid("The file", "not an Open WebUI export: expected a list of chats")


def openwebui_conversations(items: Iterable[ExportItem]) -> Iterator[ImportedConversation]:
    return conversations_of(items, conversation=_conversation, unwrap=_unwrap)
