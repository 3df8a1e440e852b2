"""Full-text search over a channel's active path, summarized part included.

`message_search` is the one entry point (the API, the page, the recall tool
and the fidelity command all go through it, via compaction.recall, which
adds redaction). How it works, and why it stays fast on long channels:

1. the user's cursor gives the path: a few (segment, depth) pairs
   (chatcore.search.schema), read with the cursor in one query;
2. each word or phrase of the query (chatcore.search.query) is matched by
   the database's own engine (chatcore.search.engine) on that path, up to
   `SEARCH_TERM_CAP` + 1 messages: a word under the cap is *rare* and brings
   all its messages as candidates, a word over it is *common* and is only
   checked against the rare words' candidates (one query for all the words:
   a common word's arm sends back only its count, and on PostgreSQL each
   candidate's row says which words it matches; SQLite's FTS5 cannot test a
   row in a select list, so there one more query checks the common words);
   a query of one word or phrase is one query for its most recent
   `SEARCH_CANDIDATES` matches, which are its candidates whether it is rare
   (all of them) or common (the fallback below); on PostgreSQL that query is
   read newest first in spans of ids (in one prepared statement, see
   chatcore.search.engine), so that a common word fetches about as many rows
   as it keeps, not every one of its matches;
3. the candidates are ranked in Python, the same on both databases
   (chatcore.search.ranking), and the best `limit` come back with their
   neighbouring turns on the path (one query).

So a search costs a handful of indexed queries whatever the channel's
length; only a query made of common words alone falls back to the most
recent messages holding all (else any) of them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TypedDict

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from chatcore import conf
from chatcore.errors import NotFound
from chatcore.models import Channel, Message
from chatcore.observability.metrics import search_observed
from chatcore.search import engine, ranking, rows
from chatcore.search.query import ParsedQuery, parse_query

SCOPES = ("all", "summarized")
MAX_CONTEXT = 3


@dataclasses.dataclass
class SearchHit:
    message: Message
    score: float
    rank: int
    window: list[Message]  # the hit and its neighbours on the path, in order
    summarized: bool  # covered by the summary in force


class SearchFilters(TypedDict, total=False):
    """What narrows a search besides the query (message_search's defaults apply to what is left out)."""

    limit: int
    roles: tuple[str, ...]
    since: dt.datetime | None
    until: dt.datetime | None
    scope: str


@dataclasses.dataclass
class SearchResults:
    query: ParsedQuery
    hits: list[SearchHit]
    boundary: Message | None  # the last summarized message, if a summary is in force
    searched: int  # messages on the path searched


def _validate(*, query: str, limit: int, scope: str, context: int, roles: tuple[str, ...]) -> ParsedQuery:
    errors = {}
    if not isinstance(limit, int) or not 1 <= limit <= conf.SEARCH_MAX_LIMIT:
        errors["limit"] = f"limit must be between 1 and {conf.SEARCH_MAX_LIMIT}."
    if scope not in SCOPES:
        errors["scope"] = f"scope must be one of: {', '.join(SCOPES)}."
    if not isinstance(context, int) or not 0 <= context <= MAX_CONTEXT:
        errors["context"] = f"context must be between 0 and {MAX_CONTEXT} neighbouring turns."
    unknown = sorted(set(roles) - set(Message.Role.values))
    if unknown:
        errors["role"] = f"Unknown role(s): {', '.join(unknown)}. Roles: {', '.join(Message.Role.values)}."
    parsed = parse_query(query if isinstance(query, str) else "")
    if parsed.empty:
        errors["q"] = "Give at least one word to search for (very common words such as 'the' are not searched)."
    if errors:
        raise ValidationError(errors)
    return parsed


def _rank(parsed: ParsedQuery, filters: engine.Filters, messages: int, average_tokens: float, context: int, limit: int):
    cap = conf.SEARCH_TERM_CAP
    found: dict[int, engine.Candidate] = {}
    matched: dict[str, set[int]] = {}
    weights: dict[str, float] = {}
    common: list[str] = []
    dated = bool(parsed.periods)  # dates only count when the query names a period
    if len(parsed.units) == 1 and conf.SEARCH_CANDIDATES > cap:
        # One word or phrase: rare, its candidates are all its matches; common, its most recent
        # SEARCH_CANDIDATES. Both are what one query for its most recent SEARCH_CANDIDATES gives, and its
        # count (up to the cap) is how many that query found: one statement instead of a count and a fallback.
        (unit,) = parsed.units
        rows, _members = engine.candidates(
            units=(unit,),
            operator="AND",
            filters=filters,
            limit=conf.SEARCH_CANDIDATES,
            recent_first=True,
            dated=dated,
            flagged=False,
        )
        found = {row[engine.ID]: row for row in rows}
        weights[unit] = ranking.idf(matches=min(len(rows), cap + 1), messages=messages)
        matched[unit] = set(found)
        return _scored(parsed, found, matched, weights, average_tokens, context, limit)
    each = engine.candidates_each(units=parsed.units, filters=filters, limit=cap + 1, dated=dated)
    members = each.members  # which candidates match each unit, when the engine's rows say it
    for unit, count in each.counts.items():
        weights[unit] = ranking.idf(matches=count, messages=messages)
        if count > cap:
            common.append(unit)
            continue
        matched[unit] = {row[engine.ID] for row in each.found[unit]}
        found.update((row[engine.ID], row) for row in each.found[unit])
    if not found and common:
        for operator in ("AND", "OR"):
            rows, members = engine.candidates(
                units=tuple(common),
                operator=operator,
                filters=filters,
                limit=conf.SEARCH_CANDIDATES,
                recent_first=True,
                dated=dated,
                flagged=operator == "OR",
            )
            if rows:
                break
        found.update((row[engine.ID], row) for row in rows)
        if rows and operator == "AND":
            # Each candidate holds every one of these words: nothing to ask (SQLite's engine, with no rare
            # word to narrow its lists, read all their matches across the candidates' span, thousands of rows).
            members = {unit: set(found) for unit in common}
    if members is not None:
        matched.update({unit: members[unit] for unit in common})
    else:
        rare = tuple(unit for unit in parsed.units if matched.get(unit))  # every candidate matches one of these
        matched.update(engine.members(units=tuple(common), ids=list(found), within=rare))
    return _scored(parsed, found, matched, weights, average_tokens, context, limit)


def _scored(
    parsed: ParsedQuery,
    found: dict[int, engine.Candidate],
    matched: dict[str, set[int]],
    weights: dict[str, float],
    average_tokens: float,
    context: int,
    limit: int,
) -> list[tuple[float, int, int]]:
    scores = ranking.base_scores(
        query=parsed, candidates=found.values(), matched=matched, weights=weights, average_tokens=average_tokens
    )
    depth_of = {i: found[i][engine.DEPTH] for i in scores}
    return ranking.with_neighbours(scores=scores, depth_of=depth_of, context=context, limit=limit)


def _windows(hits: list[tuple[int, int]], segments: tuple[engine.Segment, ...], context: int) -> dict[int, Message]:
    """The messages at the hits' depths ± context on the path, by depth: one query."""
    ranges = []
    for _message_id, depth in hits:
        low, high = depth - context, depth + context
        for segment in segments:
            lo, hi = max(low, segment.first_depth), min(high, segment.last_depth)
            if lo <= hi:
                ranges.append((segment.segment, lo, hi))
    return {m.depth: m for m in rows.messages_at(ranges=ranges)}


@search_observed
def message_search(
    *,
    channel: Channel,
    user: User,
    query: str,
    limit: int = 10,
    roles: tuple[str, ...] = (),
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    scope: str = "all",
    context: int = 1,
) -> SearchResults:
    """The best `limit` messages of the owner's active path for `query`, each with `context` turns either side.

    `scope="summarized"` searches only what the summary in force covers (the
    recall tool: what the model no longer sees). Only the channel's owner may
    search it; anyone else gets NotFound, as for every read of a channel.
    """
    if channel.owner_id != getattr(user, "pk", None):
        raise NotFound("Channel not found.")
    parsed = _validate(query=query, limit=limit, scope=scope, context=context, roles=tuple(roles))
    state = rows.path_state(channel_id=channel.pk, user_id=user.pk)
    if state is None:
        return SearchResults(parsed, [], None, 0)
    boundary = state.boundary
    boundary_depth = boundary.depth if boundary else None
    if scope == "summarized" and boundary is None:
        return SearchResults(parsed, [], None, 0)
    segments = state.segments
    last = boundary if scope == "summarized" else None  # the end of what is searched, if not the leaf
    messages = (last.depth if last else state.leaf_depth) + 1
    path_tokens = last.path_tokens if last else state.leaf_path_tokens
    filters = engine.Filters(
        channel_id=channel.pk,
        segments=segments,
        max_depth=boundary_depth if scope == "summarized" else None,
        roles=tuple(roles),
        since=since,
        until=until,
        # A segment's id is its first message's, so the least of them is the root's.
        id_range=(min(s.segment for s in segments), state.leaf_id) if segments else None,
    )
    with engine.index_covering(channel_id=channel.pk, pending=state.index_pending):
        ranked = _rank(parsed, filters, messages, path_tokens / messages, context, limit)
    by_depth = _windows([(i, d) for _s, d, i in ranked], segments, context)
    hits = []
    for position, (score, depth, _message_id) in enumerate(ranked, start=1):
        window = [by_depth[d] for d in range(depth - context, depth + context + 1) if d in by_depth]
        if scope == "summarized" and boundary_depth is not None:
            window = [m for m in window if m.depth <= boundary_depth]
        hits.append(
            SearchHit(
                message=by_depth[depth],
                score=round(score, 4),
                rank=position,
                window=window,
                summarized=boundary_depth is not None and depth <= boundary_depth,
            )
        )
    return SearchResults(parsed, hits, boundary, messages)
