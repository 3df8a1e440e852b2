"""LoCoMo conversations (Maharana et al., ACL 2024), as the fidelity benchmark reads them.

One message per turn: the first speaker (`speaker_a`) is the `user`, the
second the `assistant`; each message keeps its speaker's name, its LoCoMo
turn id and session in metadata. The session's date and time become the
message's `created_at`; the transcript shown to a summarizer prints each
turn's date next to the speaker, so the date is visible in the text it
reads while the message body stays the words that were said. A shared
image is kept as text, from the dataset's caption of it:
"… [shared an image: a photo of a dog on a boat]".

Only the turns are read: the question–answer annotations, event lists,
observations and session summaries that LoCoMo ships next to them never
enter the channel.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Iterable, Iterator

from django.core.exceptions import ValidationError

from compaction.imports.tree import ExportItem, ImportedConversation, ImportedMessage, conversations_of

_SESSION_RE = re.compile(r"^session_(\d+)$")
_DATE_RE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)


@dataclasses.dataclass(frozen=True)
class Turn:
    speaker: str
    role: str
    text: str
    created_at: dt.datetime | None
    session: int
    turn_id: str


def locomo_date(value: str) -> dt.datetime | None:
    """'1:56 pm on 8 May, 2023' → an aware datetime in UTC (None when absent or unreadable)."""
    match = _DATE_RE.match(value or "")
    if not match:
        return None
    hour, minute, half, day, month, year = match.groups()
    try:
        parsed = dt.datetime.strptime(f"{int(hour)}:{minute} {half.upper()} {day} {month} {year}", "%I:%M %p %d %B %Y")
    except ValueError:
        return None
    return parsed.replace(tzinfo=dt.UTC)


def locomo_turns(data: dict) -> list[Turn]:
    """The turns of one LoCoMo conversation in order, sessions by number."""
    if not isinstance(data, dict) or "speaker_a" not in data or "speaker_b" not in data:
        raise ValidationError("Not a LoCoMo conversation: speaker_a and speaker_b are missing.")
    speaker_a = data["speaker_a"]
    sessions = sorted(int(m.group(1)) for key in data if (m := _SESSION_RE.match(key)))
    turns = []
    for number in sessions:
        when = locomo_date(data.get(f"session_{number}_date_time", ""))
        for turn in data[f"session_{number}"] or []:
            text = (turn.get("text") or "").strip()
            caption = (turn.get("blip_caption") or "").strip()
            if caption:
                text = f"{text} [shared an image: {caption}]".strip()
            if not text:
                continue
            speaker = turn.get("speaker") or ""
            turns.append(
                Turn(
                    speaker=speaker,
                    role="user" if speaker == speaker_a else "assistant",
                    text=text,
                    created_at=when,
                    session=number,
                    turn_id=str(turn.get("dia_id") or ""),
                )
            )
    if not turns:
        raise ValidationError("The conversation has no turns.")
    return turns


def locomo_conversations(items: Iterable[ExportItem]) -> Iterator[ImportedConversation]:
    """One conversation per LoCoMo object (a file is usually one), one message per turn, in order."""
    return conversations_of(items, conversation=_conversation, unwrap=lambda data: [data])


def _conversation(data: object, index: int) -> ImportedConversation:
    if not isinstance(data, dict):
        raise ValidationError("Not a LoCoMo conversation: expected a JSON object.")
    turns = locomo_turns(data)
    messages = [
        ImportedMessage(
            key=f"turn-{index}",  # dia_ids are not always unique in the published files
            parent=f"turn-{index - 1}" if index else None,
            role=turn.role,
            content=turn.text,
            created_at=turn.created_at,
            metadata={"speaker": turn.speaker, "turn_id": turn.turn_id, "session": turn.session},
        )
        for index, turn in enumerate(turns)
    ]
    label = f"{data['speaker_a']} and {data['speaker_b']} (LoCoMo)"
    return ImportedConversation(title=label, messages=messages, label=label)
