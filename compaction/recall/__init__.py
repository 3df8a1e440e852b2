"""Recall: search results as people and models read them.

chatcore finds and ranks (chatcore.search); this package turns each hit into
what a reader sees, redacted like everything else that leaves the database
for a page, an API client or a model: the hit with its neighbouring turns,
one line per turn as "date · speaker: text" (relative dates anchored, as in
summaries: "yesterday [7 May 2023]"), and a highlighted snippet of the hit.
The API (`GET /api/channels/{id}/search/`), the channel page's search box,
the `recall_history` tool of the reply loop and `compaction_fidelity
--recall` all call `recall_search`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from typing import Unpack

from django.contrib.auth.models import User

from chatcore.metadata.stored import stored_metadata
from chatcore.models import Channel, Message
from chatcore.search import SearchFilters, SearchHit, message_search
from chatcore.search.highlight import snippet
from compaction.dates import anchor_dates, format_day
from compaction.redaction import Redacted, redact_many
from compaction.safety.structure import RAW_NAME_CHARS, safe_speaker, safe_tool

DEFAULT_CONTEXT = 1


@dataclasses.dataclass
class RecallResult:
    id: int
    rank: int
    score: float
    role: str
    speaker: str
    created_at: dt.datetime
    content: str
    snippet: str
    summarized: bool
    message_ids: list[int]
    redactions: dict[str, int]


@dataclasses.dataclass
class Recall:
    query: str
    terms: list[str]
    results: list[RecallResult]
    searched: int
    summarized_through: int | None  # id of the last message the summary in force covers


def speaker_of(message: Message, channel: Channel) -> str:
    """Who said it: the imported speaker's name, else the author, the persona or the role."""
    named = message.metadata.get("speaker") if isinstance(message.metadata, dict) else None
    if isinstance(named, str) and named.strip():
        # The name goes into a tool result a model reads, one "date · speaker: text" line per turn: made safe.
        return safe_speaker(named[:RAW_NAME_CHARS], message.role)[0]
    if message.role == Message.Role.USER and message.author is not None:
        return message.author.get_username()
    if message.role == Message.Role.ASSISTANT and channel.persona is not None:
        return channel.persona.name
    if message.role == Message.Role.TOOL:
        metadata = stored_metadata(message.metadata)
        return safe_tool(str(metadata.get("name") or metadata.get("tool_name") or "tool"))[0]
    return message.role


def _when(message: Message) -> str:
    return f"{format_day(message.created_at.date())}, {message.created_at:%H:%M}"


def _turn(message: Message, redacted: Redacted, channel: Channel) -> str:
    text = anchor_dates(" ".join(redacted.text.split()), said_on=message.created_at)
    return f"{_when(message)} · {speaker_of(message, channel)}: {text}"


def _result(
    hit: SearchHit, channel: Channel, units: tuple[str, ...], redacted: dict[int, Redacted], lines: dict[int, str]
) -> RecallResult:
    counts: Counter = Counter()
    for message in hit.window:
        counts.update(redacted[message.pk].counts)
        if message.pk not in lines:  # a turn shown beside two hits is written once
            lines[message.pk] = _turn(message, redacted[message.pk], channel)
    return RecallResult(
        id=hit.message.pk,
        rank=hit.rank,
        score=hit.score,
        role=hit.message.role,
        speaker=speaker_of(hit.message, channel),
        created_at=hit.message.created_at,
        content="\n".join(lines[m.pk] for m in hit.window),
        snippet=snippet(redacted[hit.message.pk].text, units),
        summarized=hit.summarized,
        message_ids=[m.pk for m in hit.window],
        redactions=dict(sorted(counts.items())),
    )


def _redacted(hits: list[SearchHit]) -> dict[int, Redacted]:
    """Every message shown, redacted once (neighbouring hits share turns), in one scan of the batch."""
    shown = {m.pk: m for hit in hits for m in (hit.message, *hit.window)}
    return dict(zip(shown, redact_many([m.content for m in shown.values()]), strict=True))


def recall_search(
    *, channel: Channel, user: User, query: str, context: int = DEFAULT_CONTEXT, **filters: Unpack[SearchFilters]
) -> Recall:
    """`message_search` (with the same filters), each hit shown with its neighbours, redacted, dated and highlighted."""
    found = message_search(channel=channel, user=user, query=query, context=context, **filters)
    units = found.query.units
    redacted = _redacted(found.hits)
    lines: dict[int, str] = {}
    return Recall(
        query=query,
        terms=list(units),
        results=[_result(hit, channel, units, redacted, lines) for hit in found.hits],
        searched=found.searched,
        summarized_through=found.boundary.pk if found.boundary else None,
    )
