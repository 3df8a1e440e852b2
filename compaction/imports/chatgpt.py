"""ChatGPT's export (conversations.json): a list of conversations, each a
`mapping` of nodes ({id, message, parent, children}) with `current_node`.

Every node with a message becomes a message, so every edited or
regenerated branch is kept; the cursor goes to `current_node`. Nodes
without a message (the mapping's root) and empty hidden messages (the
blank system prompt ChatGPT puts first) are left out, their children
hanging from the nearest kept ancestor. An assistant message addressed to a
tool (`recipient` other than "all": python, browser, dalle.text2im...) is
stored as a tool call, and the tool's answer as its result. Content types:
text, multimodal text (images and audio as placeholders naming the asset),
code, execution output, browsing displays, quotes, errors, custom
instructions, thoughts; any other is kept as text with a note.
"""

from collections.abc import Iterable, Iterator

from compaction.imports.tree import (
    ExportItem,
    ImportedConversation,
    ImportedMessage,
    conversations_of,
    invalid,
    obj,
    timestamp,
    unknown_content,
)

ROLES = {"system", "user", "assistant", "tool"}


def _part(part: object) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return unknown_content(type(part).__name__, part)
    kind = part.get("content_type")
    if kind == "image_asset_pointer":
        size = f", {part['width']}x{part['height']}" if part.get("width") and part.get("height") else ""
        return f"[image: {part.get('asset_pointer', 'unnamed')}{size}]"
    if kind == "audio_transcription":
        return str(part.get("text") or "")
    if kind in ("audio_asset_pointer", "real_time_user_audio_video_asset_pointer"):
        nested = obj(part.get("audio_asset_pointer"))
        return f"[audio: {part.get('asset_pointer') or nested.get('asset_pointer') or 'unnamed'}]"
    return unknown_content(str(kind), {k: v for k, v in part.items() if k != "content_type"})


def _content(content: dict) -> str:
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        return "\n".join(text for text in (_part(p) for p in content.get("parts") or []) if text)
    if kind == "code":
        return str(content.get("text") or "")
    if kind == "execution_output":
        return str(content.get("text") or "")
    if kind == "tether_browsing_display":
        return "\n".join(str(content[k]) for k in ("summary", "result") if content.get(k))
    if kind == "tether_quote":
        head = " ".join(str(content[k]) for k in ("title", "url") if content.get(k))
        return f"{head}:\n{content.get('text') or ''}".strip(":\n")
    if kind == "system_error":
        return f"[error {content.get('name') or ''}] {content.get('text') or ''}".strip()
    if kind == "user_editable_context":
        return "\n\n".join(str(content[k]) for k in ("user_profile", "user_instructions") if content.get(k))
    if kind == "model_editable_context":
        return str(content.get("model_set_context") or "")
    if kind == "reasoning_recap":
        return f"[reasoning] {content.get('content') or ''}".strip()
    if kind == "thoughts":
        thoughts = content.get("thoughts") or []
        lines = [
            f"{t.get('summary') or ''}: {t.get('content') or ''}".strip(": ") for t in thoughts if isinstance(t, dict)
        ]
        return "[the model's reasoning]\n" + "\n".join(lines) if lines else ""
    return unknown_content(str(kind), {k: v for k, v in content.items() if k != "content_type"})


def _message(raw: object, where: str) -> ImportedMessage | None:
    """The node's message in our form; None for what ChatGPT keeps but never shows (blank, hidden)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("author"), dict):
        raise invalid(where, "the message has no author")
    if not isinstance(raw.get("content"), dict):
        raise invalid(where, "the message has no content object")
    role = raw["author"].get("role")
    if raw["content"].get("content_type") == "user_editable_context":
        role = "system"  # custom instructions: what ChatGPT told the model, not something the user said
    if role not in ROLES:
        raise invalid(where, f"the author's role {role!r} is not one of {', '.join(sorted(ROLES))}")
    text = _content(raw["content"])
    extra = obj(raw.get("metadata"))
    metadata: dict = {"content_type": raw["content"].get("content_type")}
    if extra.get("model_slug"):
        metadata["model"] = extra["model_slug"]
    if raw["author"].get("name"):
        metadata["name"] = raw["author"]["name"]
    attachments = [a for a in extra.get("attachments") or [] if isinstance(a, dict)]
    if attachments:
        metadata["attachments"] = [
            {k: a.get(k) for k in ("name", "mime_type", "size") if a.get(k)} for a in attachments
        ]
        text = "\n".join([text, *(f"[attachment: {a.get('name') or a.get('id') or 'unnamed'}]" for a in attachments)])
    recipient = raw.get("recipient") or "all"
    if role == "assistant" and recipient != "all":
        call = {
            "id": str(raw.get("id") or where),
            "type": "function",
            "function": {"name": recipient, "arguments": text},
        }
        return ImportedMessage(
            "", None, role, "", {**metadata, "tool_calls": [call]}, timestamp(raw.get("create_time"), where)
        )
    if not text.strip():
        return None
    return ImportedMessage("", None, role, text.strip("\n"), metadata, timestamp(raw.get("create_time"), where))


def _link_tools(messages: dict[str, ImportedMessage]) -> None:
    """A tool's answer follows the call that asked for it; one with no call before it is kept as text."""
    for message in messages.values():
        if message.role != "tool":
            continue
        parent = messages.get(message.parent) if message.parent else None
        while parent is not None and parent.role == "tool" and "tool_call_id" not in parent.metadata:
            parent = messages.get(parent.parent) if parent.parent else None
        call_id = None
        if parent is not None and parent.metadata.get("tool_calls"):
            call_id = parent.metadata["tool_calls"][0]["id"]
        elif parent is not None and parent.role == "tool":
            call_id = parent.metadata["tool_call_id"]
        if call_id is not None:
            message.metadata["tool_call_id"] = call_id
        else:
            name = message.metadata.get("name") or "a tool"
            message.role = "user"
            message.content = f"[output of {name}, with no call before it in the export]\n{message.content}"


def _conversation(item: object, index: int) -> ImportedConversation:
    title = str(item.get("title") or "") if isinstance(item, dict) else ""
    label = f'conversations[{index}] ("{title}")' if title else f"conversations[{index}]"
    if not isinstance(item, dict) or not isinstance(item.get("mapping"), dict):
        raise invalid(label, "not a ChatGPT conversation: it has no 'mapping' object")
    mapping: dict = item["mapping"]
    kept: dict[str, ImportedMessage] = {}
    for node_id, node in mapping.items():
        where = f"{label}, mapping node {node_id!r}"
        if not isinstance(node, dict):
            raise invalid(where, "the node is not an object")
        if node.get("parent") is not None and node["parent"] not in mapping:
            raise invalid(where, f"its parent {node['parent']!r} is not in the mapping")
        message = _message(node.get("message"), where)
        if message is not None:
            message.key = str(node_id)
            kept[message.key] = message

    def kept_ancestor(node_id: str | None) -> str | None:
        for _ in range(len(mapping) + 1):
            if node_id is None or node_id in kept:
                return node_id
            node_id = mapping[node_id].get("parent")
        raise invalid(label, f"the mapping's parents around {node_id!r} form a cycle")

    for key, message in kept.items():
        message.parent = kept_ancestor(mapping[key].get("parent"))
    current = item.get("current_node")
    if current is not None and current not in mapping:
        raise invalid(label, f"current_node {current!r} is not in the mapping")
    _link_tools(kept)
    created = timestamp(item.get("create_time"), label)
    for message in kept.values():
        message.created_at = message.created_at or created
    return ImportedConversation(title or "ChatGPT conversation", list(kept.values()), kept_ancestor(current), label)


def _unwrap(data: object) -> list:
    if isinstance(data, dict) and "mapping" in data:
        return [data]
    raise invalid("The file", "not a ChatGPT export: expected the list of conversations of conversations.json")


def chatgpt_conversations(items: Iterable[ExportItem]) -> Iterator[ImportedConversation]:
    return conversations_of(items, conversation=_conversation, unwrap=_unwrap)
