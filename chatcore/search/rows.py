"""The rows a search reads besides the engine's matches, each in one plain SQL statement.

A search answers in a few milliseconds of database time; on a busy machine
what it costs is mostly Python, and the ORM's compiling of a query with
several joins (the cursor with its leaf, summary and boundary) or with one
OR per hit (the neighbours) took as long as all the engine's queries
together. So these two reads are written as SQL once, and the rows are
turned into model instances with `Model.from_db`, as a queryset would.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, connections
from django.db.models import Model

from chatcore.instances import (
    EMPTY_JSON_OBJECT,
    instance_filled,
    instances_fillable,
    instances_filled,
    json_read_plainly,
)
from chatcore.models import Cursor, Message, Summary
from chatcore.prepared import prepared_cursor
from chatcore.search.engine import Segment, segments_cte
from chatcore.search.schema import SQLITE_ANY_PENDING

_MESSAGE_FIELDS = Message._meta.concrete_fields


@dataclasses.dataclass(frozen=True)
class PathState:
    """What a search needs of the user's cursor: the leaf and the summary in force, if any."""

    leaf_id: int
    leaf_depth: int
    leaf_path_tokens: int
    boundary: Message | None  # the last message the summary in force covers
    segments: tuple[Segment, ...]  # the path's, leaf first (chatcore.search.engine.path_segments)
    # SQLite: whether some message's words wait to be indexed (chatcore.search.schema); False on PostgreSQL.
    index_pending: bool = False


_COLUMNS: dict[tuple[str, str, object], str] = {}


def _columns(alias: str, fields) -> str:
    key = (connection.vendor, alias, fields[0].model)
    if key not in _COLUMNS:
        _COLUMNS[key] = ", ".join(f"{alias}.{connection.ops.quote_name(f.column)}" for f in fields)
    return _COLUMNS[key]


class _Loader:
    """Model instances from raw column values, converted as a queryset converts them (dates, JSON...).
    Made once per connection and model (`_loader`): working out the converters cost more than using them.

    An instance is filled in directly rather than through `Model.__init__` (which sets each field one by
    one, most of what loading a search's messages cost), as chatcore.selectors loads a path: a new
    instance's field attributes hold no cached object, so the result is `Model.from_db`'s; when anything
    listens for the model's init signals, instances are made the ordinary way."""

    def __init__(self, model, fields, db) -> None:
        self.model = model
        self.names = [f.attname for f in fields]
        self.connection = db
        # Per column, its converters in order, and whether they leave a NULL as it is (most do: then a NULL
        # column is not handed to them, as their answer is known).
        self.converters = []
        for index, field in enumerate(fields):
            column = field.get_col(model._meta.db_table)
            chain = [
                _empty_object_first(c, field) for c in db.ops.get_db_converters(column) + field.get_db_converters(db)
            ]
            if chain:
                self.converters.append((index, chain, column, _keeps_null(chain, column, db)))

    def fillable(self) -> bool:
        """Whether instances may be filled in directly (chatcore.instances): asked once per load."""
        return instances_fillable(self.model)

    def __call__(self, values, fillable: bool | None = None):
        values = list(values)
        db = self.connection
        for index, chain, column, keeps_null in self.converters:
            value = values[index]
            if value is None and keeps_null:
                continue
            for converter in chain:
                value = converter(value, column, db)
            values[index] = value
        model, alias = self.model, db.alias
        if not (self.fillable() if fillable is None else fillable):
            return model.from_db(alias, self.names, values)
        return instance_filled(model, alias, zip(self.names, values, strict=True))

    def many(self, rows: list, fillable: bool) -> list:
        """`self(row, fillable)` for each of `rows`, each converter looked up once per column rather than per row."""
        if not rows:
            return []
        db = self.connection
        if self.converters:
            columns: list[Any] = list(zip(*rows, strict=True))
            for index, chain, column, keeps_null in self.converters:
                converted = []
                for value in columns[index]:
                    if value is not None or not keeps_null:
                        for converter in chain:
                            value = converter(value, column, db)
                    converted.append(value)
                columns[index] = converted
            rows = list(zip(*columns, strict=True))
        model, alias = self.model, db.alias
        if not fillable:
            return [model.from_db(alias, self.names, list(row)) for row in rows]
        return instances_filled(model, alias, self.names, rows)


def _empty_object_first(converter, field):
    """`converter`, except that a JSONField without a decoder of its own reads the empty object as a new
    empty dict without parsing it (what json.loads gives): most messages' metadata is that object, and its
    parsing was the larger part of what turning a search's neighbours into messages cost."""
    if not json_read_plainly(converter, field):
        return converter

    def converted(value, expression, connection):
        if value == EMPTY_JSON_OBJECT:
            return {}
        return converter(value, expression, connection)

    return converted


def _keeps_null(chain, column, db) -> bool:
    """Whether the converters give NULL back for NULL (they are plain functions of the value)."""
    value = None
    try:
        for converter in chain:
            value = converter(value, column, db)
    except Exception:  # noqa: BLE001 (a converter that cannot take NULL is simply always called)
        return False
    return value is None


_LOADERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # connection object -> {model: _Loader}


def _loader(model, fields) -> _Loader:
    db = connections[connection.alias]  # the connection itself (one per thread), not the per-thread proxy
    loaders = _LOADERS.setdefault(db, {})
    if model not in loaders:
        loaders[model] = _Loader(model, fields, db)
    return loaders[model]


def path_state(*, channel_id: int, user_id: int) -> PathState | None:
    """The cursor of `user_id` on the channel (None if the user has none), its leaf, boundary and the path's
    segments: one query (a row per segment, the cursor's columns repeated on each). On SQLite, the same query
    says whether messages wait to be indexed, so that a search with none pending runs no statement for it."""
    cursor_where = "c.channel_id = %s AND c.user_id = %s"
    pending = f"({SQLITE_ANY_PENDING})" if connection.vendor == "sqlite" else "FALSE"
    sql = f"""
        WITH RECURSIVE {segments_cte(f"(SELECT c.leaf_id FROM {Cursor._meta.db_table} c WHERE {cursor_where})")}
        SELECT l.id, l.depth, l.path_tokens, segs.segment, segs.first_depth, segs.last_depth, {pending},
            {_columns("b", _MESSAGE_FIELDS)}
        FROM {Cursor._meta.db_table} c
        JOIN {Message._meta.db_table} l ON l.id = c.leaf_id
        LEFT JOIN {Summary._meta.db_table} s ON s.id = c.summary_id
        LEFT JOIN {Message._meta.db_table} b ON b.id = s.through_message_id
        LEFT JOIN segs ON 1 = 1
        WHERE {cursor_where}
        ORDER BY segs.last_depth DESC
    """  # noqa: S608 (model table and column names only)
    with prepared_cursor() as cursor:
        cursor.execute(sql, [channel_id, user_id, channel_id, user_id])
        rows = cursor.fetchall()
    if not rows:
        return None
    row = rows[0]
    boundary_values = row[7:]
    boundary = _loader(Message, _MESSAGE_FIELDS)(boundary_values) if boundary_values[0] is not None else None
    segments = tuple(Segment(*found[3:6]) for found in rows if found[3] is not None)
    return PathState(
        leaf_id=row[0],
        leaf_depth=row[1],
        leaf_path_tokens=row[2],
        boundary=boundary,
        segments=segments,
        index_pending=bool(row[6]),
    )


def _merged(ranges: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The same messages in fewer (segment, first depth, last depth): overlapping or touching ranges as one."""
    merged: list[list[int]] = []
    for segment, low, high in sorted(ranges):
        if merged and merged[-1][0] == segment and low <= merged[-1][2] + 1:
            merged[-1][2] = max(merged[-1][2], high)
        else:
            merged.append([segment, low, high])
    return [(segment, low, high) for segment, low, high in merged]


def _author_fields(user_model) -> tuple:
    """The author's fields a search reads: its key and its name (`get_username`, as the recall tool shows it)."""
    meta = user_model._meta
    name = meta.get_field(user_model.USERNAME_FIELD)
    return (meta.pk,) if name == meta.pk else (meta.pk, name)


def _int_array(values) -> str:
    """An array of integers as PostgreSQL's text of it, which the statement casts: psycopg dumps a list element
    by element in Python (looking for the elements' type first), a string as it is."""
    return "{" + ",".join(map(str, values)) + "}"


def messages_at(*, ranges: list[tuple[int, int, int]]) -> list[Message]:
    """The messages of each (segment, first depth, last depth), with their authors loaded: one query.
    Each author comes with only its key and name (the rest deferred, read on first use as for `only()`):
    the user's other columns, dates among them, were converted again on every row of the author's."""
    if not ranges:
        return []
    ranges = _merged(ranges)
    user_model = get_user_model()
    user_fields = _author_fields(user_model)
    select = f"SELECT {_columns('m', _MESSAGE_FIELDS)}, {_columns('u', user_fields)}"
    author_join = f"LEFT JOIN {user_model._meta.db_table} u ON u.id = m.author_id"
    if connection.vendor == "postgresql":
        # One text whatever the number of ranges (they travel as arrays), so that it is prepared once, and one
        # plan for all values: each array behind a scalar subquery, so that no plan knows its length and
        # PostgreSQL keeps the generic one (a plan that knew it would look cheaper, and be planned each time).
        # Each range is a lookup of its own in (segment, depth) whatever the statistics: its LIMIT (a segment
        # holds one message per depth, so never below the range's rows) keeps the join a loop.
        sql = f"""{select}
            FROM unnest((SELECT %s::bigint[]), (SELECT %s::integer[]), (SELECT %s::integer[])) AS r(segment, low, high)
            CROSS JOIN LATERAL (SELECT * FROM {Message._meta.db_table} m
                WHERE m.segment = r.segment AND m.depth BETWEEN r.low AND r.high LIMIT r.high - r.low + 1) m
            {author_join}"""  # noqa: S608 (model table and column names only; values as parameters)
        params: list = [_int_array(column) for column in zip(*ranges, strict=True)]
    else:
        where = " OR ".join(["(m.segment = %s AND m.depth BETWEEN %s AND %s)"] * len(ranges))
        sql = f"{select} FROM {Message._meta.db_table} m {author_join} WHERE {where}"  # noqa: S608 (as above)
        params = [value for triple in ranges for value in triple]
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    split = len(_MESSAGE_FIELDS)
    message_of, user_of = _loader(Message, _MESSAGE_FIELDS), _loader(user_model, user_fields)
    messages = message_of.many([row[:split] for row in rows], message_of.fillable())
    authors: dict[int, Model] = {}  # one instance per author, as prefetching would give
    set_author = Message.author.field.set_cached_value
    for message, row in zip(messages, rows, strict=True):
        author = None
        if row[split] is not None:
            if row[split] not in authors:
                authors[row[split]] = user_of(row[split:], False)  # from_db: the fields left out are deferred
            author = authors[row[split]]
        set_author(message, author)
    return messages
