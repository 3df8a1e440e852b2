"""Reads used by services, views and the compaction app.

Paths are loaded leaf-first with one recursive query that stops at the
boundary depth, so their cost follows the stretch asked for, never the
whole tree.
"""

import copy
import datetime as dt
import functools
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, connections, router
from django.db.models import Field, FilteredRelation, Q, QuerySet
from django.db.models.expressions import RawSQL

from chatcore import conf
from chatcore.compiled import FixedQuery
from chatcore.errors import NotFound
from chatcore.instances import EMPTY_JSON_OBJECT, instances_fillable, instances_filled, json_read_plainly
from chatcore.locks import ROW_VERSION, SUMMARY_UNREAD, RowsSeen, rows_seen_usable
from chatcore.models import (
    ApiToken,
    Channel,
    Cursor,
    LLMModel,
    Message,
    ModelRole,
    Summary,
    Team,
    TeamModelRole,
    UsageEntry,
)
from chatcore.prepared import timestamps_parsed_natively


def channel_list(*, user: User) -> QuerySet[Channel]:
    return Channel.objects.filter(owner=user, deleted_at__isnull=True).select_related("persona", "model")


def _channel_owned(using: str, owner_id: int, channel_id: int) -> QuerySet[Channel]:
    rows = Channel.objects.using(using).filter(owner_id=owner_id, deleted_at__isnull=True, pk=channel_id)
    return rows.select_related("persona", "model")[:1]


# The row versions a channel's chat role rests on, on PostgreSQL: the site's chat role and its primary and
# fallback models, each as its id, the transaction that wrote it (xmin) and where it lies (ctid). Any write to
# one of them (a save, a query set's update, raw SQL) makes a new version of the row: a new xmin, or within the
# transaction that wrote the last one a new place (that transaction's earlier versions keep theirs until it
# ends); a deleted or added row changes the text too. No text (NULL) for a team's channel (its own assignment
# may win), for no role, or for a frozen row (PostgreSQL shows every frozen row's xmin as 2, and a place is
# reused once the version there is gone, so two versions of a row could read alike): the role is read then.
_CHAT_ROLE_VERSION = """
    CASE WHEN {channel}.{team} IS NULL THEN (
        SELECT concat_ws('/', r.id, r.xmin, r.ctid, p.id, p.xmin, p.ctid, f.id, f.xmin, f.ctid)
          FROM {role} r
          JOIN {model} p ON p.id = r.{primary}
          LEFT JOIN {model} f ON f.id = r.{fallback}
         WHERE r.{role_name} = %s
           AND r.xmin::text NOT IN ({frozen}) AND p.xmin::text NOT IN ({frozen})
           AND COALESCE(f.xmin::text, '') NOT IN ({frozen})
    ) END"""
# The xmin PostgreSQL shows for a row written at its bootstrap (1) or frozen (2).
_FROZEN_XMINS = "'1', '2'"


def _chat_role_version_sql(using: str) -> str:
    quote = connections[using].ops.quote_name
    role, model = ModelRole._meta, LLMModel._meta

    def column(meta: Any, name: str) -> str:
        return quote(meta.get_field(name).column)

    return _CHAT_ROLE_VERSION.format(
        channel=quote(Channel._meta.db_table),
        team=column(Channel._meta, "team"),
        role=quote(role.db_table),
        model=quote(model.db_table),
        primary=column(role, "primary"),
        fallback=column(role, "fallback"),
        role_name=column(role, "role"),
        frozen=_FROZEN_XMINS,
    )


# The alias of the owner's cursor in a reply's read of its channel (`_channel_seen_for_reply`).
_OWNER_CURSOR = "owner_cursor"


def _channel_seen_for_reply(using: str, owner_id: int, channel_id: int) -> QuerySet[Channel]:
    """`_channel_owned`'s channel with the versions of the chat role's rows (`_CHAT_ROLE_VERSION`), so that
    `model_role_get` can take the role it read before when they are unchanged; and the owner's cursor in it
    (a LEFT JOIN: None when there is none), read as a writer reads it (`locks.channel_lock_with_cursor`'s
    joins), with both rows' versions."""
    quote = connections[using].ops.quote_name
    rows = (
        Channel.objects.using(using)
        .filter(owner_id=owner_id, deleted_at__isnull=True, pk=channel_id)
        .annotate(**{_OWNER_CURSOR: FilteredRelation("cursors", condition=Q(cursors__user_id=owner_id))})
        .select_related(
            "persona", "model", f"{_OWNER_CURSOR}__leaf__root", f"{_OWNER_CURSOR}__summary__through_message"
        )
        .defer(*(f"{_OWNER_CURSOR}__summary__{name}" for name in SUMMARY_UNREAD))
    )
    return rows.annotate(
        chat_role_version=RawSQL(_chat_role_version_sql(using), (ModelRole.Role.CHAT.value,)),
        channel_version=RawSQL(ROW_VERSION.format(table=quote(Channel._meta.db_table)), ()),
        cursor_version=RawSQL(ROW_VERSION.format(table=_OWNER_CURSOR), ()),
    )[:1]


# `channel_list(user=...).get(pk=...)` as a statement built once per database (chatcore.compiled): every channel
# endpoint, a reply among them, starts with it, and building the query set's joins cost more CPU than the row.
_CHANNEL_OWNED = FixedQuery(Channel, _channel_owned, owner_id=int, channel_id=int)
# A reply's read on PostgreSQL, which reads the chat role next and then writes the user's turn: the channel with
# the chat role's versions, and the owner's cursor with both rows' versions (`locks.RowsSeen`), so that the turn
# can be written in one statement without a lock of its own.
_CHANNEL_SEEN_FOR_REPLY = FixedQuery(Channel, _channel_seen_for_reply, owner_id=int, channel_id=int)
# The ids a 64-bit integer column holds: a number outside them names no channel (as the query set's lookup says).
ID_MIN, ID_MAX = -(2**63), 2**63 - 1


def channel_get(*, user: User, channel_id: int, for_reply: bool = False) -> Channel:
    """Anything not the user's own is 'not found': existence is not disclosed. `for_reply`: the channel
    also carries `chat_role_version` on PostgreSQL (see `_CHAT_ROLE_VERSION`; None where there is none), and
    there, in the same statement, the user's cursor with both rows' versions (`channel_rows_seen`)."""
    try:
        if not isinstance(user.pk, int):  # a user model keyed otherwise (or no user): the query set's lookups
            return channel_list(user=user).get(pk=channel_id)
        wanted = int(channel_id)  # as the query set's lookup converts it
        if for_reply and connections[router.db_for_read(Channel)].vendor == "postgresql":
            seen = (
                _CHANNEL_SEEN_FOR_REPLY.fetch(owner_id=user.pk, channel_id=wanted) if ID_MIN <= wanted <= ID_MAX else []
            )
            if not seen:
                raise Channel.DoesNotExist
            return _channel_seen(seen[0])
        found = _CHANNEL_OWNED.fetch(owner_id=user.pk, channel_id=wanted) if ID_MIN <= wanted <= ID_MAX else []
        if not found:
            raise Channel.DoesNotExist
        return found[0]
    except (Channel.DoesNotExist, ValueError, TypeError):
        raise NotFound("Channel not found.") from None


def _channel_seen(channel: Channel) -> Channel:
    """The channel of `_CHANNEL_SEEN_FOR_REPLY`, its owner's cursor and their versions kept as the rows seen
    (`channel_rows_seen`) when there is a cursor and its versions are ones a writer can go by."""
    cursor: Cursor | None = getattr(channel, _OWNER_CURSOR, None)  # unset when the LEFT JOIN found none
    channel_version: str = channel.channel_version  # type: ignore[attr-defined]
    cursor_version: str = channel.cursor_version  # type: ignore[attr-defined]
    if cursor is not None and rows_seen_usable(channel_version=channel_version, cursor_version=cursor_version):
        channel.rows_seen = RowsSeen(  # type: ignore[attr-defined]
            channel=channel, cursor=cursor, channel_version=channel_version, cursor_version=cursor_version
        )
    return channel


def channel_rows_seen(channel: Channel) -> RowsSeen | None:
    """The channel and its owner's cursor as `channel_get(for_reply=True)` read them on PostgreSQL, with
    their rows' versions (`locks.RowsSeen`); None when it read no cursor, or versions no writer can go by."""
    return getattr(channel, "rows_seen", None)


def channel_branch_source(*, channel: Channel, user: User) -> Channel | None:
    """The channel `channel` was branched from, if it is still the user's and not deleted."""
    if not channel.branched_from_id:
        return None
    return channel_list(user=user).filter(pk=channel.branched_from_id).first()


def _one(rows: QuerySet) -> Any:
    """The row a unique key names, or None: `first()` without its ORDER BY, whose compilation costs
    more CPU than the statement on the hot path, and which a unique key makes pointless."""
    found = list(rows[:1])
    return found[0] if found else None


def cursor_get(*, channel: Channel, user: User) -> Cursor | None:
    """One per user and channel (a unique constraint)."""
    return _one(
        Cursor.objects.select_related("leaf", "leaf__root", "summary", "summary__through_message").filter(
            channel=channel, user=user
        )
    )


# What the statement needs of every row, whatever else a caller reads: the walk goes up by the parent and stops at a
# depth, the rows come back ordered by it, and the siblings are counted within the channel.
_PATH_WALK = ("id", "channel_id", "parent_id", "depth")


def _path_fields(only: tuple[str, ...] | None) -> list[Field]:
    """The concrete fields a path reads, in field order: all of them, or those named in `only` (attnames) with
    what the walk needs."""
    fields = Message._meta.concrete_fields
    if only is None:
        return list(fields)
    wanted = set(only) | set(_PATH_WALK)
    return [field for field in fields if field.attname in wanted]


@functools.lru_cache(maxsize=16)
def _path_sql(with_siblings: bool, only: tuple[str, ...] | None = None, vendor: str = "") -> str:
    """The path's statement. On SQLite (`vendor`), a date column is read as its stored text: the driver would
    parse it (its converter for the column's declared type) before Django's converter makes it aware, and
    `_column_converted` does both at once."""
    table = Message._meta.db_table
    fields = _path_fields(only)
    columns = ", ".join(str(f.column) for f in fields)
    prefixed = ", ".join(f"m.{f.column}" for f in fields)
    read = "up.*"
    if vendor == "sqlite" and any(f.get_internal_type() == "DateTimeField" for f in fields):
        read = ", ".join(
            f"CAST(up.{f.column} AS TEXT) AS {f.column}"
            if f.get_internal_type() == "DateTimeField"
            else f"up.{f.column}"
            for f in fields
        )
    siblings = ""
    if with_siblings:
        siblings = f""",
        CASE WHEN up.parent_id IS NULL
            THEN (SELECT COUNT(*) FROM {table} s WHERE s.channel_id = up.channel_id AND s.parent_id IS NULL)
            ELSE (SELECT COUNT(*) FROM {table} s WHERE s.parent_id = up.parent_id) END AS sibling_count,
        CASE WHEN up.parent_id IS NULL
            THEN (SELECT COUNT(*) FROM {table} s
                  WHERE s.channel_id = up.channel_id AND s.parent_id IS NULL AND s.id <= up.id)
            ELSE (SELECT COUNT(*) FROM {table} s WHERE s.parent_id = up.parent_id AND s.id <= up.id) END
            AS sibling_index"""
    return f"""
        WITH RECURSIVE up({columns}) AS (
            SELECT {prefixed} FROM {table} m WHERE m.id = %s AND m.depth > %s
            UNION ALL
            SELECT {prefixed} FROM {table} m JOIN up ON m.id = up.parent_id WHERE m.depth > %s
        )
        SELECT {read}{siblings} FROM up ORDER BY up.depth
    """


def message_path(
    *, leaf_id: int, after_depth: int = -1, with_siblings: bool = False, only: tuple[str, ...] | None = None
) -> list[Message]:
    """Messages from just below `after_depth` down to the leaf, root first.

    With `with_siblings`, each message carries `sibling_index` (1-based) and
    `sibling_count` among the children of its parent. With `only` (attnames), only those fields are read (and
    the id, the channel, the parent and the depth): the others are deferred, as `QuerySet.only` leaves them,
    read on first use with a statement each. A caller that reads thousands of messages and a few of their
    fields (a compaction) spares the columns and the conversions it would not use.
    """
    sql = _path_sql(with_siblings, only, connections[router.db_for_read(Message)].vendor)
    return _messages_of_rows(sql, [leaf_id, after_depth, after_depth], extra=with_siblings, fields=_path_fields(only))


_SIBLING_COLUMNS = ("sibling_count", "sibling_index")


# How SQLite stores a date (Django writes it naive, in UTC): at least "YYYY-MM-DD HH:MM:SS", and the offset
# that makes the same instant aware in UTC.
STORED_DATE_MIN_CHARS = 19
UTC_OFFSET = "+00:00"


def _column_converted(values: Iterable[Any], convs: list[Any], expression: Any, db: Any, field: Field) -> list[Any]:
    """One column of a path's rows through its converters, as `SQLCompiler.apply_converters` gives each value.

    A column at a time, in one comprehension per converter: a path is thousands of rows, and Django's per-row
    generator (a list made of each row, a loop over the positions) cost more than the conversions. Two
    conversions of every message have a shortcut with the same result: a JSON field's empty object is read
    without the JSON decoder (a new dict, as it makes), and SQLite's dates go through `_stored_dates`; any other
    value goes through the converters themselves."""
    if len(convs) == 1 and json_read_plainly(convs[0], field):
        decode = convs[0]
        return [{} if value == EMPTY_JSON_OBJECT else decode(value, expression, db) for value in values]
    if db.vendor == "sqlite" and convs == [db.ops.convert_datetimefield_value]:
        return _stored_dates(list(values), convs[0], expression, db)
    converted = list(values)
    for convert in convs:
        converted = [convert(value, expression, db) for value in converted]
    return converted


def _stored_dates(values: list[Any], convert: Any, expression: Any, db: Any) -> list[Any]:
    """SQLite's stored dates (text, `_path_sql`) as `convert_datetimefield_value` (`convert`) makes them.

    Where the connection's zone is UTC and every date is stored as Django writes it, each is parsed at once
    with that zone's offset (`fromisoformat` makes the same aware date as parsing, then `make_aware`, and
    the same `timezone.utc`): Django's way cost a few calls and a `replace` a date, the largest share of
    a path's conversion. A date stored with a zone of its own, in another form or read as a bare date (no
    time, so no zone) takes Django's way, the whole column with it. An empty date (None) stays None."""
    zone = db.timezone
    if settings.USE_TZ and zone is dt.UTC and values and all(value.__class__ is str for value in values):
        if min(map(len, values)) >= STORED_DATE_MIN_CHARS:
            try:
                parsed = [dt.datetime.fromisoformat(value + UTC_OFFSET) for value in values]
            except ValueError:
                parsed = []
            if parsed and all(date.tzinfo is zone for date in parsed):
                return parsed
    return [None if value is None else convert(value, expression, db) for value in values]


def _messages_of_rows(sql: str, params: list[Any], *, extra: bool, fields: list[Field] | None = None) -> list[Message]:
    """The messages of `sql`'s rows (the columns of `fields`, every concrete field's when not given, in field
    order, then `_SIBLING_COLUMNS` when `extra`),
    as `Message.objects.raw` makes them: the same statement, the database's and the fields' converters, instances
    loaded from the database (`_state`) with the extra columns as attributes.

    Each instance is filled in directly rather than through `Model.__init__` (which sets each field one by one):
    a path is thousands of messages, and that call cost more than reading the rows. The fields' attributes on a
    new instance hold no cached object (a foreign key's id is set as it would be), so the result is the same;
    when anything listens for Message's init signals, the instances are made the ordinary way."""
    alias = router.db_for_read(Message)
    db = connections[alias]
    if fields is None:
        fields = list(Message._meta.concrete_fields)
    with db.cursor() as cursor:
        timestamps_parsed_natively(cursor=cursor, db=db)  # thousands of dates a path: see chatcore.prepared
        cursor.execute(sql, params)
        rows: list[Any] = cursor.fetchall()
    if not rows:
        return []
    compiler = db.ops.compiler("SQLCompiler")(Message.objects.none().query, db, alias)
    converters = compiler.get_converters([field.get_col(Message._meta.db_table) for field in fields])
    if converters:
        columns: list[Any] = list(zip(*rows, strict=True))
        for position, (convs, expression) in converters.items():
            columns[position] = _column_converted(columns[position], convs, expression, db, fields[position])
        rows = list(zip(*columns, strict=True))
    names = [field.attname for field in fields]
    if instances_fillable(Message):
        if extra:  # the sibling columns follow the fields: attributes too
            names.extend(_SIBLING_COLUMNS)
        return instances_filled(Message, alias, names, rows)
    width = len(fields)
    messages = []
    for row in rows:
        message = Message.from_db(alias, names, row[:width])  # the fields not read are deferred
        if extra:
            message.__dict__.update(zip(_SIBLING_COLUMNS, row[width:], strict=True))
        messages.append(message)
    return messages


def message_latest_leaf(*, message_id: int) -> int:
    """The most recent descendant of a message (itself if it has none).

    Children are always created after their parents, so the descendant with
    the highest id has no children: it is a leaf.
    """
    table = Message._meta.db_table
    sql = f"""
        WITH RECURSIVE down(id) AS (
            SELECT id FROM {table} WHERE id = %s
            UNION ALL
            SELECT m.id FROM {table} m JOIN down ON m.parent_id = down.id
        )
        SELECT MAX(id) FROM down
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [message_id])
        return cursor.fetchone()[0]


def summary_boundary_for(*, leaf_id: int) -> Summary | None:
    """The newest non-reverted summary whose message is on the leaf's path.

    Walks up from the leaf and stops at the first covered message, so its cost
    is the stretch since the boundary.
    """
    table = Message._meta.db_table
    summaries = Summary._meta.db_table
    sql = f"""
        WITH RECURSIVE up(id, parent_id, depth) AS (
            SELECT id, parent_id, depth FROM {table} WHERE id = %s
            UNION ALL
            SELECT m.id, m.parent_id, m.depth FROM {table} m JOIN up ON m.id = up.parent_id
            WHERE NOT EXISTS (
                SELECT 1 FROM {summaries} s WHERE s.through_message_id = up.id AND s.reverted_at IS NULL
            )
        )
        SELECT s.id FROM up JOIN {summaries} s ON s.through_message_id = up.id AND s.reverted_at IS NULL
        ORDER BY up.depth DESC, s.id DESC
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [leaf_id])
        row = cursor.fetchone()
    if row is None:
        return None
    return Summary.objects.select_related("through_message").get(pk=row[0])


def message_siblings(*, message: Message) -> QuerySet[Message]:
    siblings = Message.objects.filter(channel_id=message.channel_id)
    if message.parent_id is None:
        return siblings.filter(parent__isnull=True).order_by("id")
    return siblings.filter(parent_id=message.parent_id).order_by("id")


def _site_role(using: str, role: str) -> QuerySet[ModelRole]:
    return ModelRole.objects.using(using).select_related("primary", "fallback").filter(role=role)[:1]


def _team_role(using: str, team_id: int, role: str) -> QuerySet[TeamModelRole]:
    return (
        TeamModelRole.objects.using(using).select_related("primary", "fallback").filter(team_id=team_id, role=role)[:1]
    )


# Read for every reply and gateway call (the models to try): built once per database (chatcore.compiled).
_SITE_ROLE = FixedQuery(ModelRole, _site_role, role=str)
_TEAM_ROLE = FixedQuery(TeamModelRole, _team_role, team_id=int, role=str)


# The site roles read with a version of their rows (`_CHAT_ROLE_VERSION`), by database, role and version: a
# version names one state of the rows, so the role read then is the role now while the version is unchanged.
_ROLES_SEEN: dict[tuple[str, str, str], ModelRole] = {}
# Versions kept at most: old ones are never asked for again once their rows changed.
ROLES_SEEN_MAX = 64


def model_role_get(
    *, role: str, team_id: int | None = None, version: str | None = None
) -> ModelRole | TeamModelRole | None:
    """Who plays `role`: the team's own assignment when `team_id` names a team that has one (a team
    channel's), else the site's; None when neither is set (the offline provider). One per role (and team):
    a unique constraint. `version`: the site role's row versions (`_CHAT_ROLE_VERSION`), read with the
    channel a moment ago; the role read under the same version is taken without a statement (a copy, so
    that no caller shares instances with another)."""
    if version is not None and team_id is None:
        key = (router.db_for_read(ModelRole), role, version)
        seen = _ROLES_SEEN.get(key)
        if seen is None:
            found_site = _SITE_ROLE.fetch(role=role)
            if not found_site:
                return None
            if len(_ROLES_SEEN) >= ROLES_SEEN_MAX:
                _ROLES_SEEN.clear()
            seen = _ROLES_SEEN[key] = found_site[0]
        return _role_copy(seen)
    if team_id is not None:
        found: list = _TEAM_ROLE.fetch(team_id=team_id, role=role)
        if found:
            return found[0]
    found = _SITE_ROLE.fetch(role=role)
    return found[0] if found else None


def _role_copy(role: ModelRole) -> ModelRole:
    """`role` with its own instances of itself and of its models, as a fresh read gives."""
    copied = copy.copy(role)  # Model.__getstate__ gives the copy a state of its own
    copied.primary = copy.copy(role.primary)
    copied.fallback = copy.copy(role.fallback) if role.fallback is not None else None
    return copied


def chat_model_default_name() -> str:
    """The model a channel without one of its own talks to: the chat role's
    primary, else the built-in offline provider (as the reply path resolves it)."""
    role = model_role_get(role=ModelRole.Role.CHAT)
    return role.primary.name if role is not None else "offline"


def channel_context_budget(*, channel: Channel) -> int:
    """Channel's model → the utility model (its team's, else the site's) → the global default."""
    if channel.model is not None and channel.model.context_window:
        return channel.model.context_window
    utility = model_role_get(role=ModelRole.Role.UTILITY, team_id=channel.team_id)
    if utility is not None and utility.primary.context_window:
        return utility.primary.context_window
    return conf.DEFAULT_CONTEXT_BUDGET


def summaries_for_channel(*, channel: Channel) -> QuerySet[Summary]:
    return Summary.objects.filter(channel=channel).select_related("through_message", "created_by")


def llm_models_active() -> QuerySet[LLMModel]:
    return LLMModel.objects.filter(is_active=True)


def message_sibling_step(*, message: Message, step: int) -> int:
    """The id of the sibling `step` places from `message` (‹ is -1, › is +1), kept within the first and last."""
    if not step:
        return message.pk
    siblings = list(message_siblings(message=message).values_list("pk", flat=True))
    index = siblings.index(message.pk) + step
    return siblings[max(0, min(index, len(siblings) - 1))]


def summary_earlier_boundary(*, summary: Summary) -> Summary | None:
    """The summary in force just above this one on its path (reverted ones are skipped)."""
    previous = summary.previous
    while previous is not None and previous.reverted_at is not None:
        previous = previous.previous
    return previous


def message_get(*, channel: Channel, message_id: int) -> Message | None:
    return Message.objects.filter(channel=channel, pk=message_id).first()


def api_token_list(*, user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("-created", "-id")


def api_token_get(*, user: User, token_id: int) -> ApiToken:
    """Someone else's token is 'not found', like a channel."""
    try:
        return api_token_list(user=user).get(pk=token_id)
    except (ApiToken.DoesNotExist, ValueError, TypeError):
        raise NotFound("Token not found.") from None


def usage_list(*, user: User, team: Team | None = None) -> QuerySet[UsageEntry]:
    """A person's own usage rows, newest first; with `team` (whose usage the caller may read), every row
    of the team's channels, whoever made them."""
    rows = UsageEntry.objects.filter(team=team) if team is not None else UsageEntry.objects.filter(user=user)
    return rows.order_by("-created_at", "-id")
