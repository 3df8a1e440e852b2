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
from chatcore.search.highlight import snippets
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


class _Shown:
    """What a search's results show of each message, worked out once per message (a turn shown beside two
    hits, a hit's own speaker) and each day written once (a conversation's turns share a few days)."""

    def __init__(self, channel: Channel, redacted: dict[int, Redacted]) -> None:
        self.channel = channel
        self.redacted = redacted
        self.lines: dict[int, str] = {}
        self.speakers: dict[int, str] = {}
        self.days: dict[dt.date, str] = {}

    def speaker(self, message: Message) -> str:
        speaker = self.speakers.get(message.pk)
        if speaker is None:
            speaker = self.speakers[message.pk] = speaker_of(message, self.channel)
        return speaker

    def line(self, message: Message) -> str:
        """The message as one turn: "date, time · speaker: text", redacted, relative dates anchored."""
        line = self.lines.get(message.pk)
        if line is None:
            said = message.created_at
            day = self.days.get(said.date())
            if day is None:
                day = self.days[said.date()] = format_day(said.date())
            text = anchor_dates(" ".join(self.redacted[message.pk].text.split()), said_on=said)
            line = self.lines[message.pk] = (
                f"{day}, {said.hour:02d}:{said.minute:02d} · {self.speaker(message)}: {text}"
            )
        return line


def _result(hit: SearchHit, shown: _Shown, snippet: str) -> RecallResult:
    counts: Counter = Counter()
    for message in hit.window:
        found = shown.redacted[message.pk].counts
        if found:
            counts.update(found)
    return RecallResult(
        id=hit.message.pk,
        rank=hit.rank,
        score=hit.score,
        role=hit.message.role,
        speaker=shown.speaker(hit.message),
        created_at=hit.message.created_at,
        content="\n".join([shown.line(m) for m in hit.window]),
        snippet=snippet,
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
    shown = _Shown(channel, _redacted(found.hits))
    marked = snippets([shown.redacted[hit.message.pk].text for hit in found.hits], units)
    return Recall(
        query=query,
        terms=list(units),
        results=[_result(hit, shown, text) for hit, text in zip(found.hits, marked, strict=True)],
        searched=found.searched,
        summarized_through=found.boundary.pk if found.boundary else None,
    )
