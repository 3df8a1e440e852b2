"""The shape every importer produces, and the one writer that stores it.

An export (ChatGPT's, Claude's, Open WebUI's, a plain OpenAI message list,
LoCoMo) is parsed into `ImportedConversation`s: nodes that name their parent
by the export's own key, and the node the reader was on. The writer orders
the nodes parents first, stores each conversation as a channel with the bulk
importer (running totals, chain hashes and roots exactly as appending one by
one would store them), and puts the owner's cursor on that node. Every
conversation of a file goes in one transaction: a malformed entry anywhere
writes nothing, and the error names the entry.
"""

import dataclasses
import datetime as dt
import json
from collections.abc import Iterable

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from chatcore import services as chatcore_services
from chatcore.bulk import NewMessage, messages_bulk_import
from chatcore.models import Channel, Message


@dataclasses.dataclass
class ImportedMessage:
    key: str
    parent: str | None
    role: str
    content: str
    metadata: dict = dataclasses.field(default_factory=dict)
    created_at: dt.datetime | None = None


@dataclasses.dataclass
class ImportedConversation:
    title: str
    messages: list[ImportedMessage]
    current: str | None = None  # the export's cursor; without one, the latest leaf under the last message
    label: str = ""  # how errors name the conversation, e.g. 'conversations[3] ("Trip")'


def obj(value: object) -> dict:
    """`value` when it is a JSON object, else an empty one: optional parts of an export are read through it."""
    return value if isinstance(value, dict) else {}


def text_of(value: object) -> str:
    return value if isinstance(value, str) else ""


def invalid(where: str, problem: str) -> ValidationError:
    return ValidationError(f"{where}: {problem}")


def unknown_content(kind: str, value: object) -> str:
    """An unknown content type kept as text, with a note saying so: never dropped silently."""
    body = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return f"[content of unsupported type '{kind}', kept as it was: {body}]"


def timestamp(value: object, where: str) -> dt.datetime | None:
    """Epoch seconds (or milliseconds), or an ISO 8601 string, as an aware datetime; None when absent."""
    if value in (None, ""):
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, int | float):
            seconds = value / 1000 if value > 10**11 else value
            return dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
        parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        raise invalid(where, f"the timestamp {value!r} is not a date") from None


def _ordered(conversation: ImportedConversation) -> list[ImportedMessage]:
    """Parents before children (an export may list them in any order); unknown parents and cycles refused."""
    by_key: dict[str, ImportedMessage] = {}
    for message in conversation.messages:
        if message.key in by_key:
            raise invalid(conversation.label, f"the message id {message.key!r} appears twice")
        by_key[message.key] = message
    ordered: list[ImportedMessage] = []
    placed: set[str] = set()
    for message in conversation.messages:
        chain: list[ImportedMessage] = []
        seen: set[str] = set()
        node: ImportedMessage | None = message
        while node is not None and node.key not in placed:
            if node.key in seen:
                raise invalid(conversation.label, f"the messages around {node.key!r} are their own ancestors")
            chain.append(node)
            seen.add(node.key)
            if node.parent is not None and node.parent not in by_key:
                raise invalid(
                    conversation.label,
                    f"message {node.key!r} names the parent {node.parent!r}, which is not in the file",
                )
            node = by_key[node.parent] if node.parent is not None else None
        for node in reversed(chain):
            ordered.append(node)
            placed.add(node.key)
    return ordered


def _write(*, owner: User, conversation: ImportedConversation, source: str) -> Channel:
    ordered = _ordered(conversation)
    if not ordered:
        raise invalid(conversation.label, "the conversation has no messages")
    if conversation.current is not None and conversation.current not in {m.key for m in ordered}:
        raise invalid(conversation.label, f"the current message {conversation.current!r} is not in the file")
    index = {message.key: position for position, message in enumerate(ordered)}
    items = []
    for message in ordered:
        if message.role not in Message.Role.values:
            raise invalid(conversation.label, f"message {message.key!r} has the role {message.role!r}")
        metadata = {**message.metadata, "source": source, "source_id": message.key}
        parent = index[message.parent] if message.parent is not None else None
        items.append(NewMessage(message.role, message.content, parent, metadata, created_at=message.created_at))
    channel = chatcore_services.channel_create(owner=owner, title=(conversation.title or "Imported conversation"))
    built = messages_bulk_import(channel=channel, user=owner, items=items, move_cursor=False)
    # The export's cursor exactly; without one, the latest leaf under its last message.
    current = conversation.current or conversation.messages[-1].key
    chatcore_services.cursor_move(
        channel=channel, user=owner, message_id=built[index[current]].pk, exact=conversation.current is not None
    )
    channel.refresh_from_db()
    return channel


@transaction.atomic
def conversations_write(*, owner: User, conversations: Iterable[ImportedConversation], source: str) -> list[Channel]:
    """Every conversation as a channel of `owner`, all or none."""
    channels = [_write(owner=owner, conversation=c, source=source) for c in conversations]
    if not channels:
        raise ValidationError("The file holds no conversation.")
    chatcore_services.audit_record(
        actor=owner,
        action="conversation.import",
        resource=f"user:{owner.pk}",
        details={"format": source, "channels": [c.pk for c in channels]},
    )
    return channels
