"""The database's own full-text engines behind one interface.

PostgreSQL: `search_vector @@ plainto_tsquery(config, word)` on the GIN
index (phrases: `phraseto_tsquery`). SQLite: `chatcore_message_fts MATCH
'"word"'` on the FTS5 index. Both stem with the index's language, and
both are always filtered to one channel, the caller's path (its segments,
see chatcore.search.schema), the roles and dates asked for and, for the
summarized part only, a depth bound. Ranking happens above this module, the
same for both (chatcore.search.ranking): here only matching and counting.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
from collections.abc import Iterator

from django.db import IntegrityError, OperationalError, connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from chatcore import conf
from chatcore.prepared import prepared_cursor
from chatcore.search import schema
from chatcore.search.schema import FTS_TABLE, TABLE

# SQLite: how long a search waits for the write lock to index the messages still pending (chatcore.search.schema:
# the app's writers hold it for a few statements each); past it, or where the database cannot be written at all,
# the search covers its channel's pending messages another way (`_sqlite_channel_index`).
PENDING_LOCK_WAIT_MS = 1_000


@contextlib.contextmanager
def index_covering(*, channel_id: int, pending: bool | None = None) -> Iterator[None]:
    """While the block runs, every message of the channel is in the full-text index, as if each were indexed by
    the statement that wrote it. On SQLite, where the triggers leave a message's words for later, the pending
    messages are indexed first, all of them in one transaction (one segment of the index, however many); when
    that write cannot be made and some are the channel's, the block reads a temporary index of the channel's
    messages instead.
    `pending`: whether messages are pending, when the caller already read it (chatcore.search.rows.path_state);
    None: ask the database."""
    if connection.vendor != "sqlite" or _sqlite_channel_indexed(channel_id=channel_id, pending=pending):
        yield
        return
    with _sqlite_channel_index(channel_id=channel_id):
        yield


def _sqlite_channel_indexed(*, channel_id: int, pending: bool | None) -> bool:
    """Index the pending messages; whether the channel's are all in the index then. When the write lock is
    taken, the channel's messages are looked at first: with none pending the search goes on at once, else it
    waits up to PENDING_LOCK_WAIT_MS for the lock. False: locked past that wait, or the database cannot be
    written, with some of the channel's pending (nothing is changed)."""
    if pending is False:
        return True
    with connection.cursor() as cursor:
        if pending is None:
            cursor.execute(schema.SQLITE_ANY_PENDING)
            if not cursor.fetchone()[0]:
                return True
        if connection.in_atomic_block:  # the transaction holds the write lock already (IMMEDIATE transactions)
            return _sqlite_index_pending(cursor)
        cursor.execute("PRAGMA busy_timeout")
        (configured,) = cursor.fetchone()
        try:
            for wait in (0, PENDING_LOCK_WAIT_MS):
                cursor.execute(f"PRAGMA busy_timeout = {int(wait)}")
                if _sqlite_index_pending(cursor):
                    return True
                if not wait:
                    cursor.execute(schema.SQLITE_CHANNEL_PENDING, [channel_id])
                    if not cursor.fetchone()[0]:
                        return True
            return False
        finally:
            cursor.execute(f"PRAGMA busy_timeout = {int(configured)}")


def _sqlite_index_pending(cursor) -> bool:
    """Index every pending message in one transaction; False when locked past the connection's busy timeout or
    when the database cannot be written (nothing is changed then)."""
    try:
        with transaction.atomic():
            try:
                with transaction.atomic():
                    cursor.execute(schema.SQLITE_INDEX_PENDING[0])
            except IntegrityError:  # some were in the index already (see SQLITE_INDEX_PENDING_REPLACING)
                cursor.execute(schema.SQLITE_INDEX_PENDING_REPLACING)
            cursor.execute(schema.SQLITE_INDEX_PENDING[1])
    except OperationalError:  # locked, or a read-only database
        return False
    return True


@contextlib.contextmanager
def _sqlite_channel_index(*, channel_id: int) -> Iterator[None]:
    """The block's statements read a temporary full-text index of the channel's messages: a table of the
    connection's own (no write to the database), named as the index and made with its tokenizer, which
    unqualified names find before the database's. It costs an indexing of the whole channel, so it is only the
    way out when its pending messages cannot be indexed."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM main.sqlite_master WHERE type = 'table' AND name = %s", [FTS_TABLE])
        (made,) = cursor.fetchone()
        cursor.execute(made.replace(f"CREATE VIRTUAL TABLE {FTS_TABLE}", f"CREATE VIRTUAL TABLE temp.{FTS_TABLE}", 1))
        try:
            cursor.execute(schema.SQLITE_INDEX_CHANNEL, [channel_id])
            yield
        finally:
            cursor.execute(f"DROP TABLE temp.{FTS_TABLE}")


@dataclasses.dataclass(frozen=True)
class Segment:
    """One stretch of a path between branch points (chatcore.search.schema): the messages of segment
    `segment` from `first_depth` to `last_depth` are on the path, so a hit is on it when its segment
    and depth fall in one of these."""

    segment: int
    first_depth: int
    last_depth: int


@dataclasses.dataclass(frozen=True)
class Filters:
    """What every query of one search shares."""

    channel_id: int
    segments: tuple[Segment, ...]
    max_depth: int | None = None
    roles: tuple[str, ...] = ()
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    # The lowest and highest id on the path (its root's and its leaf's: a message is written after its
    # parent, so ids grow along a path). SQLite's FTS5 index is one for all channels and walks a word's
    # matches in id order: bounded, it starts at this path's instead of crossing every other channel's.
    id_range: tuple[int, int] | None = None

    def sql(self, *, matches_only: bool = False) -> tuple[str, list]:
        """The WHERE fragment of these filters, and its parameters. `matches_only`: on PostgreSQL too, the
        path's columns are kept out of the plan (as always on SQLite), so that the full-text index alone
        drives it whatever the values (the one plan a prepared statement keeps: see `candidates_each`)."""
        # SQLite: a unary + keeps these columns' indexes out of the plan, so that the engine's matches
        # drive it, one primary-key lookup each (the plan stays right as long as the statistics, if any,
        # are not those of a near-empty table: ANALYZE after a large import, as the benchmark does).
        plus = "+" if connection.vendor == "sqlite" or matches_only else ""
        parts = [f"{plus}m.channel_id = %s", "m.deleted_at IS NULL"]
        params: list = [self.channel_id]
        path = []
        for segment in self.segments:
            last = segment.last_depth if self.max_depth is None else min(segment.last_depth, self.max_depth)
            if last >= segment.first_depth:
                path.append(f"({plus}m.segment = %s AND {plus}m.depth <= %s)")
                params += [segment.segment, last]
        parts.append("(" + (" OR ".join(path) or "1 = 0") + ")")
        if self.id_range is not None and connection.vendor == "sqlite":
            parts.append(f"{FTS_TABLE}.rowid BETWEEN %s AND %s")
            params += list(self.id_range)
        if self.roles:
            parts.append("m.role IN (" + ", ".join(["%s"] * len(self.roles)) + ")")
            params += list(self.roles)
        if self.since is not None:
            parts.append("m.created_at >= %s")
            params.append(self.since)
        if self.until is not None:
            parts.append("m.created_at < %s")
            params.append(self.until)
        return " AND ".join(parts), params


# A matching message as the ranking reads it: the row the engine's statement sends, as it comes (hundreds per
# search; a named tuple made of each cost more than the ranking's own work). Its columns, in order: the id, the
# depth, the tokens, the creation time as the driver returns it (NULL unless the query names a period: read it
# through `created_at`) and the speaker's name ('' or NULL when none). A row may carry more columns after these.
Candidate = tuple
ID, DEPTH, TOKENS, CREATED_AT, SPEAKER = range(5)
CANDIDATE_COLUMNS = 5


def created_at(candidate: Candidate) -> dt.datetime | None:
    """The candidate's creation time, aware (None when its statement did not read it)."""
    return _aware(candidate[CREATED_AT])


def segments_cte(leaf: str) -> str:
    """`segs(segment, first_depth, last_depth, start_parent)`: the segments of the path from the root to the
    message whose id is the SQL expression `leaf`, one row per branch point (for a WITH RECURSIVE)."""
    return f"""segs(segment, first_depth, last_depth, start_parent) AS (
            SELECT m.segment, s.depth, m.depth, s.parent_id
            FROM {TABLE} m JOIN {TABLE} s ON s.id = m.segment WHERE m.id = {leaf}
            UNION ALL
            SELECT p.segment, s.depth, p.depth, s.parent_id
            FROM segs JOIN {TABLE} p ON p.id = segs.start_parent JOIN {TABLE} s ON s.id = p.segment
        )"""


def path_segments(*, leaf_id: int) -> tuple[Segment, ...]:
    """The segments of the path from the root to `leaf_id`, leaf first: one row per branch point."""
    sql = f"WITH RECURSIVE {segments_cte('%s')} SELECT segment, first_depth, last_depth FROM segs"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, [leaf_id])
        return tuple(Segment(*row) for row in cursor.fetchall())


def _fts5_literal(unit: str) -> str:
    return '"' + unit.replace('"', " ") + '"'


def _tsquery(unit: str) -> tuple[str, list]:
    """PostgreSQL: the tsquery of one unit (a phrase keeps its words' order), and its parameters."""
    function = "phraseto_tsquery" if " " in unit else "plainto_tsquery"
    return f"{function}(%s::regconfig, %s)", [conf.SEARCH_LANGUAGE, unit]


def _tsqueries(units: tuple[str, ...], operator: str) -> tuple[str, list]:
    """PostgreSQL: one tsquery of `units` joined by AND or OR, and its parameters."""
    pieces, params = [], []
    for unit in units:
        piece, piece_params = _tsquery(unit)
        pieces.append(piece)
        params += piece_params
    joiner = " && " if operator == "AND" else " || "
    return joiner.join(pieces), params


def _match(units: tuple[str, ...], operator: str) -> tuple[str, list]:
    """The WHERE fragment matching `units` joined by AND or OR, and its parameters."""
    if connection.vendor == "postgresql":
        tsquery, params = _tsqueries(units, operator)
        return f"m.search_vector @@ ({tsquery})", params
    return f"{FTS_TABLE} MATCH %s", [f" {operator} ".join(_fts5_literal(u) for u in units)]


def flags_in_rows() -> bool:
    """Whether the candidates' rows say which of the units each matches (PostgreSQL: a test of the row's
    search_vector, no index lookup), so that `members` is not needed. FTS5 cannot test one row against a
    query in a select list."""
    return connection.vendor == "postgresql"


def _flags(units: tuple[str, ...], vector: str) -> tuple[str, list]:
    """Select-list fragment (leading comma) of one boolean per unit: does the row's `vector` match it.
    Each tsquery is a scalar subquery, worked out once per statement instead of once per row."""
    pieces, params = [], []
    for unit in units:
        piece, piece_params = _tsquery(unit)
        pieces.append(f", {vector} @@ (SELECT {piece})")
        params += piece_params
    return "".join(pieces), params


def _members_from_flags(units: tuple[str, ...], rows, first: int) -> dict[str, set[int]]:
    """{unit: ids of the rows whose flag for it is true}; the flags are the columns from `first` on,
    the id is column `first - CANDIDATE_COLUMNS`."""
    id_column = first - CANDIDATE_COLUMNS
    return {unit: {row[id_column] for row in rows if row[first + position]} for position, unit in enumerate(units)}


def _from() -> str:
    if connection.vendor == "postgresql":
        return f"{TABLE} m"
    return f"{FTS_TABLE} CROSS JOIN {TABLE} m ON m.id = {FTS_TABLE}.rowid"


def _speaker_column(*, matched: bool = True) -> str:
    """The speaker's name of the row `m`; on SQLite, `matched` when the statement's FTS5 table is in its FROM
    (else the name is looked up by id)."""
    if connection.vendor == "postgresql":
        return "coalesce(m.metadata->>'speaker', '')"
    # Reading an FTS5 column fetches its row from the index's content table: half of what a match cost.
    # Only a message whose metadata names a speaker has one there ('' otherwise, as the trigger stores it).
    speaker = f"{FTS_TABLE}.speaker" if matched else f"(SELECT f.speaker FROM {FTS_TABLE} f WHERE f.rowid = m.id)"
    return f"""CASE WHEN instr(m.metadata, '"speaker"') > 0 THEN {speaker} ELSE '' END"""


def _aware(value) -> dt.datetime | None:
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and timezone.is_naive(value):
        value = timezone.make_aware(value, dt.UTC)
    return value


def _candidate_select(dated: bool, named: bool = False, matched: bool = True) -> str:
    """The candidate's columns of the row `m` (`matched`: see _speaker_column)."""
    # The date is read only when the query names a period: converting it is most of what a row costs here.
    created_at = "m.created_at" if dated else "NULL"
    speaker = _speaker_column(matched=matched)
    if named:
        return f"m.id, m.depth, m.tokens, {created_at} AS created_at, {speaker} AS speaker"
    return f"m.id, m.depth, m.tokens, {created_at}, {speaker}"


def candidates(
    *,
    units: tuple[str, ...],
    operator: str,
    filters: Filters,
    limit: int,
    recent_first: bool = False,
    dated: bool = True,
    flagged: bool = True,
) -> tuple[list[Candidate], dict[str, set[int]] | None]:
    """Messages matching the units (all of them with AND, any with OR), at most `limit`; without `dated`,
    their `created_at` is left None. With them, where `flags_in_rows` and unless not `flagged`, which of
    them match each unit (else None: ask `members`)."""
    flagged = flagged and flags_in_rows()
    if recent_first and connection.vendor == "postgresql" and filters.id_range is not None:
        rows = _recent_by_id_spans(
            units=units, operator=operator, filters=filters, limit=limit, dated=dated, flagged=flagged
        )
        return rows, _members_from_flags(units, rows, CANDIDATE_COLUMNS) if flagged else None
    match, match_params = _match(units, operator)
    where, where_params = filters.sql()
    flags, flag_params = _flags(units, "m.search_vector") if flagged else ("", [])
    order = ""
    if recent_first:
        # On one path a message's id is greater than its parent's (it is written after it), so the path's
        # newest are its highest ids: FTS5 walks its matches in descending rowid and stops at the limit,
        # where ordering by depth read and sorted all of them.
        order = "ORDER BY m.depth DESC" if connection.vendor == "postgresql" else f"ORDER BY {FTS_TABLE}.rowid DESC"
    select = f"SELECT {_candidate_select(dated)}{flags} FROM {_from()} WHERE {match} AND {where}"
    with connection.cursor() as cursor:
        cursor.execute(f"{select} {order} LIMIT %s", [*flag_params, *match_params, *where_params, limit])
        rows = cursor.fetchall()
    return rows, _members_from_flags(units, rows, CANDIDATE_COLUMNS) if flagged else None


# PostgreSQL: a common word's most recent matches are read from the newest ids down, in spans. GIN gives a
# word's matches in no useful order, so the plain query fetched every one of them (thousands of rows for a
# common word) to keep the newest few hundred. The first span (the probe) is RECENT_PROBE_IDS ids below the
# leaf; the matches found there give the word's rate per id, from which the second span is sized to hold what
# is still missing (times RECENT_SPAN_MARGIN); what is still missing after it comes from the rest of the path.
RECENT_PROBE_IDS = 4_096
RECENT_SPAN_MARGIN = 1.3
# A span's range of primary keys costs about one fetched match per this many ids: a span that would leave
# fewer matches unread than that is not worth reading apart, and the rest of the path is read at once.
RECENT_KEYS_PER_FETCH = 32


def _recent_by_id_spans(
    *, units: tuple[str, ...], operator: str, filters: Filters, limit: int, dated: bool, flagged: bool
) -> list:
    """The path's matches of the units newest first, at most `limit`: what one query ordered by depth gives,
    read in spans of ids from the path's highest down, so that a word with thousands of matches fetches
    about `limit` of them. Ids grow along a path, so the spans are stretches of the path, newest first, and
    their rows in turn are the path's newest.

    One prepared statement (chatcore.prepared) with one plan for all values: the probe, the span its count
    sizes (worked out in SQL) and the rest of the path below what they read, each arm run only when the ones
    before it fell short. Only the full-text index and the primary key can drive it (the path's columns are
    kept out of the plan, see `Filters.sql`), and every bound and word is a scalar subquery that no plan
    knows, so that the plan made without the values is the one made with them: in a span the full-text
    index's matches intersected with the key's range (a BitmapAnd), the matches outside it never fetched;
    below the spans the full-text index alone (the id is only tested, `m.id + 0`: with the key's range beside
    it the planner would intersect the index with most of the key, at a loss)."""
    lowest, highest = filters.id_range or (0, 0)
    tsquery, match_params = _tsqueries(units, operator)
    where, where_params = filters.sql(matches_only=True)
    flags, flag_params = _flags(units, "m.search_vector") if flagged else ("", [])
    select = (
        f"SELECT {_candidate_select(dated)}{flags} FROM {_from()} "
        f"WHERE m.search_vector @@ (SELECT {tsquery}) AND {where}"
    )
    params = [*flag_params, *match_params, *where_params]
    order = "ORDER BY m.depth DESC"
    low = highest - RECENT_PROBE_IDS + 1
    if low <= lowest:  # a short path: the probe would read all of it
        with prepared_cursor() as cursor:
            cursor.execute(f"{select} {order} LIMIT {int(limit)}", params)  # noqa: S608 (values as parameters)
            return cursor.fetchall()
    # The ids of the span after a probe that found n matches (NULL: no span, the rest of the path is read below
    # the probe): sized by the probe's rate to hold what is missing, none when it would reach the path's start
    # or cost more in keys than the matches it leaves unread.
    cap, rate = int(limit), f"(n::float8 / {int(RECENT_PROBE_IDS)})"
    span = f"(floor(({cap} - n)::float8 / {rate} * {float(RECENT_SPAN_MARGIN)!r})::bigint + 1)"
    # (The CASEs nest so that the rate is divided by only when the probe found something: a CASE is the one
    # order of evaluation SQL promises.)
    sized = (
        f"CASE WHEN n > 0 AND n < {cap} THEN CASE WHEN {span} < %s::bigint AND {span}::float8 / "
        f"{float(RECENT_KEYS_PER_FETCH)!r} < {rate} * %s::bigint - ({cap} - n) THEN {span} END END"
    )
    statement = (
        f"WITH probe AS MATERIALIZED ({select} AND m.id BETWEEN (SELECT %s::bigint) AND (SELECT %s::bigint) "
        f"{order} LIMIT {cap}), "
        f"bounds AS MATERIALIZED (SELECT n, {sized} AS span FROM (SELECT count(*) AS n FROM probe) AS counted), "
        f"spanned AS MATERIALIZED ({select} AND (SELECT span IS NOT NULL FROM bounds) "
        f"AND m.id BETWEEN (SELECT %s::bigint - span FROM bounds) AND (SELECT %s::bigint - 1) "
        f"{order} LIMIT (SELECT {cap} - n FROM bounds)), "
        f"rest AS ({select} AND (SELECT n FROM bounds) + (SELECT count(*) FROM spanned) < {cap} "
        f"AND m.id + 0 < (SELECT %s::bigint - coalesce(span, 0) FROM bounds) "
        f"{order} LIMIT (SELECT {cap} - n FROM bounds) - (SELECT count(*) FROM spanned)) "
        "SELECT * FROM probe UNION ALL SELECT * FROM spanned UNION ALL SELECT * FROM rest"
    )
    left = low - lowest  # the path's ids below the probe
    values = [*params, low, highest, left, left, *params, low, low, *params, low]
    with prepared_cursor() as cursor:
        cursor.execute(statement, values)  # noqa: S608 (fragments built here, values as parameters)
        return cursor.fetchall()


@dataclasses.dataclass(frozen=True)
class Each:
    """What `candidates_each` found."""

    counts: dict[str, int]  # per unit, its matches counted up to the limit
    found: dict[str, list[Candidate]]  # per unit under the limit, its matches
    # Where `flags_in_rows`: per unit, which of the messages in `found` (all units') match it; else None.
    members: dict[str, set[int]] | None


def candidates_each(*, units: tuple[str, ...], filters: Filters, limit: int, dated: bool = True) -> Each:
    """For each unit alone, how many messages match it (counted up to `limit`) and, for the units under
    `limit`, those messages: what `candidates` gives for each, in one statement (one round trip however
    many words the query has). A unit that reaches `limit` is only counted: its arm sends back one row (its
    count), not its matches, and on PostgreSQL the others' rows say which units they match."""
    if not units:
        return Each({}, {}, {} if flags_in_rows() else None)
    flagged = flags_in_rows()
    # PostgreSQL: the statement is prepared (chatcore.prepared), its planning being about a third of what it
    # cost. Only the full-text index can drive it (the path's columns are kept out of the plan, each word's
    # tsquery is a scalar subquery, the limit is written in), so that a plan made without the values is the
    # one a plan made with them would be: PostgreSQL keeps that one plan. With the path's index in reach, the
    # plan made without the values intersected it with the word's matches and read the whole path's keys.
    where, where_params = filters.sql(matches_only=flagged)
    vector = ", m.search_vector AS vector" if flagged else ""
    arms, params = [], []
    ctes: list[str] = []
    cte_params: list = []
    for position, unit in enumerate(units):
        if not flagged:
            match, match_params = _match((unit,), "AND")
            # FTS5: the arm's ids are kept in SQLite (a materialized CTE, counted there), and its rows are
            # read only when it stays under the limit; a common word sends back its count alone, where its
            # rows cost more to fetch than to find. The window functions below cost FTS5 more than they spare.
            ctes.append(
                f"ids{position} AS MATERIALIZED (SELECT m.id AS id FROM {_from()} WHERE {match} AND {where} "
                f"LIMIT %s), count{position} AS MATERIALIZED (SELECT count(*) AS n FROM ids{position})"
            )
            cte_params += [*match_params, *where_params, limit]
            count = f"(SELECT n FROM count{position})"
            # (The rows' select first: the statement's columns take their declared types, which the driver's
            # conversions follow, from its first select.)
            arms.append(
                f"SELECT {position}, {count}, {_candidate_select(dated, matched=False)} "
                f"FROM ids{position} CROSS JOIN {TABLE} m ON m.id = ids{position}.id WHERE {count} < %s "
                f"UNION ALL SELECT {position}, n, NULL, NULL, NULL, NULL, NULL FROM count{position} WHERE n >= %s"
            )
            params += [limit, limit]
            continue
        piece, match_params = _tsquery(unit)
        match = f"m.search_vector @@ (SELECT {piece})"
        flags, flag_params = _flags(units, "arm.vector")
        # The window functions see the arm's rows after its LIMIT: its count, and a row to carry it.
        arms.append(
            f"SELECT * FROM (SELECT {position} AS unit, arm.matches, "
            f"arm.id, arm.depth, arm.tokens, arm.created_at, arm.speaker"
            f"{flags} FROM (SELECT count(*) OVER () AS matches, row_number() OVER () AS place, "
            f"inner{position}.* FROM (SELECT {_candidate_select(dated, named=True)}{vector} FROM {_from()} "
            f"WHERE {match} AND {where} LIMIT {int(limit)}) AS inner{position}) AS arm "
            f"WHERE arm.matches < {int(limit)} OR arm.place = 1) AS arm{position}"
        )
        params += [*flag_params, *match_params, *where_params]
    statement = " UNION ALL ".join(arms)
    if ctes:
        statement = f"WITH {', '.join(ctes)} {statement}"
    with prepared_cursor() if flagged else connection.cursor() as cursor:
        cursor.execute(statement, [*cte_params, *params])  # noqa: S608 (fragments built here, values as parameters)
        rows = cursor.fetchall()
    counts = dict.fromkeys(units, 0)
    for row in rows:  # each row carries its arm's count
        counts[units[row[0]]] = row[1]
    kept: dict[str, list] = {}
    for row in rows:
        unit = units[row[0]]
        if counts[unit] < limit:
            kept.setdefault(unit, []).append(row)
    # Each row without its leading unit and count (the flags after it stay: the ranking reads the first columns).
    found = {unit: [row[2:] for row in kept.get(unit, ())] for unit in units if counts[unit] < limit}
    first_flag = 2 + CANDIDATE_COLUMNS
    members = _members_from_flags(units, [r for m in kept.values() for r in m], first_flag) if flagged else None
    return Each(counts, found, members)


MEMBER_BATCH = 2_000  # ids asked about per query, so that one statement stays small however long the list


def members(*, units: tuple[str, ...], ids: list[int], within: tuple[str, ...] = ()) -> dict[str, set[int]]:
    """Which of `ids` match each unit (the common words' share of the ranking). `within`: units of which
    every one of `ids` matches at least one (the rare words that brought them), which lets SQLite's engine
    intersect its own lists rather than look each id up."""
    found: dict[str, set[int]] = {unit: set() for unit in units}
    if not units or not ids:
        return found
    if connection.vendor != "postgresql":
        for position, member in _sqlite_members(units, ids, within):
            found[units[position]].add(member)
        return found
    batch = max(1, MEMBER_BATCH // len(units))
    for start in range(0, len(ids), batch):
        for position, member in _pg_members(units, ids[start : start + batch]):
            found[units[position]].add(member)
    return found


def _pg_members(units: tuple[str, ...], ids: list[int]) -> list[tuple[int, int]]:
    arms, params = [], []
    for position, unit in enumerate(units):
        match, match_params = _match((unit,), "AND")
        arms.append(f"SELECT {position}, m.id FROM {_from()} WHERE {match} AND m.id = ANY(%s)")
        params += [*match_params, list(ids)]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(arms), params)  # noqa: S608 (fragments built here, values as parameters)
        return cursor.fetchall()


def _sqlite_members(units: tuple[str, ...], ids: list[int], within: tuple[str, ...]) -> list[tuple[int, int]]:
    """FTS5 looking up ids one by one in a common word's long list cost about as much per id as a search;
    instead it matches `unit AND (any of within)` between the lowest and highest id, a superset of the
    answer that its lists give at once, and the ids are picked out here."""
    wanted = set(ids)
    narrowing = " AND (" + " OR ".join(_fts5_literal(u) for u in within) + ")" if within else ""
    arms: list[str] = []
    params: list[str | int] = []
    for position, unit in enumerate(units):
        rowid = f"{FTS_TABLE}.rowid"
        arms.append(
            f"SELECT {position}, {rowid} FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s AND {rowid} BETWEEN %s AND %s"
        )
        params += [_fts5_literal(unit) + narrowing, min(ids), max(ids)]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(arms), params)  # noqa: S608 (fragments built here, values as parameters)
        return [(position, member) for position, member in cursor.fetchall() if member in wanted]
