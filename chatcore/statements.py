"""Several writes in one statement on PostgreSQL: a message appended, its companion rows, the cursor that
moves onto it and the channel's pressure, as one data-modifying WITH (one round trip instead of one per
row), optionally returning the path the new message continues.

A writer that holds the channel's lock (`chatcore.locks`) sends one after the lock, its own statement, so
that this one begins after it with a snapshot that sees every write committed before the lock was granted
(a statement that waited for a row lock sees other rows as they were when it began). A writer that read
the channel and its cursor with their rows' versions instead (`locks.RowsSeen`) sends one that takes the
lock itself and writes only if both rows are still those versions: then no writer of the channel wrote
anything since the read (each changes one of them under the lock), so the snapshot misses nothing the
writes depend on. The new message's id is the only value the statement makes itself: the cursor takes it
from the INSERT's RETURNING; everything else (the message's place in the tree, the pressure) the caller
works out as the separate writes would. Its text is the same for every message of a shape (the values go
apart): PostgreSQL plans it once per connection where the site prepares statements (`chatcore.prepared`).
SQLite has no data-modifying WITH: there the same writes are one INSERT into a view whose trigger makes
them (`sqlite_append_and_place`), the path read on its own.
"""

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.sql import InsertQuery

from chatcore.instances import instance_filled, instances_fillable
from chatcore.locks import ROW_VERSION, RowsSeen, locked_if_unchanged
from chatcore.models import Channel, Cursor, Message, UsageEntry
from chatcore.prepared import prepared_cursor
from chatcore.signals import ReadAlong


@dataclasses.dataclass
class RowsAlong:
    """Rows to read inside a write statement (`wanted`: name → what to read), and once it ran, `rows`: name →
    the row as Django loads it (its other fields deferred), None when it does not exist. A write that took
    another way leaves `rows` empty."""

    wanted: dict[str, ReadAlong]
    rows: dict[str, models.Model | None] = dataclasses.field(default_factory=dict)


def _connection() -> BaseDatabaseWrapper:
    """The default connection itself, looked up once per call: `django.db.connection` is a proxy that looks it
    up again (context-local storage) at every use, and the fields' conversions use it once or more per value."""
    return connections[DEFAULT_DB_ALIAS]


# The fields an INSERT of each model writes (its concrete fields but the key), and whether one has a placeholder
# of its own (which only the compiler places): the model's constants.
_WRITTEN: dict[type[models.Model], tuple[list[models.Field], bool]] = {}


def _written(model: type[models.Model]) -> tuple[list[models.Field], bool]:
    if model not in _WRITTEN:
        fields = [field for field in model._meta.local_concrete_fields if not field.primary_key]
        _WRITTEN[model] = fields, any(hasattr(field, "get_placeholder") for field in fields)
    return _WRITTEN[model]


# The INSERT text of each model (and database): the same whatever the row's values, once they are plain values.
_INSERTS: dict[tuple[type[models.Model], str], str] = {}


def _insert(obj: models.Model, db: BaseDatabaseWrapper) -> tuple[str, list]:
    """The INSERT that `obj.save()` would send (its fields' pre_save and conversions), without RETURNING.

    The values are what Django's compiler sends (`pre_save`, then `get_db_prep_save`); its text, built once
    per model and database, is the compiler's for plain values. A value that is an expression (or a field
    with a placeholder of its own) has the compiler build the statement for it."""
    model = type(obj)
    fields, placeholders = _written(model)
    key = (model, db.alias)
    values = [field.pre_save(obj, True) for field in fields]
    plain = not placeholders and not any(hasattr(value, "resolve_expression") for value in values)
    if plain and key in _INSERTS:
        return _INSERTS[key], [field.get_db_prep_save(value, db) for field, value in zip(fields, values, strict=True)]
    query = InsertQuery(model)
    query.insert_values(fields, [obj])
    [(sql, params)] = query.get_compiler(connection=db).as_sql()
    if plain:
        _INSERTS[key] = sql
    return sql, list(params)


# The SET list of each model, fields and database, and the fields it assigns: the callers' constants.
_ASSIGNMENTS: dict[tuple[type[models.Model], tuple[str, ...], str], tuple[str, list[models.Field]]] = {}


def _assignments(obj: models.Model, names: tuple[str, ...], db: BaseDatabaseWrapper) -> tuple[str, list]:
    key = (type(obj), names, db.alias)
    if key not in _ASSIGNMENTS:
        quote = db.ops.quote_name
        fields = [obj._meta.get_field(name) for name in names]
        concrete = [field for field in fields if isinstance(field, models.Field)]
        _ASSIGNMENTS[key] = ", ".join(f"{quote(str(field.column))} = %s" for field in concrete), concrete
    sql, concrete = _ASSIGNMENTS[key]
    return sql, [field.get_db_prep_save(getattr(obj, field.attname), db) for field in concrete]


@dataclasses.dataclass(frozen=True)
class Placement:
    """What `append_and_place` did: `placed` False when the rows it was to find unchanged had changed (it
    wrote nothing then); else the path it read (None when not asked for) and the versions
    (`locks.ROW_VERSION`) of the cursor's and the channel's rows as its writes left them."""

    placed: bool
    path: list[Message] | None = None
    channel_version: str | None = None
    cursor_version: str | None = None


def append_and_place(
    *,
    message: Message,
    companions: tuple[models.Model, ...],
    cursor: Cursor,
    cursor_fields: tuple[str, ...],
    channel: Channel,
    channel_fields: tuple[str, ...],
    path_from: int | None = None,
    path_after_depth: int = -1,
    read_along: RowsAlong | None = None,
    unless_changed: RowsSeen | None = None,
) -> Placement:
    """Insert `message` and `companions` (rows of other tables, e.g. the model call's usage row), point
    `cursor` at the message (its `cursor_fields` other than the leaf as it holds them) and save
    `channel_fields` of `channel`: one statement. `message.pk` is set from the INSERT (the instance is
    otherwise as the caller built it, its relations cached).

    With `path_from` (the message's parent), also return the stored messages from just below
    `path_after_depth` down to that parent, root first (`selectors.message_path`'s rows), else None.
    `read_along` (without `path_from`): rows read by the same statement, put in its `rows`.

    `unless_changed`: the caller holds no lock, but read the channel and the cursor as these rows
    (`locks.RowsSeen`): the statement takes their locks itself and writes only if both are still those
    versions (`locks.locked_if_unchanged`); otherwise nothing (`placed` False). For plain values only
    (`placeable_unless_changed`)."""
    db = _connection()
    quote = db.ops.quote_name
    parts: list[str] = []
    params: list = []
    if unless_changed is not None:
        sql, values = locked_if_unchanged(unless_changed, quote=quote)
        parts.append(sql)
        params += values
    insert = _insert if unless_changed is None else _insert_under_lock
    sql, values = insert(message, db)
    parts.append(f"ins AS ({sql} RETURNING id)")
    params += values
    for index, companion in enumerate(companions):
        sql, values = insert(companion, db)
        parts.append(f"extra{index} AS ({sql})")
        params += values
    cursor_table, channel_table = quote(Cursor._meta.db_table), quote(Channel._meta.db_table)
    sql, values = _assignments(cursor, tuple(name for name in cursor_fields if name != "leaf"), db)
    parts.append(
        f"moved AS (UPDATE {cursor_table} SET leaf_id = ins.id, {sql} FROM ins WHERE {cursor_table}.id = %s "
        f"RETURNING {ROW_VERSION.format(table=cursor_table)} AS version)"
    )
    params += [*values, cursor.pk]
    sql, values = _assignments(channel, channel_fields, db)
    parts.append(
        f"pressed AS (UPDATE {channel_table} SET {sql} FROM ins WHERE {channel_table}.id = %s "
        f"RETURNING {ROW_VERSION.format(table=channel_table)} AS version)"
    )
    params += [*values, channel.pk]
    versions = "(SELECT version FROM pressed), (SELECT version FROM moved)"
    if path_from is None:
        reads = _reads_ordered(read_along, db)
        selected, joins, values = ["ins.id", versions], [], []
        for index, (_name, read, fields) in enumerate(reads):
            selected += [f"r{index}.{quote(str(field.column))}" for field in fields]
            pk = quote(str(read.model._meta.pk.column))
            joins.append(f" LEFT JOIN {quote(read.model._meta.db_table)} r{index} ON r{index}.{pk} = %s")
            values.append(read.pk)
        with prepared_cursor() as cursor_db:
            sql = "WITH " + ", ".join(parts) + f" SELECT {', '.join(selected)} FROM ins{''.join(joins)}"
            cursor_db.execute(sql, params + values)
            row = cursor_db.fetchone()
        if row is None:
            return Placement(placed=False)
        message.pk = row[0]
        _reads_put(read_along, reads, row[3:], db)
        return Placement(placed=True, channel_version=row[1], cursor_version=row[2])
    assert read_along is None or not read_along.wanted, "rows are read along only without the path"
    statement, values = _with_path(parts, path_from, path_after_depth, versions)
    # Each row is the new message's id and the rows' versions beside a message of the path (none when the path
    # is empty).
    with prepared_cursor() as cursor_db:
        cursor_db.execute(statement, params + values)
        rows = cursor_db.fetchall()
    if not rows:
        return Placement(placed=False)
    message.pk = rows[0][0]
    return Placement(
        placed=True,
        path=_messages([row[3:] for row in rows if row[3] is not None], db),
        channel_version=rows[0][1],
        cursor_version=rows[0][2],
    )


# The INSERT text of each model (and database) whose row is written only under the locks of
# `locks.locked_if_unchanged`: its values selected from that part, each cast to its column's type (without its
# length or precision, which the column's own assignment then checks as an INSERT's VALUES would).
_INSERTS_UNDER_LOCK: dict[tuple[type[models.Model], str], str] = {}
_TYPE_MODIFIER = re.compile(r"\([^)]*\)")


def _insert_under_lock(obj: models.Model, db: BaseDatabaseWrapper) -> tuple[str, list]:
    """The INSERT of `obj` (plain values: `placeable_unless_changed`) that writes its row once for each row of
    the statement's `locked` part: once when it took the locks, else never."""
    model = type(obj)
    key = (model, db.alias)
    if key not in _INSERTS_UNDER_LOCK:
        quote = db.ops.quote_name
        fields, _placeholders = _written(model)
        columns = ", ".join(quote(str(field.column)) for field in fields)
        casts = ", ".join(
            f"CAST(%s AS {_TYPE_MODIFIER.sub('', str(field.cast_db_type(db))).strip()})" for field in fields
        )
        _INSERTS_UNDER_LOCK[key] = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) SELECT {casts} FROM locked"
    return _INSERTS_UNDER_LOCK[key], _values(obj, db)


def placeable_unless_changed(*, message: Message, companions: tuple[models.Model, ...]) -> bool:
    """Whether `append_and_place` can write `message` with these companions under `unless_changed`: on
    PostgreSQL, when every value is a plain one."""
    return (
        _connection().vendor == "postgresql" and _plain(message) and all(_plain(companion) for companion in companions)
    )


# The path's columns (every concrete field of the message, in order) and their converters, per database: worked
# out once (as `_READ_COLUMNS`), applied with the calling thread's connection.
_PATH_COLUMNS: dict[str, tuple[list[str], list[tuple[int, tuple[list, Any]]]]] = {}


def _messages(rows: list[tuple], db: BaseDatabaseWrapper) -> list[Message]:
    """The messages of rows of every concrete column in field order, as `Message.objects.raw` makes them (the
    database's and the fields' converters, loaded from the database), filled in directly as
    `selectors.message_path` fills its own (`chatcore.instances`)."""
    alias = db.alias
    if alias not in _PATH_COLUMNS:
        fields = Message._meta.concrete_fields
        compiler = db.ops.compiler("SQLCompiler")(Message.objects.none().query, db, alias)
        found = compiler.get_converters([field.get_col(Message._meta.db_table) for field in fields])
        _PATH_COLUMNS[alias] = [field.attname for field in fields], list(found.items())
    names, converters = _PATH_COLUMNS[alias]
    converted: Sequence[Sequence[Any]] = rows
    if converters:  # as the compiler's `apply_converters`
        converted = []
        for values in rows:
            row = list(values)
            for position, (functions, expression) in converters:
                value = row[position]
                for converter in functions:
                    value = converter(value, expression, db)
                row[position] = value
            converted.append(row)
    if instances_fillable(Message):
        return [instance_filled(Message, alias, zip(names, row, strict=True)) for row in converted]
    return [Message.from_db(alias, names, row) for row in converted]


# Each row read along: the fields it sends (the row's key, then its own, in the model's order) and their
# converters, per database; worked out once (the reads are the apps' constants).
_READ_COLUMNS: dict[tuple[ReadAlong, str], tuple[list[models.Field], dict]] = {}


def _read_columns(read: ReadAlong, db: BaseDatabaseWrapper) -> tuple[list[models.Field], dict]:
    key = (read, db.alias)
    if key not in _READ_COLUMNS:
        wanted = set()
        for name in read.fields:
            field = read.model._meta.get_field(name)
            assert isinstance(field, models.Field)
            wanted.add(field.attname)
        pk = read.model._meta.pk
        assert pk is not None
        concrete = read.model._meta.concrete_fields
        fields = [pk, *(field for field in concrete if field.attname in wanted and field is not pk)]
        manager = read.model._meta.default_manager
        assert manager is not None
        query = manager.none().query
        compiler = db.ops.compiler("SQLCompiler")(query, db, db.alias)
        converters = compiler.get_converters([field.get_col(read.model._meta.db_table) for field in fields])
        _READ_COLUMNS[key] = fields, converters
    return _READ_COLUMNS[key]


def _reads_ordered(
    read_along: RowsAlong | None, db: BaseDatabaseWrapper
) -> list[tuple[str, ReadAlong, list[models.Field]]]:
    """Each read's name, itself and the columns it sends."""
    wanted = read_along.wanted if read_along is not None else {}
    return [(name, read, _read_columns(read, db)[0]) for name, read in wanted.items()]


def _reads_put(
    read_along: RowsAlong | None,
    reads: list[tuple[str, ReadAlong, list[models.Field]]],
    values: Sequence[Any],
    db: BaseDatabaseWrapper,
) -> None:
    """The rows of `reads` from the statement's `values`, as Django loads them (the fields' converters,
    `Model.from_db` with the other fields deferred), put in `read_along.rows` under their names."""
    if read_along is None:
        return
    start = 0
    for name, read, fields in reads:
        own = values[start : start + len(fields)]
        start += len(fields)
        if own[0] is None:  # no such row
            read_along.rows[name] = None
            continue
        row = list(own)
        for position, (converters, expression) in _read_columns(read, db)[1].items():  # as the compiler applies them
            for converter in converters:
                row[position] = converter(row[position], expression, db)
        names = [field.attname for field in fields]
        if instances_fillable(read.model):  # as `Model.from_db` makes it, its other fields deferred (left unset)
            read_along.rows[name] = instance_filled(read.model, db.alias, zip(names, row, strict=True))
        else:
            read_along.rows[name] = read.model.from_db(db.alias, names, row)


def _with_path(parts: list[str], path_from: int, after_depth: int, versions: str) -> tuple[str, list]:
    """The statement ending with the path up from `path_from` (`selectors.message_path`'s recursion), each
    row beside the new message's id and `versions` (a LEFT JOIN: the path may be empty, when the parent is the
    boundary)."""
    table = Message._meta.db_table
    names = [str(field.column) for field in Message._meta.concrete_fields]
    columns = ", ".join(names)
    prefixed = ", ".join(f"m.{name}" for name in names)
    selected = ", ".join(f"up.{name}" for name in names)
    path = (
        f"up({columns}) AS (SELECT {prefixed} FROM {table} m WHERE m.id = %s AND m.depth > %s "
        f"UNION ALL SELECT {prefixed} FROM {table} m JOIN up ON m.id = up.parent_id WHERE m.depth > %s)"
    )
    statement = (
        "WITH RECURSIVE "
        + ", ".join([*parts, path])
        + f" SELECT ins.id AS appended_id, {versions}, {selected} FROM ins"
        " LEFT JOIN up ON TRUE ORDER BY up.depth"
    )
    return statement, [path_from, after_depth, after_depth]


# SQLite has no data-modifying WITH: there the same writes go through a view whose INSTEAD OF INSERT trigger makes
# them (`sqlite_placement_statements`, installed by migration 0008), so that they too are one statement. The
# view's columns are the message's (`m_`), the usage row's (`u_`, written when `usage_given`), the cursor's and
# the channel's; it holds no row of its own.
SQLITE_PLACEMENT_VIEW = "chatcore_message_placed"
# The channel's columns the trigger writes: the pressure (when `pressure_given`) and always the last activity.
SQLITE_PRESSURE_COLUMNS = ("context_tokens", "context_messages", "context_budget", "context_ratio")


def _written_columns(model: type[models.Model]) -> list[str]:
    return [str(field.column) for field in model._meta.local_concrete_fields if not field.primary_key]


def _placement_columns(message_model: type[models.Model], usage_model: type[models.Model]) -> list[str]:
    return [
        *(f"m_{column}" for column in _written_columns(message_model)),
        "usage_given",
        *(f"u_{column}" for column in _written_columns(usage_model)),
        "cursor_pk",
        "cursor_summary_id",
        "cursor_updated_at",
        "channel_pk",
        "channel_last_activity_at",
        "pressure_given",
        *(f"channel_{column}" for column in SQLITE_PRESSURE_COLUMNS),
    ]


def sqlite_placement_statements(
    *,
    quote: Callable[[str], str],
    message_model: type[models.Model],
    usage_model: type[models.Model],
    cursor_table: str,
    channel_table: str,
) -> list[str]:
    """The statements that (re)make the placement view and its trigger on SQLite, for these models (the
    migration's historical ones). A field added to the message or the usage row later needs them run again by
    a migration: until then, the view lacks its column and every append fails loudly rather than dropping it."""
    message_table = quote(message_model._meta.db_table)
    usage_table = quote(usage_model._meta.db_table)
    view = quote(SQLITE_PLACEMENT_VIEW)
    trigger = quote(f"{SQLITE_PLACEMENT_VIEW}_insert")
    columns = _placement_columns(message_model, usage_model)
    message_columns = _written_columns(message_model)
    usage_columns = _written_columns(usage_model)
    pressure = ", ".join(f"{quote(column)} = NEW.{quote('channel_' + column)}" for column in SQLITE_PRESSURE_COLUMNS)
    activity = f"{quote('last_activity_at')} = NEW.{quote('channel_last_activity_at')}"
    return [
        f"DROP TRIGGER IF EXISTS {trigger}",
        f"DROP VIEW IF EXISTS {view}",
        f"CREATE VIEW {view} AS SELECT " + ", ".join(f"NULL AS {quote(column)}" for column in columns) + " WHERE 0",
        f"CREATE TRIGGER {trigger} INSTEAD OF INSERT ON {view} BEGIN "
        f"INSERT INTO {usage_table} ({', '.join(quote(column) for column in usage_columns)}) "
        f"SELECT {', '.join('NEW.' + quote('u_' + column) for column in usage_columns)} WHERE NEW.usage_given; "
        f"INSERT INTO {message_table} ({', '.join(quote(column) for column in message_columns)}) "
        f"VALUES ({', '.join(_sqlite_message_value(column, quote, message_table) for column in message_columns)}); "
        # The message's insert is the last one of this trigger's own: its nested triggers' inserts (the search
        # index's) leave last_insert_rowid() as it was when they end.
        f"UPDATE {quote(cursor_table)} SET leaf_id = last_insert_rowid(), summary_id = NEW.cursor_summary_id, "
        f"updated_at = NEW.cursor_updated_at WHERE id = NEW.cursor_pk; "
        f"UPDATE {quote(channel_table)} SET {activity}, {pressure} WHERE id = NEW.channel_pk AND NEW.pressure_given; "
        f"UPDATE {quote(channel_table)} SET {activity} WHERE id = NEW.channel_pk AND NOT NEW.pressure_given; "
        "END",
    ]


def _sqlite_message_value(column: str, quote: Callable[[str], str], message_table: str) -> str:
    """The placement trigger's value for one of the message's columns. A message that continues its parent's
    segment (it has a parent, and the parent no other child yet) takes the parent's segment in its insert: the
    search index's insert trigger would otherwise work it out after the insert and write the row a second
    time. A message that starts a segment is left to that trigger (`segment = id`, known only after the
    insert), as is every message placed another way."""
    given = "NEW." + quote("m_" + column)
    if column != "segment":
        return given
    parent = "NEW." + quote("m_parent_id")
    return (
        f"coalesce({given}, CASE WHEN {parent} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {message_table} c "
        f"WHERE c.parent_id = {parent}) THEN (SELECT p.segment FROM {message_table} p WHERE p.id = {parent}) END)"
    )


def sqlite_placement_uninstall_statements(*, quote: Callable[[str], str]) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {quote(SQLITE_PLACEMENT_VIEW + '_insert')}",
        f"DROP VIEW IF EXISTS {quote(SQLITE_PLACEMENT_VIEW)}",
    ]


def _plain(obj: models.Model) -> bool:
    """Whether each of `obj`'s values is a plain value (not an expression, which only the compiler can place)."""
    fields, placeholders = _written(type(obj))
    return not placeholders and not any(hasattr(getattr(obj, field.attname), "resolve_expression") for field in fields)


def _values(obj: models.Model, db: BaseDatabaseWrapper) -> list:
    """What Django would send for `obj`'s INSERT (its fields' pre_save and conversions), in field order."""
    fields, _placeholders = _written(type(obj))
    return [field.get_db_prep_save(field.pre_save(obj, True), db) for field in fields]


def placeable_in_one(*, message: Message, companions: tuple[models.Model, ...]) -> bool:
    """Whether `append_and_place` (PostgreSQL) or `sqlite_append_and_place` can write `message` with these
    companions: PostgreSQL always; SQLite with RETURNING (3.35), at most one companion, a usage row (what the
    view carries), and plain values."""
    db = _connection()
    if db.vendor == "postgresql":
        return True
    return (
        db.vendor == "sqlite"
        and db.features.can_return_columns_from_insert
        and len(companions) <= 1
        and all(isinstance(companion, UsageEntry) and _plain(companion) for companion in companions)
        and _plain(message)
    )


def sqlite_append_and_place(
    *,
    message: Message,
    companions: tuple[models.Model, ...],
    cursor: Cursor,
    channel: Channel,
    channel_fields: tuple[str, ...],
    read_along: RowsAlong | None = None,
) -> None:
    """`append_and_place` on SQLite (without the path; with `read_along` as there): one INSERT into the
    placement view, whose trigger inserts the usage row and the message, points the cursor at the message (its
    summary and `updated_at` as the caller set them) and saves the channel's last activity and, when
    `channel_fields` has them, its pressure. The new message's id comes back as the cursor's leaf (the
    statement's RETURNING is worked out after the trigger's writes), the rows read along beside it. For what
    `placeable_in_one` accepts."""
    db = _connection()
    values = _values(message, db)
    usage = _values(companions[0], db) if companions else [None] * len(_written_columns(UsageEntry))
    pressure = "context_tokens" in channel_fields  # else the last activity alone (`_append_in_one`'s two forms)

    def prepped(model: type[models.Model], name: str, obj: models.Model) -> object:
        field = model._meta.get_field(name)
        assert isinstance(field, models.Field)
        return field.get_db_prep_save(getattr(obj, field.attname), db)

    params = [
        *values,
        bool(companions),
        *usage,
        cursor.pk,
        prepped(Cursor, "summary", cursor),
        prepped(Cursor, "updated_at", cursor),
        channel.pk,
        prepped(Channel, "last_activity_at", channel),
        pressure,
        *(prepped(Channel, column, channel) for column in SQLITE_PRESSURE_COLUMNS),
        cursor.pk,
    ]
    quote = db.ops.quote_name
    columns = _placement_columns(Message, UsageEntry)
    reads = _reads_ordered(read_along, db)
    returned = [f"(SELECT leaf_id FROM {quote(Cursor._meta.db_table)} WHERE id = %s)"]
    for _name, read, fields in reads:
        table, pk = quote(read.model._meta.db_table), quote(str(read.model._meta.pk.column))
        returned += [f"(SELECT {quote(str(field.column))} FROM {table} WHERE {pk} = %s)" for field in fields]
        params += [read.pk] * len(fields)
    sql = (
        f"INSERT INTO {quote(SQLITE_PLACEMENT_VIEW)} ({', '.join(quote(column) for column in columns)}) "
        f"VALUES ({', '.join(['%s'] * len(columns))}) "
        f"RETURNING {', '.join(returned)}"
    )
    with db.cursor() as cursor_db:
        cursor_db.execute(sql, params)
        row = cursor_db.fetchone()
    message.pk = row[0]
    _reads_put(read_along, reads, row[1:], db)
