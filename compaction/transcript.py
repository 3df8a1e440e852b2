"""The part of a conversation being summarized, as the summarizer sees it.

`transcript_items` turns stored messages into plain records with every
secret already redacted (content and tool-call arguments), so no later step
can forget to. `render_transcript` lays them out as labeled turns: who
spoke, in which role, on which date, what tools were called with which
arguments and what they returned. Long bodies keep their head and tail with
a visible marker in between: the start usually states the intent and the end
the outcome, and the reader must know that something was cut.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections import Counter
from collections.abc import Iterable
from typing import Any

from chatcore.metadata import stored_metadata, stored_tool_calls
from compaction.redaction import redact_many

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


def _speaker_of(message: Any) -> str:
    metadata = stored_metadata(getattr(message, "metadata", None))
    speaker = metadata.get("speaker") or metadata.get("author_name")
    if speaker:
        return str(speaker)[:100]
    if message.role == "tool":
        return str(metadata.get("name") or metadata.get("tool_name") or "tool")
    return message.role


def _tool_calls_of(metadata: dict) -> list[dict]:
    """The calls of an assistant message as {"id", "name", "arguments"}, arguments still unredacted."""
    return [
        {"id": call["id"], "name": call["function"]["name"] or "tool", "arguments": call["function"]["arguments"]}
        for call in stored_tool_calls(metadata)  # the protocol's shape, whatever an older row holds
    ]


def transcript_items(messages: Iterable[Any]) -> list[TranscriptItem]:
    """Redacted records of `messages` (root first); system messages are left out.

    Reads only fields already loaded on each message: no queries. Every
    content and tool-call argument is redacted in one batch (`redact_many`:
    one scan of the whole stretch, the cost that dominates a long compaction).
    """
    items = []
    texts: list[str] = []
    for message in messages:
        if message.role == "system":
            continue
        metadata = stored_metadata(message.metadata)
        tool_calls = _tool_calls_of(metadata) if message.role == "assistant" else []
        tool_name = tool_call_id = ""
        if message.role == "tool":
            tool_name = str(metadata.get("name") or metadata.get("tool_name") or "tool")
            tool_call_id = str(metadata.get("tool_call_id") or "")
        texts.append(message.content or "")
        texts.extend(call["arguments"] for call in tool_calls)
        items.append(
            TranscriptItem(
                message_id=message.pk,
                role=message.role,
                speaker=_speaker_of(message),
                content="",
                created_at=getattr(message, "created_at", None),
                tool_name=tool_name,
                tool_calls=tool_calls,
                tool_call_id=tool_call_id,
            )
        )
    cleaned = iter(redact_many(texts))
    for item in items:
        counts: Counter[str] = Counter()
        content = next(cleaned)
        item.content = content.text
        counts.update(content.counts)
        for call in item.tool_calls:
            arguments = next(cleaned)
            call["arguments"] = arguments.text
            counts.update(arguments.counts)
        item.redactions = dict(sorted(counts.items()))
    return items


def truncate_middle(text: str, head: int, tail: int) -> str:
    """Keep `head` characters of the start and `tail` of the end, with a marker saying how much went."""
    if len(text) <= head + tail + 60:
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


def _label(item: TranscriptItem) -> str:
    role = item.role.upper() if item.role != "tool" else "TOOL RESULT"
    name = item.speaker if item.speaker and item.speaker.lower() != item.role else ""
    if item.role == "tool":
        name = item.tool_name or name
    label = f"{role} · {name}" if name else role
    if item.created_at is not None:
        label += f" · {format_date(item.created_at)}, {item.created_at:%H:%M}"
    return f"[{label}]"


def render_transcript(items: list[TranscriptItem]) -> str:
    """One block per turn, blank line between turns."""
    blocks = []
    for item in items:
        keep = TOOL_RESULT_KEEP if item.role == "tool" else MESSAGE_KEEP
        lines = [f"{_label(item)}: {truncate_middle(item.content.strip(), *keep)}".rstrip()]
        for call in item.tool_calls:
            arguments = truncate_middle(call["arguments"], *TOOL_ARGUMENTS_KEEP)
            lines.append(f"[TOOL CALL · {call['name']}]: {arguments}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
