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

import dataclasses
import datetime as dt

from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from chatcore import conf
from chatcore.search.schema import FTS_TABLE, TABLE


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

    def sql(self) -> tuple[str, list]:
        # SQLite: a unary + keeps these columns' indexes out of the plan, so that the engine's matches
        # drive it, one primary-key lookup each (the plan stays right as long as the statistics, if any,
        # are not those of a near-empty table: ANALYZE after a large import, as the benchmark does).
        plus = "+" if connection.vendor == "sqlite" else ""
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


@dataclasses.dataclass(frozen=True)
class Candidate:
    id: int
    depth: int
    tokens: int
    created_at_raw: object  # as the driver returns it; read through `created_at` (only periods need it)
    role: str
    speaker: str

    @property
    def created_at(self) -> dt.datetime | None:
        return _aware(self.created_at_raw)


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


def _match(units: tuple[str, ...], operator: str) -> tuple[str, list]:
    """The WHERE fragment matching `units` joined by AND or OR, and its parameters."""
    if connection.vendor == "postgresql":
        language = conf.SEARCH_LANGUAGE
        pieces = [("phraseto_tsquery" if " " in unit else "plainto_tsquery") + "(%s::regconfig, %s)" for unit in units]
        joiner = " && " if operator == "AND" else " || "
        params: list = []
        for unit in units:
            params += [language, unit]
        return f"m.search_vector @@ ({joiner.join(pieces)})", params
    return f"{FTS_TABLE} MATCH %s", [f" {operator} ".join(_fts5_literal(u) for u in units)]


def _from() -> str:
    if connection.vendor == "postgresql":
        return f"{TABLE} m"
    return f"{FTS_TABLE} CROSS JOIN {TABLE} m ON m.id = {FTS_TABLE}.rowid"


def _speaker_column() -> str:
    if connection.vendor == "postgresql":
        return "coalesce(m.metadata->>'speaker', '')"
    # Reading an FTS5 column fetches its row from the index's content table: half of what a match cost.
    # Only a message whose metadata names a speaker has one there ('' otherwise, as the trigger stores it).
    return f"""CASE WHEN instr(m.metadata, '"speaker"') > 0 THEN {FTS_TABLE}.speaker ELSE '' END"""


def _aware(value) -> dt.datetime | None:
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and timezone.is_naive(value):
        value = timezone.make_aware(value, dt.UTC)
    return value


def _candidate_select(dated: bool) -> str:
    # The date is read only when the query names a period: converting it is most of what a row costs here.
    created_at = "m.created_at" if dated else "NULL"
    return f"m.id, m.depth, m.tokens, {created_at}, m.role, {_speaker_column()}"


def _candidates(rows) -> list[Candidate]:
    return [Candidate(row[0], row[1], row[2], row[3], row[4], row[5] or "") for row in rows]


def candidates(
    *,
    units: tuple[str, ...],
    operator: str,
    filters: Filters,
    limit: int,
    recent_first: bool = False,
    dated: bool = True,
) -> list[Candidate]:
    """Messages matching the units (all of them with AND, any with OR), at most `limit`; without `dated`,
    their `created_at` is left None."""
    match, match_params = _match(units, operator)
    where, where_params = filters.sql()
    order = ""
    if recent_first:
        # On one path a message's id is greater than its parent's (it is written after it), so the path's
        # newest are its highest ids: FTS5 walks its matches in descending rowid and stops at the limit,
        # where ordering by depth read and sorted all of them.
        order = "ORDER BY m.depth DESC" if connection.vendor == "postgresql" else f"ORDER BY {FTS_TABLE}.rowid DESC"
    sql = f"""
        SELECT {_candidate_select(dated)}
        FROM {_from()} WHERE {match} AND {where} {order} LIMIT %s
    """  # noqa: S608 (fragments built here, values as parameters)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*match_params, *where_params, limit])
        return _candidates(cursor.fetchall())


def candidates_each(
    *, units: tuple[str, ...], filters: Filters, limit: int, dated: bool = True
) -> tuple[dict[str, int], dict[str, list[Candidate]]]:
    """For each unit alone, how many messages match it (counted up to `limit`) and, for the units under
    `limit`, those messages: what `candidates` gives for each, in one statement (one round trip however
    many words the query has). A unit that reaches `limit` is only counted (its rows are not wanted)."""
    if not units:
        return {}, {}
    where, where_params = filters.sql()
    arms, params = [], []
    for position, unit in enumerate(units):
        match, match_params = _match((unit,), "AND")
        arms.append(
            f"SELECT * FROM (SELECT {position} AS unit, {_candidate_select(dated)} "
            f"FROM {_from()} WHERE {match} AND {where} LIMIT %s) AS arm{position}"
        )
        params += [*match_params, *where_params, limit]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(arms), params)
        rows = cursor.fetchall()
    by_unit: dict[str, list] = {unit: [] for unit in units}
    for row in rows:
        by_unit[units[row[0]]].append(row)
    counts = {unit: len(matches) for unit, matches in by_unit.items()}
    found = {
        unit: [Candidate(row[1], row[2], row[3], row[4], row[5], row[6] or "") for row in matches]
        for unit, matches in by_unit.items()
        if len(matches) < limit
    }
    return counts, found


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
