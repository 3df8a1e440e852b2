"""Bulk import of a message tree: demo data, benchmarks, migrations from
other systems.

`message_append` takes a row lock and moves the cursor for every message,
which is right for a conversation and far too slow for loading a hundred
thousand messages. Here ids are reserved up front, so that each message's
depth and running totals can be computed in memory from its parent, and
the rows go in as plain values (PostgreSQL's COPY, SQLite's executemany),
each row built once as a tuple in the table's column order rather than
through the ORM's per-field preparation, which cost more than the database's
own work. The result is exactly what appending one by one would store; the
cursor and the pressure columns are then set once, through the ordinary
services.
"""

import dataclasses
import gc
import io
import itertools
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import cast

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import ForeignKey
from django.utils import timezone

from chatcore import conf, services
from chatcore.chain import chain_hash_under, chain_seed, parent_frame
from chatcore.collector import collector_paused
from chatcore.instances import instance_filled, instances_fillable
from chatcore.metadata.validation import metadata_validate
from chatcore.models import Channel, Message
from chatcore.search import schema as search_schema
from chatcore.tokens import count_tokens

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
            # The sequence named once (an InitPlan): named per row, its lookup cost more than the nextval.
            cursor.execute(
                "SELECT nextval((SELECT pg_get_serial_sequence(%s, 'id')::regclass)) FROM generate_series(1, %s)",
                [table, count],
            )
            return sorted(row[0] for row in cursor.fetchall())
        cursor.execute(f"SELECT MAX(id) FROM {table}")  # noqa: S608 (table name from the model)
        start = (cursor.fetchone()[0] or 0) + 1
        if connection.vendor == "sqlite":
            cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
            row = cursor.fetchone()
            start = max(start, (row[0] if row else 0) + 1)
        return list(range(start, start + count))


_ROLES = frozenset(Message.Role.values)


def _item_check(index: int, item: NewMessage) -> None:
    """ValidationError naming the item unless it can be stored (metadata as `message_append` checks it)."""
    if item.role not in _ROLES:
        raise ValidationError({"role": f"Item {index}: role must be one of: {', '.join(Message.Role.values)}."})
    if item.parent is not None and not 0 <= item.parent < index:
        raise ValidationError({"parent": f"Item {index}: the parent must be an earlier item."})
    try:
        metadata_validate(role=item.role, metadata=item.metadata)
    except ValidationError as error:
        raise ValidationError({"metadata": f"Item {index}: {error.message_dict['metadata'][0]}"}) from None


def new_message_check(index: int, item: NewMessage) -> None:
    """`messages_bulk_import`'s check of one item, for a caller that stores a single message itself (the
    gateway's usual turn): the same ValidationError, naming the item."""
    _item_check(index, item)


# The segment of the message %s and whether it has children (the message's id twice: children, then row).
_UNDER_SEGMENT = f"""SELECT segment, EXISTS (SELECT 1 FROM {Message._meta.db_table} c WHERE c.parent_id = %s)
    FROM {Message._meta.db_table} WHERE id = %s"""  # noqa: S608 (the model's table)


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
            # Written out rather than through the ORM, whose compiling of the EXISTS cost more than the query.
            with connection.cursor() as cursor:
                cursor.execute(_UNDER_SEGMENT, [under.pk, under.pk])
                row = cursor.fetchone()
            if row is None:
                raise Message.DoesNotExist("The message to import under does not exist.")
            self.under_segment, self.under_has_children = row[0], bool(row[1])
        self.by_index: list[int | None] = []
        self.parents_seen: set[int | None] = set()

    def all_given(self) -> bool:
        """Whether `of` gives every segment (not when `under` has none and no children yet)."""
        return self.under is None or self.under_segment is not None or self.under_has_children

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


_FIELDS = Message._meta.concrete_fields
_NAMES = tuple(f.attname for f in _FIELDS)
# Values the ORM would adapt on their way to the database: JSON (to its text) and datetimes (as the field does).
_JSON = tuple(i for i, f in enumerate(_FIELDS) if f.get_internal_type() == "JSONField")
_DATETIMES = tuple(i for i, f in enumerate(_FIELDS) if f.get_internal_type() == "DateTimeField")
_ID = _NAMES.index("id")
_SEGMENT = _NAMES.index("segment")

# From this many rows an import on SQLite fills the full-text index in one statement after the rows instead of
# through the per-row trigger (an FTS5 insert per row costs several times its share of one set-based insert);
# the trigger is dropped and made again inside the import's transaction, which changes the schema, so small
# writes (the gateway's few messages per call) keep the trigger.
SQLITE_INDEX_AFTER_ROWS = 200


def _prepared(rows: Iterable[tuple]) -> Iterator[list]:
    """Each row with the values the ORM would send for it. A datetime is prepared once per distinct value
    (an import's rows mostly share one `created_at`), empty metadata is the same text every time."""
    dates: dict = {}
    for row in rows:
        values = list(row)
        for index in _JSON:
            value = values[index]
            values[index] = "{}" if value == {} else json.dumps(value)
        for index in _DATETIMES:
            value = values[index]
            if value is not None:
                prepared = dates.get(value)
                if prepared is None:
                    prepared = dates[value] = _FIELDS[index].get_db_prep_save(value, connection)
                values[index] = prepared
        yield values


def _sqlite_rows(cursor, sql: str, rows: Iterable[list]) -> tuple[int, int] | None:
    """executemany in batches of BATCH_SIZE; the first and last id written (None if none were)."""
    span = None
    iterator = iter(rows)
    while batch := list(itertools.islice(iterator, BATCH_SIZE)):
        cursor.executemany(sql, batch)
        span = (span[0] if span else batch[0][_ID], batch[-1][_ID])
    return span


# From this many rows an import on PostgreSQL loads with `session_replication_role` at replica (when its role
# may set it): the foreign keys' per-row triggers are then skipped and their check made for all the rows in
# one query, where each row would queue three deferred trigger events run one by one at commit (the search
# trigger, ENABLE ALWAYS, still runs). Below it (the gateway's few messages a call) the two statements more
# cost more than the events they save.
PG_UNCHECKED_FROM_ROWS = 200
# The role switches only while no trigger of the table's own would be skipped with the foreign keys' (each one
# is ENABLE ALWAYS or disabled), and only from the ordinary role (a caller already loading as a replica, such
# as a benchmark, has its own reasons).
_PG_REPLICA_ON = f"""SELECT set_config('session_replication_role', 'replica', true)
    WHERE current_setting('session_replication_role') = 'origin' AND NOT EXISTS (
        SELECT 1 FROM pg_trigger WHERE tgrelid = '{Message._meta.db_table}'::regclass AND NOT tgisinternal
        AND tgenabled = 'O')"""


class _ForeignKeys:
    """The values of the rows' foreign keys, gathered as the rows go by (`seen`), and the check their
    constraints' deferred triggers would make at commit, made for all of them in one query (`check`)."""

    _FIELDS: tuple[tuple[int, ForeignKey], ...] = tuple(
        (i, f) for i, f in enumerate(_FIELDS) if isinstance(f, ForeignKey) and getattr(f, "db_constraint", True)
    )

    def __init__(self) -> None:
        self.values: list[set] = [set() for _ in self._FIELDS]
        self.ids: set[int] = set()

    def seen(self, rows: Iterable[tuple]) -> Iterator[tuple]:
        pairs = [(index, values.add) for (index, _), values in zip(self._FIELDS, self.values, strict=True)]
        add_id = self.ids.add
        for row in rows:
            add_id(row[_ID])
            for index, add in pairs:
                if row[index] is not None:
                    add(row[index])
            yield row

    def check(self, cursor) -> None:
        """Each referenced row exists (a row of the import itself counts for a reference to the message
        table) and is locked against deletion until the import commits, as those triggers lock it
        (FOR KEY SHARE)."""
        counts, params, wanted = [], [], []
        for (_, field), values in zip(self._FIELDS, self.values, strict=True):
            if field.related_model is Message:
                values = values - self.ids
            target = connection.ops.quote_name(field.related_model._meta.db_table)
            column = connection.ops.quote_name(str(field.target_field.column))
            counts.append(
                f"(SELECT count(*) FROM (SELECT 1 FROM {target} WHERE {column} = ANY(%s) FOR KEY SHARE) f)"  # noqa: S608
            )
            params.append(sorted(values))
            wanted.append(len(values))
        cursor.execute(f"SELECT {', '.join(counts)}", params)
        found = cursor.fetchone()
        broken = [f.name for (_, f), have, want in zip(self._FIELDS, found, wanted, strict=True) if have != want]
        if broken:
            raise IntegrityError(f"Imported messages refer to a {', '.join(broken)} that does not exist.")


# PostgreSQL works on a COPY's data one message at a time, once the whole message has arrived, and the client
# library sends a message only as far as its last full 8 kB until more follows. Written row by row, the rows
# went out in 32 kB messages, so the server sat idle while the first hundred or so rows were built and lagged a
# message behind after that. Here they go in pieces, each sent whole as soon as it is formatted, the first of
# them a few rows: the server starts on them at once and works through each piece while the next is built.
# Each piece is PG_PIECE_GROWTH times the one before, up to PG_PIECE_ROWS: the server stores a row in about
# the time this process takes to build one, so a piece much larger than the last (the first piece's few rows,
# then a full one at once) left the server idle for most of the building of the second, in every import; a
# piece this much larger is built in about the time the server takes over the last.
PG_FIRST_PIECE_ROWS = 8
PG_PIECE_ROWS = 128
PG_PIECE_GROWTH = 1.25


def _pg_copy(cursor, sql: str, rows: Iterable[list]) -> None:
    """COPY the rows (`sql` is the statement) in pieces growing from PG_FIRST_PIECE_ROWS to PG_PIECE_ROWS rows,
    each formatted by psycopg as `write_row` formats it (a `Copy` over a cursor of the same connection, written
    to memory) and flushed to the server at once.

    The collector's young generation (the rows' objects, made while an import pauses it) is gone through
    after the last piece, while the server works through the last pieces, rather than by the collector's
    first run after the COPY, when the server would wait for it."""
    from psycopg.copy import Copy, FileWriter, LibpqWriter  # PostgreSQL's driver: only where it is the database

    raw = cursor.cursor  # psycopg's own cursor, under Django's wrapper
    iterator = iter(rows)
    with raw.connection.cursor() as formatting, raw.copy(sql, writer=LibpqWriter(raw, flush_threshold=0)) as copy:
        size = PG_FIRST_PIECE_ROWS
        while piece := list(itertools.islice(iterator, size)):
            buffer = io.BytesIO()
            with Copy(formatting, writer=FileWriter(buffer)) as formatter:
                for values in piece:
                    formatter.write_row(values)
            copy.write(buffer.getvalue())
            size = min(PG_PIECE_ROWS, math.ceil(size * PG_PIECE_GROWTH))
        gc.collect(0)


def _pg_copy_unchecked(cursor, rows: Iterable[tuple], *, sql: str) -> bool:
    """COPY the rows with the foreign keys' triggers off and check the keys in one query after (see
    PG_UNCHECKED_FROM_ROWS); False, with nothing done, when the role may not be switched."""
    if connection.connection.info.parameter_status("is_superuser") != "on":
        return False
    cursor.execute(_PG_REPLICA_ON)
    if cursor.fetchone() is None:
        return False
    keys = _ForeignKeys()
    _pg_copy(cursor, sql, _prepared(keys.seen(rows)))
    cursor.execute("SELECT set_config('session_replication_role', 'origin', true)")
    keys.check(cursor)
    return True


def _insert(rows: Iterable[tuple], *, count: int, segments_given: bool) -> None:
    """The rows (values of every concrete field, in the model's order) in one COPY on PostgreSQL, in
    executemany batches on SQLite, with the values the ORM would send for them.

    `rows` may be a generator that builds each row as it is asked for: on PostgreSQL the COPY then
    streams them while they are built, and the server parses, indexes and stores one batch while the
    next is being made (its half of the work and ours run side by side, on two cores).

    On SQLite, an import of `count` >= SQLITE_INDEX_AFTER_ROWS rows whose segments are all given
    (`segments_given`) writes the rows with the full-text trigger dropped, then indexes them in one
    INSERT ... SELECT with the trigger's own expressions, and makes the trigger again, all in the
    import's transaction: SQLite has one writer, so no other row can arrive meanwhile, and readers see
    only the committed schema, trigger included. The index's segments are then merged as far as they go
    (search_schema.sqlite_index_settle), so that the merging the import's one large segment calls for is
    not left to the appends after it."""
    table = connection.ops.quote_name(Message._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in _FIELDS)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            sql = f"COPY {table} ({columns}) FROM STDIN"
            if count >= PG_UNCHECKED_FROM_ROWS and _pg_copy_unchecked(cursor, rows, sql=sql):
                return
            _pg_copy(cursor, sql, _prepared(rows))
            return
        marks = ", ".join(["%s"] * len(_FIELDS))
        sql = f"INSERT INTO {table} ({columns}) VALUES ({marks})"  # noqa: S608 (the model's table and columns)
        if not (connection.vendor == "sqlite" and segments_given and count >= SQLITE_INDEX_AFTER_ROWS):
            _sqlite_rows(cursor, sql, _prepared(rows))
            return
        trigger = search_schema.sqlite_insert_trigger_drop(cursor)
        span = _sqlite_rows(cursor, sql, _prepared(rows))
        if trigger is None:  # no index installed
            return
        cursor.execute(trigger)
        if span is not None:
            cursor.execute(search_schema.SQLITE_INDEX_IDS, list(span))
            search_schema.sqlite_index_settle(connection)


_ACTIVITY_FIELD = Channel._meta.get_field("last_activity_at")
_CHANNEL_ACTIVITY = f"UPDATE {Channel._meta.db_table} SET {_ACTIVITY_FIELD.column} = %s WHERE id = %s"  # noqa: S608


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
    alias = connection.alias
    plain = instances_fillable(Message)  # see chatcore.instances
    message_size, of = services.message_size, segments.of
    user_role, names, overhead = Message.Role.USER, _NAMES, conf.MESSAGE_OVERHEAD_TOKENS
    channel_id, set_author = channel.pk, Message.author.field.set_cached_value
    # Each parent's framed chain hash, made once: a chain's message is the next one's parent.
    frames: dict[int | None, bytes] = {}
    under_frame = parent_frame(under.chain_hash if under is not None else chain_seed(channel.owner_id))

    def rows() -> Iterator[tuple]:
        for index, item in enumerate(items):
            _item_check(index, item)
            content, metadata, role = item.content, item.metadata, item.role
            if item.parent is not None:
                parent: Message | None = built[item.parent]
                framed = frames.pop(item.parent, None) or parent_frame(built[item.parent].chain_hash)
            else:
                parent, framed = under, under_frame
            if item.tokens is None and not metadata:
                tokens, chars = count_tokens(content) + overhead, len(content)  # message_size, no metadata
            elif item.tokens is None:
                tokens, chars = message_size(content=content, metadata=metadata)
            else:
                tokens, chars = item.tokens, len(content) if item.chars is None else item.chars
            author = item.author if item.author is not None else (user if role == user_role else None)
            hashed = item.chain_hash or chain_hash_under(parent=framed, role=role, content=content, metadata=metadata)
            frames[index] = parent_frame(hashed)
            message_id = ids[index]
            # services.message_tree_fields inline (a call and a dict less a row); tests/chatcore/test_chain.py checks.
            if parent is None:
                depth, path_tokens, path_chars, root_id = 0, tokens, chars, None
            else:
                depth, root_id = parent.depth + 1, parent.root_id or parent.pk
                path_tokens, path_chars = parent.path_tokens + tokens, parent.path_chars + chars
            values = {
                "id": message_id,
                "channel_id": channel_id,
                "parent_id": parent.pk if parent else None,
                "role": role,
                "content": content,
                "metadata": metadata,
                "author_id": author.pk if author is not None else None,
                "created_at": item.created_at or now,
                "deleted_at": None,
                "purged_at": None,
                "depth": depth,
                "tokens": tokens,
                "chars": chars,
                "path_tokens": path_tokens,
                "path_chars": path_chars,
                "chain_hash": hashed,
                "root_id": root_id,
                "segment": of(message_id, item.parent),
            }
            row = tuple([values[name] for name in names])  # every concrete field, in the model's order
            if plain:
                message = instance_filled(Message, alias, values)
            else:
                message = Message.from_db(alias, names, row)
            if author is not None:
                set_author(message, author)
            built.append(message)
            yield row

    with collector_paused():  # several objects a row, all kept until the import returns: see chatcore.collector
        _insert(rows(), count=len(items), segments_given=segments.all_given())
    with connection.cursor() as cursor:  # one plain statement: the ORM compiles an update anew for every import
        cursor.execute(_CHANNEL_ACTIVITY, [_ACTIVITY_FIELD.get_db_prep_save(now, connection), channel.pk])
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
