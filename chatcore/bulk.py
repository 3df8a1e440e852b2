"""Bulk import of a message tree: demo data, benchmarks, migrations from
other systems.

`message_append` takes a row lock and moves the cursor for every message,
which is right for a conversation and far too slow for loading a hundred
thousand messages. Here ids are reserved up front, so that each message's
depth and running totals can be computed in memory from its parent, and
the rows go in with `bulk_create`. The result is exactly what appending
one by one would store; the cursor and the pressure columns are then set
once, through the ordinary services.
"""

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import cast

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from chatcore import services
from chatcore.chain import chain_hash, chain_seed
from chatcore.metadata.validation import metadata_validate
from chatcore.models import Channel, Message

BATCH_SIZE = 2_000


@dataclasses.dataclass
class NewMessage:
    """One message to import. `parent` is the index of an earlier item in the
    same import, or None for a message under `under` (a root when `under` is
    None). `tokens` may be given to skip counting (benchmarks; `chars` with them,
    else the content's length), `chain_hash` when the caller computed it already
    (the /v1 gateway hashes what it receives; imports, before their transaction)."""

    role: str
    content: str
    parent: int | None = None
    metadata: dict = dataclasses.field(default_factory=dict)
    author: User | None = None
    created_at: datetime | None = None
    tokens: int | None = None
    chain_hash: str = ""
    chars: int | None = None


def _reserve_ids(count: int) -> list[int]:
    """Ids for `count` new messages, each greater than every existing one.

    PostgreSQL hands them out from the table's sequence (safe under
    concurrency). SQLite has one writer at a time; the caller's transaction
    (IMMEDIATE in this project's settings) holds the write lock, and
    inserting explicit ids moves its AUTOINCREMENT counter past them.
    """
    table = Message._meta.db_table
    if count == 0:
        return []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", [table, count]
            )
            return sorted(row[0] for row in cursor.fetchall())
        cursor.execute(f"SELECT MAX(id) FROM {table}")  # noqa: S608 (table name from the model)
        start = (cursor.fetchone()[0] or 0) + 1
        if connection.vendor == "sqlite":
            cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
            row = cursor.fetchone()
            start = max(start, (row[0] if row else 0) + 1)
        return list(range(start, start + count))


def _item_check(index: int, item: NewMessage) -> None:
    """ValidationError naming the item unless it can be stored (metadata as `message_append` checks it)."""
    if item.role not in Message.Role.values:
        raise ValidationError({"role": f"Item {index}: role must be one of: {', '.join(Message.Role.values)}."})
    if item.parent is not None and not 0 <= item.parent < index:
        raise ValidationError({"parent": f"Item {index}: the parent must be an earlier item."})
    try:
        metadata_validate(role=item.role, metadata=item.metadata)
    except ValidationError as error:
        raise ValidationError({"metadata": f"Item {index}: {error.message_dict['metadata'][0]}"}) from None


class _Segments:
    """Each new message's segment, worked out from the tree in memory as the database's trigger would
    (chatcore.search.schema): a parent's first child continues the parent's segment, any other message
    starts its own. Given here, it spares the trigger two lookups per row into a table that grows
    inside the import (what made a large import slow down as it went)."""

    def __init__(self, under: Message | None) -> None:
        self.under = under
        # The segment of `under` and whether it has children already: one query, when there is an `under`.
        self.under_segment: int | None = None
        self.under_has_children = False
        if under is not None:
            row = (
                Message.objects.filter(pk=under.pk)
                .annotate(has_children=Exists(Message.objects.filter(parent_id=OuterRef("pk"))))
                .values_list("segment", "has_children")
                .get()
            )
            self.under_segment, self.under_has_children = row
        self.by_index: list[int | None] = []
        self.parents_seen: set[int | None] = set()

    def of(self, message_id: int, parent: int | None) -> int | None:
        """The segment of the message `message_id` whose parent is item `parent` (None: under `under`)."""
        first_child = parent not in self.parents_seen
        self.parents_seen.add(parent)
        if parent is not None:
            segment = self.by_index[parent] if first_child else message_id
        elif self.under is None:
            segment = message_id  # a root
        elif first_child and not self.under_has_children:
            # None when `under` has no segment (written with the triggers off): the trigger then decides.
            segment = self.under_segment
        else:
            segment = message_id
        self.by_index.append(segment)
        return segment


@transaction.atomic
def messages_bulk_import(
    *,
    channel: Channel,
    user: User,
    items: Sequence[NewMessage],
    under: Message | None = None,
    move_cursor: bool = True,
) -> list[Message]:
    """Insert a tree of messages in a few statements; returns them in `items` order.

    With `move_cursor`, the user's cursor goes to the last item (and the
    channel's pressure follows, as after any cursor move).
    """
    if under is not None and under.channel_id != channel.pk:
        raise ValidationError({"under": "The message is not in this channel."})
    ids = _reserve_ids(len(items))
    now = timezone.now()
    built: list[Message] = []
    segments = _Segments(under)
    for index, item in enumerate(items):
        _item_check(index, item)
        parent = built[item.parent] if item.parent is not None else under
        if item.tokens is None:
            tokens, chars = services.message_size(content=item.content, metadata=item.metadata)
        else:
            tokens, chars = item.tokens, len(item.content) if item.chars is None else item.chars
        built.append(
            Message(
                id=ids[index],
                channel_id=channel.pk,
                parent_id=parent.pk if parent else None,
                role=item.role,
                content=item.content,
                metadata=item.metadata,
                author=item.author if item.author is not None else (user if item.role == Message.Role.USER else None),
                created_at=item.created_at or now,
                chain_hash=item.chain_hash
                or chain_hash(
                    parent_hash=parent.chain_hash if parent else chain_seed(channel.owner_id),
                    role=item.role,
                    content=item.content,
                    metadata=item.metadata,
                ),
                segment=segments.of(ids[index], item.parent),
                **services.message_tree_fields(parent=parent, tokens=tokens, chars=chars),
            )
        )
    for start in range(0, len(built), BATCH_SIZE):
        Message.objects.bulk_create(built[start : start + BATCH_SIZE])
    Channel.objects.filter(pk=channel.pk).update(last_activity_at=now)
    if move_cursor and built:
        services.cursor_move(channel=channel, user=user, message_id=built[-1].pk)
    return built


class TreeBuilder:
    """Collects NewMessage items; `add` goes under the last added item unless
    told otherwise, which is how a conversation grows."""

    ACTIVE = object()

    def __init__(self) -> None:
        self.items: list[NewMessage] = []
        self.leaf: int | None = None

    def add(
        self,
        role: str,
        content: str,
        *,
        parent: "int | None | object" = ACTIVE,
        metadata: dict | None = None,
        created_at: datetime | None = None,
        tokens: int | None = None,
    ) -> int:
        parent_index = self.leaf if parent is TreeBuilder.ACTIVE else cast("int | None", parent)
        self.items.append(
            NewMessage(
                role=role,
                content=content,
                parent=parent_index,
                metadata=metadata or {},
                created_at=created_at,
                tokens=tokens,
            )
        )
        self.leaf = len(self.items) - 1
        return self.leaf

    def goto(self, index: int | None) -> None:
        self.leaf = index
