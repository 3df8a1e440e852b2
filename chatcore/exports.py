"""A channel in the formats other tools read: a plain OpenAI `messages` list
(the active path, ready to resend to any Chat Completions endpoint, ours
included) and ChatGPT's conversations.json (the whole tree as a `mapping`
with `current_node`, or only the active path).

`message_as_openai` is also how the /v1 gateway and the importers see a
stored message, so an export in `openai-messages` imports back to the same
path and a client resending it lands on the same chain hashes.
"""

import datetime as dt

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from chatcore import selectors
from chatcore.context import PURGED_NOTE
from chatcore.metadata.stored import stored_metadata, stored_tool_call_id, stored_tool_calls
from chatcore.models import Channel, Message

FORMATS = ("openai-messages", "chatgpt")
SCOPES = ("active", "tree")
ROOT_NODE = "client-created-root"


def message_as_openai(message: Message) -> dict:
    """A stored message as an OpenAI client sends it (tool fields in the protocol's shape, whatever is stored)."""
    metadata = stored_metadata(message.metadata)
    if message.purged_at is not None:
        return {"role": message.role if message.role != Message.Role.TOOL else "user", "content": PURGED_NOTE}
    item: dict = {"role": metadata.get("openai_role") or message.role, "content": message.content}
    if metadata.get("content_parts"):
        item["content"] = metadata["content_parts"]
    if message.role == Message.Role.ASSISTANT and metadata.get("tool_calls"):
        item["tool_calls"] = stored_tool_calls(metadata)
        item["content"] = message.content or None
    if message.role == Message.Role.TOOL and metadata.get("tool_call_id"):
        item["tool_call_id"] = stored_tool_call_id(metadata)
    if metadata.get("name") and message.role in (Message.Role.USER, Message.Role.ASSISTANT, Message.Role.SYSTEM):
        item["name"] = metadata["name"]
    return item


def _epoch(value: dt.datetime | None) -> float | None:
    return round(value.timestamp(), 6) if value is not None else None


def _chatgpt_node(message: Message) -> dict:
    metadata = stored_metadata(message.metadata)
    calls = stored_tool_calls(metadata) if message.role == Message.Role.ASSISTANT else []
    recipient, content = "all", {"content_type": "text", "parts": [message.content]}
    if calls:  # ChatGPT addresses one tool per message: the first call; the others' arguments follow
        recipient = calls[0]["function"]["name"] or "tool"
        arguments = [c["function"]["arguments"] for c in calls]
        content = {"content_type": "code", "language": "json", "text": "\n".join(arguments)}
    if message.purged_at is not None:
        content = {"content_type": "text", "parts": [PURGED_NOTE]}
    extra = {key: metadata[key] for key in ("model", "attachments") if metadata.get(key)}
    if "model" in extra:
        extra["model_slug"] = extra.pop("model")
    return {
        "id": f"msg-{message.pk}",
        "author": {"role": message.role, "name": metadata.get("name"), "metadata": {}},
        "create_time": _epoch(message.created_at),
        "update_time": None,
        "content": content,
        "status": "interrupted" if metadata.get("interrupted") else "finished_successfully",
        "end_turn": True if message.role == Message.Role.ASSISTANT and not calls else None,
        "weight": 1.0,
        "metadata": extra,
        "recipient": recipient,
    }


def _chatgpt(*, channel: Channel, messages: list[Message], leaf: Message | None) -> list[dict]:
    mapping: dict[str, dict] = {ROOT_NODE: {"id": ROOT_NODE, "message": None, "parent": None, "children": []}}
    for message in messages:
        parent = f"msg-{message.parent_id}" if message.parent_id else ROOT_NODE
        mapping[f"msg-{message.pk}"] = {"id": f"msg-{message.pk}", "message": _chatgpt_node(message)}
        mapping[f"msg-{message.pk}"] |= {"parent": parent, "children": []}
        mapping[parent]["children"].append(f"msg-{message.pk}")
    last = max((m.created_at for m in messages), default=channel.created_at)
    return [
        {
            "title": channel.title,
            "create_time": _epoch(channel.created_at),
            "update_time": _epoch(last),
            "mapping": mapping,
            "current_node": f"msg-{leaf.pk}" if leaf else ROOT_NODE,
            "conversation_id": f"channel-{channel.pk}",
            "id": f"channel-{channel.pk}",
            "default_model_slug": channel.model.name if channel.model else None,
        }
    ]


def channel_export_as(*, channel: Channel, user: User, format: str, scope: str | None = None) -> object:
    """The user's view of the channel (their cursor) in `format`; `scope` picks the active path or the whole
    tree (default: what the format holds best: a path for openai-messages, the tree for chatgpt)."""
    if format not in FORMATS:
        raise ValidationError({"format": f"Format must be one of: {', '.join(FORMATS)}."})
    scope = scope or ("active" if format == "openai-messages" else "tree")
    if scope not in SCOPES:
        raise ValidationError({"scope": f"Scope must be one of: {', '.join(SCOPES)}."})
    if format == "openai-messages" and scope == "tree":
        raise ValidationError(
            {"scope": "An OpenAI messages list holds one path; export the whole tree with format=chatgpt."}
        )
    cursor = selectors.cursor_get(channel=channel, user=user)
    leaf = cursor.leaf if cursor else None
    path = selectors.message_path(leaf_id=leaf.pk) if leaf else []
    if format == "openai-messages":
        return {
            "title": channel.title,
            "model": channel.model.name if channel.model else None,
            "messages": [message_as_openai(m) for m in path],
        }
    messages = path if scope == "active" else list(Message.objects.filter(channel=channel).order_by("depth", "id"))
    return _chatgpt(channel=channel, messages=messages, leaf=leaf)
