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
from collections.abc import Callable, Iterable, Iterator

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from chatcore import services as chatcore_services
from chatcore.bulk import NewMessage, messages_bulk_import
from chatcore.chain import chain_hash, chain_seed
from chatcore.errors import error_text
from chatcore.metadata.validation import metadata_validate
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


@dataclasses.dataclass(frozen=True)
class ExportItem:
    """One top-level value of an export file, parsed: an item of its top-level list (or a line of JSON
    Lines) at `index`, or, when `whole`, the one object the file is. `size`: its bytes of JSON text."""

    value: object
    index: int = 0
    whole: bool = False
    size: int = 0


def export_items_of(data: object) -> list[ExportItem]:
    """The items of an export already parsed in memory, as the file reader would give them."""
    if isinstance(data, list):
        return [ExportItem(value, index) for index, value in enumerate(data)]
    return [ExportItem(data, whole=True)]


def conversations_of(
    items: Iterable[ExportItem],
    *,
    conversation: Callable[[object, int], ImportedConversation],
    unwrap: Callable[[object], list],
) -> Iterator[ImportedConversation]:
    """Each item as a conversation (`conversation(value, index)`); a file that is one object is first
    `unwrap`ped into the conversations it holds (ValidationError when it is not an export of the format)."""
    for item in items:
        if item.whole:
            for index, value in enumerate(unwrap(item.value)):
                yield conversation(value, index)
        else:
            yield conversation(item.value, item.index)


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


@dataclasses.dataclass
class PreparedConversation:
    """A conversation checked and in the bulk importer's form, ready for one short write: everything that
    costs time (ordering, checks, and with an owner, token counts and chain hashes) is done before the
    transaction opens."""

    title: str
    label: str
    items: list[NewMessage]
    current: int  # the item the owner's cursor goes to
    exact: bool  # the export named its cursor (else the latest leaf under that item)


def _checked_metadata(conversation: ImportedConversation, message: ImportedMessage, source: str) -> dict:
    metadata = {**message.metadata, "source": source, "source_id": message.key}
    try:
        return metadata_validate(role=message.role, metadata=metadata)
    except ValidationError as error:
        raise invalid(conversation.label, f"message {message.key!r}: {error_text(error)}") from None


def conversation_prepare(
    *, conversation: ImportedConversation, source: str, owner_id: int | None = None
) -> PreparedConversation:
    """The conversation's messages parents first, each checked as a write would check it; ValidationError
    naming the conversation otherwise. With `owner_id`, each message's size and chain hash too (what the
    write would otherwise work out inside its transaction)."""
    ordered = _ordered(conversation)
    if not ordered:
        raise invalid(conversation.label, "the conversation has no messages")
    index = {message.key: position for position, message in enumerate(ordered)}
    if conversation.current is not None and conversation.current not in index:
        raise invalid(conversation.label, f"the current message {conversation.current!r} is not in the file")
    items = []
    for message in ordered:
        if message.role not in Message.Role.values:
            raise invalid(conversation.label, f"message {message.key!r} has the role {message.role!r}")
        metadata = _checked_metadata(conversation, message, source)
        parent = index[message.parent] if message.parent is not None else None
        items.append(NewMessage(message.role, message.content, parent, metadata, created_at=message.created_at))
    if owner_id is not None:
        _sized(items, owner_id=owner_id)
    # The export's cursor exactly; without one, the latest leaf under its last message.
    current = index[conversation.current or conversation.messages[-1].key]
    title = conversation.title or "Imported conversation"
    return PreparedConversation(title, conversation.label, items, current, conversation.current is not None)


def _sized(items: list[NewMessage], *, owner_id: int) -> None:
    seed = chain_seed(owner_id)
    for item in items:
        item.tokens, item.chars = chatcore_services.message_size(content=item.content, metadata=item.metadata)
        parent_hash = items[item.parent].chain_hash if item.parent is not None else seed
        item.chain_hash = chain_hash(
            parent_hash=parent_hash, role=item.role, content=item.content, metadata=item.metadata
        )


@transaction.atomic
def conversation_write(*, owner: User, prepared: PreparedConversation) -> Channel:
    """One conversation as a channel of `owner`, in one transaction: it appears whole or not at all."""
    channel = chatcore_services.channel_create(owner=owner, title=prepared.title)
    built = messages_bulk_import(channel=channel, user=owner, items=prepared.items, move_cursor=False)
    chatcore_services.cursor_move(
        channel=channel, user=owner, message_id=built[prepared.current].pk, exact=prepared.exact
    )
    channel.refresh_from_db()
    return channel


@transaction.atomic
def conversations_write(*, owner: User, conversations: Iterable[ImportedConversation], source: str) -> list[Channel]:
    """Every conversation as a channel of `owner`, all or none: every one is checked before the first is
    written. For exports already in memory (the benchmarks, the fidelity run, tests); uploads and files go
    through `compaction.imports.jobs`, a conversation per transaction."""
    prepared = [conversation_prepare(conversation=c, source=source, owner_id=owner.pk) for c in conversations]
    if not prepared:
        raise ValidationError("The file holds no conversation.")
    channels = [conversation_write(owner=owner, prepared=p) for p in prepared]
    chatcore_services.audit_record(
        actor=owner,
        action="conversation.import",
        resource=f"user:{owner.pk}",
        details={"format": source, "channels": [c.pk for c in channels]},
    )
    return channels
