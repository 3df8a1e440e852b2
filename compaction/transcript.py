"""The part of a conversation being summarized, as the summarizer sees it.

`transcript_items` turns stored messages into plain records with every
secret already redacted (content and tool-call arguments), so no later step
can forget to. `render_transcript` lays them out as labeled turns: who
spoke, in which role, on which date, what tools were called with which
arguments and what they returned. Long bodies keep their head and tail with
a visible marker in between: the start usually states the intent and the end
the outcome, and the reader must know that something was cut.

Everything taken from a message is data (invariant 7): every line break is
made a newline, names are redacted and made safe
(`compaction.safety.structure`), and a line of a body that could
pass for a turn label, a fence or a heading is escaped, its continuation
lines indented, so that only the renderer's labels start a line.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections import Counter
from collections.abc import Iterable
from typing import Any

from chatcore.metadata.stored import stored_metadata, stored_tool_calls
from compaction.observability.metrics import injections_flagged
from compaction.redaction import redact_many
from compaction.safety import looks_like_injection
from compaction.safety.injection import PEOPLE, conversation_flags
from compaction.safety.normalize import unify_lines
from compaction.safety.structure import RAW_NAME_CHARS, safe_speaker, safe_tool, turn_bodies

# (head, tail) characters kept of long bodies.
MESSAGE_KEEP = (4_000, 1_200)
TOOL_RESULT_KEEP = (2_000, 800)
TOOL_ARGUMENTS_KEEP = (800, 200)


@dataclasses.dataclass
class TranscriptItem:
    message_id: int | None
    role: str
    speaker: str
    content: str
    created_at: dt.datetime | None = None
    tool_name: str = ""
    tool_calls: list[dict] = dataclasses.field(default_factory=list)  # [{"id", "name", "arguments"}]
    redactions: dict[str, int] = dataclasses.field(default_factory=dict)
    tool_call_id: str = ""  # on a tool result: the call it answers
    addressed: bool | None = None  # whether it addresses a model (compaction.safety), once someone asked


def _names_of(role: str, metadata: dict, counts: Counter[str]) -> tuple[str, str]:
    """(speaker, tool name) of a message of `role` from its stored metadata, redacted and made safe (their
    redactions added to `counts`)."""
    tool_name = ""
    if role == "tool":
        tool_name, found = safe_tool(str(metadata.get("name") or metadata.get("tool_name") or "tool"))
        if found:
            counts.update(dict(found))
    raw = metadata.get("speaker") or metadata.get("author_name")
    if not raw:
        return (tool_name or role), tool_name
    speaker, found = safe_speaker(str(raw)[:RAW_NAME_CHARS], role)
    if found:  # most names hold no secret: no update of nothing (a Counter's update costs as much as a lookup)
        counts.update(dict(found))
    return speaker, tool_name


def _tool_calls_of(metadata: dict, counts: Counter[str]) -> list[dict]:
    """The calls of an assistant message as {"id", "name", "arguments"}: names made safe (their redactions added
    to `counts`), arguments still unredacted."""
    calls = []
    for call in stored_tool_calls(metadata):  # the protocol's shape, whatever an older row holds
        name, found = safe_tool(str(call["function"]["name"] or "tool"))
        if found:
            counts.update(dict(found))
        calls.append({"id": call["id"], "name": name, "arguments": call["function"]["arguments"]})
    return calls


def transcript_items(messages: Iterable[Any]) -> list[TranscriptItem]:
    """Redacted records of `messages` (root first); system messages are left out.

    Reads only fields already loaded on each message: no queries. Every
    content and tool-call argument is redacted in one batch (`redact_many`:
    one scan of the whole stretch, the cost that dominates a long compaction).
    """
    items = []
    texts: list[str] = []
    name_counts: list[Counter[str] | None] = []
    for message in messages:
        role = message.role
        if role == "system":
            continue
        metadata = stored_metadata(message.metadata)
        counts: Counter[str] | None = None
        if metadata or role == "tool":
            counts = Counter()
            tool_calls = _tool_calls_of(metadata, counts) if role == "assistant" else []
            speaker, tool_name = _names_of(role, metadata, counts)
        else:  # no name, no tool call: the role speaks, and nothing of a name is counted (most messages)
            tool_calls, speaker, tool_name = [], role, ""
        name_counts.append(counts)
        texts.append(message.content or "")
        if tool_calls:  # most messages have none: no generator for them
            texts.extend(call["arguments"] for call in tool_calls)
        items.append(
            TranscriptItem(
                message_id=message.pk,
                role=role,
                speaker=speaker,
                content="",
                created_at=getattr(message, "created_at", None),
                tool_name=tool_name,
                tool_calls=tool_calls,
                tool_call_id=str(metadata.get("tool_call_id") or "") if role == "tool" else "",
            )
        )
    # One kind of line break: a lone CR or U+2028 must not start a line the checks did not see as one. Looked for in
    # all the texts at once (most stretches hold none), each text made over only when some text holds one.
    joined = "\n".join(texts)
    if unify_lines(joined) != joined:
        texts = [unify_lines(text) for text in texts]
    cleaned = iter(redact_many(texts))
    for item, counts in zip(items, name_counts, strict=True):
        content = next(cleaned)
        item.content = content.text
        # Most messages hold no secret: their empty counts are not added (thousands of updates of nothing), and
        # a message without a name or a tool call has no Counter to add them to until one is found.
        if content.counts:
            counts = Counter() if counts is None else counts
            counts.update(content.counts)
        for call in item.tool_calls:
            arguments = next(cleaned)
            call["arguments"] = arguments.text
            if arguments.counts:
                counts = Counter() if counts is None else counts
                counts.update(arguments.counts)
        item.redactions = dict(sorted(counts.items())) if counts else {}
    return items


def addresses_model(item: TranscriptItem) -> bool:
    """Whether a person's message (a user's or an assistant's) addresses a model or summarizer instead of the
    other party; asked once per item (the offline summarizer, its references and fact pinning all ask).
    `items_judge` answers for a whole transcript at once, each message read with its neighbours."""
    if item.role not in _PEOPLE:
        return False
    if item.addressed is None:
        item.addressed = bool(item.content) and looks_like_injection(item.content)
    return item.addressed


MIN_OMITTED_CHARS = 60  # a body only this much longer than what is kept stays whole: the marker would save nothing


def tool_result_flagged(item: TranscriptItem) -> bool:
    """Whether a tool result, read whole by the detector (`items_judge`), addresses a model."""
    return item.role == "tool" and bool(item.addressed)


_PEOPLE = PEOPLE


def items_judge(items: list[TranscriptItem]) -> None:
    """Sets `addressed` on every item not judged yet, in one batch (`conversation_flags`): the people's messages
    in order, each read with its neighbours (an instruction split across two turns), each tool result alone."""
    pending = [item for item in items if item.addressed is None]
    if pending:
        verdicts = conversation_flags([(item.role, item.content) for item in pending])
        for item, verdict in zip(pending, verdicts, strict=True):
            item.addressed = verdict
        injections_flagged.inc(sum(verdicts))


def truncate_middle(text: str, head: int, tail: int) -> str:
    """Keep `head` characters of the start and `tail` of the end, with a marker saying how much went."""
    if len(text) <= head + tail + MIN_OMITTED_CHARS:
        return text
    omitted = len(text) - head - tail
    return f"{text[:head].rstrip()}\n[… {omitted:,} characters omitted …]\n{text[-tail:].lstrip()}"


def format_date(value: dt.datetime | None) -> str:
    """'8 May 2023' — the form people write and the summary keeps."""
    if value is None:
        return ""
    return _day(value.year, value.month, value.day)


@functools.lru_cache(maxsize=4096)
def _day(year: int, month: int, day: int) -> str:
    return f"{day} {dt.date(year, month, day):%B %Y}"


@functools.lru_cache(maxsize=4096)
def _label_head(role: str, speaker: str, tool_name: str) -> str:
    """A label up to its date: the same for every turn of one speaker (asked once per speaker, not per turn)."""
    shown = role.upper() if role != "tool" else "TOOL RESULT"
    speaker = safe_speaker(speaker, role)[0] if speaker else ""
    name = speaker if speaker and speaker.lower() != role else ""
    if role == "tool":
        name = safe_tool(tool_name)[0] if tool_name else name
    return f"[{shown} · {name}" if name else f"[{shown}"


# Every time of day as "%H:%M" writes it, by its minute of the day: a turn's label looks its time up, without
# strftime's cost or two formatted numbers on every turn.
_CLOCK = tuple(f"{hour:02d}:{minute:02d}" for hour in range(24) for minute in range(60))
MINUTES_PER_HOUR = 60


def _label(item: TranscriptItem) -> str:
    label = _label_head(item.role, item.speaker, item.tool_name)
    created = item.created_at
    if created is None:
        return label + "]"
    clock = _CLOCK[created.hour * MINUTES_PER_HOUR + created.minute]
    return f"{label} · {_day(created.year, created.month, created.day)}, {clock}]"


def render_transcript(items: list[TranscriptItem]) -> str:
    """One block per turn, blank line between turns; bodies through `turn_body` (structure escaped, continuation
    lines indented), with the speakers' names counted as labels too ("Caroline: …" on a line of its own).

    A turn without a tool call (nearly every one) is one line of text made at once: no list of lines, no call
    to cut a body shorter than the cut."""
    names = frozenset(item.speaker for item in items if item.speaker)
    texts = []
    kept_whole = sum(MESSAGE_KEEP) + MIN_OMITTED_CHARS  # what truncate_middle leaves as it is
    for item in items:
        content = item.content.strip()
        if item.role == "tool":
            content = truncate_middle(content, *TOOL_RESULT_KEEP)
        elif len(content) > kept_whole:
            content = truncate_middle(content, *MESSAGE_KEEP)
        texts.append(content)
        if item.tool_calls:
            texts.extend(truncate_middle(call["arguments"], *TOOL_ARGUMENTS_KEEP) for call in item.tool_calls)
    bodies = iter(turn_bodies(texts, names=names))  # every line of every turn checked in one batch
    blocks = []
    for item in items:
        block = f"{_label(item)}: {next(bodies)}".rstrip()
        if item.tool_calls:
            lines = [block]
            for call in item.tool_calls:
                lines.append(f"[TOOL CALL · {safe_tool(call['name'])[0]}]: {next(bodies)}")
            block = "\n".join(lines)
        blocks.append(block)
    return "\n\n".join(blocks)
