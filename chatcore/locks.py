"""Row locks on a channel: how every writer that changes a channel's tree, cursors or summaries waits
for the others, in every process (invariant 4 rests on the lease; these keep each write whole).

The order is fixed here so that two writers never wait on each other: the channel's row first,
then rows that belong to it (its summaries, in id order), never the other way round. Nothing else in the apps
takes these locks (`tests/chatcore/test_locks.py` checks the source), so the order lives in code,
not in a comment repeated at each writer. A lock lasts until the caller's transaction ends; outside
one, Django refuses `select_for_update`. On SQLite a write transaction holds the whole database
(IMMEDIATE, project settings), which serialises the same writers.
"""

import dataclasses
from collections.abc import Callable
from typing import Any

from django.db import connections
from django.db.models import QuerySet, Subquery

from chatcore.compiled import FixedQuery
from chatcore.models import Channel, Cursor, Summary


def _channel_locked(using: str, channel_id: int) -> QuerySet[Channel]:
    rows = Channel.objects.using(using).select_for_update(of=("self",)).select_related("model", "persona")
    return rows.filter(pk=channel_id)[:1]


_CHANNEL_LOCK = FixedQuery(Channel, _channel_locked, channel_id=int)


def channel_lock(*, channel_id: int) -> Channel:
    """Lock the channel's row and return it as it is now, its model and persona loaded (writers read
    them for the context budget that the pressure columns divide by). Channel.DoesNotExist when gone."""
    found = _CHANNEL_LOCK.fetch(channel_id=channel_id)
    if not found:
        raise Channel.DoesNotExist(f"{Channel._meta.object_name} matching query does not exist.")
    return found[0]


def channel_lock_with_cursor(*, channel_id: int, user_id: int) -> tuple[Channel, Cursor | None]:
    """`channel_lock`, and the user's cursor read in the same statement (as `selectors.cursor_get` gives it),
    for a writer that moves it (a message appended).

    The cursor's row is locked too, after the channel's: `FOR UPDATE OF` names them in that order, which is
    the order PostgreSQL takes them in, and every other writer of a cursor holds the channel's lock first.
    When the statement waited for the lock, PostgreSQL reads the locked rows again as they are now, but the
    rows joined to them as they were when it began: so the statement joins only messages, which never
    change, and a cursor another writer moved meanwhile no longer joins its old leaf: no row comes back.
    Then, as when the user has no cursor, the cursor is None and the channel comes from `channel_lock`
    alone: the caller reads the cursor under the lock. The summary in force comes in the same statement,
    though it can change (written, reverted, its quotes blanked): every such change moves each cursor of
    the channel too (`services.cursors_refresh`, under this lock), and on PostgreSQL a cursor whose row
    changed while the statement waited does not come back either (UNCHANGED_SINCE_SNAPSHOT), so a summary
    read with the cursor is the one in force. Channel.DoesNotExist when gone."""
    found = _LOCK_WITH_CURSOR.fetch(channel_id=channel_id, user_id=user_id)
    if not found:
        return channel_lock(channel_id=channel_id), None
    return found[0].channel, found[0]


def lock_with_cursor_query(channel: Callable[..., QuerySet[Any, int]], **kinds: type) -> FixedQuery[Cursor]:
    """`channel_lock_with_cursor`'s statement for the channel whose id `channel(using, **values)` selects (a query
    set of at most one id; `kinds` name its values, as `FixedQuery` takes them): a writer that must look for
    its channel first (the gateway's resent history) finds and locks it in one statement instead of two. The
    id is worked out when the statement begins, before the lock is waited for, as a lookup sent just before
    the lock would be: what the writer reads of the channel's contents it reads under the lock."""

    def build(using: str, user_id: int, **values: Any) -> QuerySet[Cursor]:
        return _cursor_locked(using, Subquery(channel(using, **values)), user_id)

    return FixedQuery(Cursor, build, user_id=int, **kinds)


def channel_lock_with_cursor_found(
    *, query: FixedQuery[Cursor], user_id: int, **values: Any
) -> tuple[Channel, Cursor] | None:
    """`channel_lock_with_cursor` for the channel that `query` (`lock_with_cursor_query`) finds with `values`;
    None when it finds none, or the user has no cursor there, or it moved while the lock was awaited (as
    `channel_lock_with_cursor` returns no cursor then): the caller looks for the channel and locks it apart."""
    found = query.fetch(user_id=user_id, **values)
    return (found[0].channel, found[0]) if found else None


def _cursor_locked(using: str, channel_id: int | Subquery, user_id: int) -> QuerySet[Cursor]:
    rows = (
        Cursor.objects.using(using)
        .select_for_update(of=("channel", "self"))
        .select_related("channel__model", "channel__persona", "leaf__root", "summary__through_message")
        .defer(*(f"summary__{name}" for name in SUMMARY_UNREAD))
        .filter(channel_id=channel_id, user_id=user_id)
    )
    connection = connections[using]
    if connection.vendor == "postgresql":
        rows = rows.extra(
            where=[UNCHANGED_SINCE_SNAPSHOT.format(table=connection.ops.quote_name(Cursor._meta.db_table))]
        )
    return rows[:1]


# What a writer and the context read of the summary in force are its text, its size and its message; the
# rest of its row stays out of the lock's statement, which is sent for every message appended: PostgreSQL's
# driver (psycopg) keeps its parse of a statement of up to 4,096 characters and parses a longer one again
# each time it is sent (tests/chatcore/test_locks.py keeps the statement under that length).
SUMMARY_READ = ("id", "channel", "through_message", "content", "tokens", "reverted_at")
# Derived rather than listed, so that a field added to Summary stays out of the statement too.
SUMMARY_UNREAD = tuple(field.name for field in Summary._meta.concrete_fields if field.name not in SUMMARY_READ)

# The cursor's row as locked is the version the statement's snapshot holds: a subquery is evaluated with
# that snapshot even when PostgreSQL checks the statement's conditions again on a row version that
# committed while it waited (its transaction id, xmin, differs then).
UNCHANGED_SINCE_SNAPSHOT = "{table}.xmin = (SELECT c.xmin FROM {table} c WHERE c.id = {table}.id)"

# Built once per database (chatcore.compiled): every message appended sends it.
_LOCK_WITH_CURSOR = FixedQuery(Cursor, _cursor_locked, channel_id=int, user_id=int)


def summary_lock(*, summary: Summary) -> tuple[Channel, Summary]:
    """Lock the summary's channel, then the summary; both as they are now."""
    channel = channel_lock(channel_id=summary.channel_id)
    return channel, Summary.objects.select_for_update().get(pk=summary.pk)


def summaries_lock(*, channel: Channel, through_message_ids: list[int]) -> list[Summary]:
    """Lock the summaries of `channel` through any of these messages, in id order, and return them. The
    channel is what `channel_lock` or `summary_lock` returned: its row is locked first."""
    rows = Summary.objects.filter(channel_id=channel.pk, through_message_id__in=through_message_ids)
    return list(rows.order_by("pk").select_for_update())


# A row's version on PostgreSQL: the transaction that wrote it (xmin) and where it lies (ctid). Any write to the
# row makes a new version: a new xmin, or within the transaction that wrote the last one a new place (that
# transaction's earlier versions keep theirs until it ends). Freezing keeps a row's own xmin on PostgreSQL 9.4
# and later, but rows frozen by an older server show 1 or 2 whichever transaction wrote them, and a place is
# reused once the version there is gone: such a version is not one a writer can go by (`rows_seen_usable`).
ROW_VERSION = "concat_ws('/', {table}.xmin, {table}.ctid)"
_FROZEN_VERSION_PREFIXES = ("1/", "2/")


@dataclasses.dataclass(frozen=True)
class RowsSeen:
    """A channel and a user's cursor in it (its leaf, the leaf's root and the summary in force loaded, as
    `channel_lock_with_cursor` gives them), as one statement read them, with their rows' versions
    (`ROW_VERSION`) at that moment.

    A writer that would lock them, read them and then write what follows from them may instead take their
    locks in its write statement on condition that both rows are still those versions (`locked_if_unchanged`):
    then nothing a writer of the channel changes has changed since the read (every such writer changes the
    channel's row or the cursor's under the channel's lock: the pressure, the last activity, the cursor moved
    or refreshed when a summary changes), so what the writer worked out from the read is what it would have
    worked out under the lock, and the statement writes it; otherwise it writes nothing and the writer takes
    the lock as usual. One statement instead of the lock's, and, outside a transaction, none to begin or end
    one. PostgreSQL only."""

    channel: Channel
    cursor: Cursor
    channel_version: str
    cursor_version: str


def rows_seen_usable(*, channel_version: str | None, cursor_version: str | None) -> bool:
    """Whether these versions (`ROW_VERSION`) tell a row's versions apart: known, and not frozen."""
    return all(
        version is not None and not version.startswith(_FROZEN_VERSION_PREFIXES)
        for version in (channel_version, cursor_version)
    )


def locked_if_unchanged(seen: RowsSeen, *, quote: Callable[[str], str]) -> tuple[str, list]:
    """The part of a data-modifying WITH (`locked AS (...)`, a row when it holds the locks) that locks the
    channel's row and then the cursor's, as `channel_lock_with_cursor` does, if both are still the versions
    `seen` read; none otherwise. When the statement waited for a lock, PostgreSQL checks the condition again on
    the rows as they are now: a row another writer changed meanwhile is another version, and nothing comes
    back. The statement's writes select from it, so that they happen only under the locks."""
    channel, cursor = quote(Channel._meta.db_table), quote(Cursor._meta.db_table)
    sql = (
        f"locked AS (SELECT {channel}.id FROM {channel} JOIN {cursor} ON {cursor}.channel_id = {channel}.id "
        f"WHERE {channel}.id = %s AND {cursor}.id = %s "
        f"AND {ROW_VERSION.format(table=channel)} = %s AND {ROW_VERSION.format(table=cursor)} = %s "
        f"FOR UPDATE OF {channel}, {cursor})"
    )
    return sql, [seen.channel.pk, seen.cursor.pk, seen.channel_version, seen.cursor_version]
