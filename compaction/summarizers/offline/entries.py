"""The lines of the summary and how they are written.

Whatever is attributed to a speaker is written between quotation marks and
is an exact span of what they wrote (docs/design.md, invariant 10): pieces of one
message that follow each other are joined by the very text that separates
them in the message; pieces further apart are joined by a marked ellipsis,
"[…]", inside the quote; an anchored date is an insertion in square brackets
("yesterday [7 May 2023]"); a sentence cut short ends in "[…]". Everything
outside the quotation marks is the summarizer's own framing (who, when,
what a tool returned) and never claims to be anyone's words.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from compaction.dates import date_anchors
from compaction.safety.structure import code_span
from compaction.summarizers.offline.tools import Attempt
from compaction.summarizers.offline.units import Unit
from compaction.transcript import TranscriptItem

OPEN, CLOSE = "“", "”"
ELLIPSIS = " […] "
AFTER_PIECES = 1000  # an attempt sorts after the pieces of its message (a message has far fewer)


def _anchored(unit: Unit) -> str:
    """The unit's text with its dates inserted; kept on the unit, since the fit to the token limit renders the
    summary many times over."""
    if unit.anchored is not None:
        return unit.anchored
    text = unit.text
    if unit.said_on is not None:
        pieces, start = [], 0
        for position, anchor in date_anchors(text, said_on=unit.said_on):
            pieces.extend([text[start:position], f" [{anchor}]"])
            start = position
        pieces.append(text[start:])
        text = "".join(pieces)
    unit.anchored = text
    return text


def quote(units: Sequence[Unit], content: str) -> str:
    """One quotation of pieces of a single message, in their order."""
    ordered = sorted(units, key=lambda u: u.position)
    parts: list[str] = []
    previous: Unit | None = None
    for unit in ordered:
        piece = unit.piece
        text = _anchored(unit)
        if previous is not None and previous.piece is not None and piece is not None:
            between = content[previous.piece.end : piece.start]
            adjacent = piece.position == previous.piece.position + 1 and between.strip() == "" and "\n" not in between
            parts.append(between if adjacent and not previous.piece.cut else ELLIPSIS)
        parts.append(text)
        previous = unit
    cut = " […]" if ordered and ordered[-1].piece is not None and ordered[-1].piece.cut else ""
    return OPEN + "".join(parts).strip() + cut + CLOSE


def quotes_by_message(units: Sequence[Unit], items: list[TranscriptItem]) -> list[tuple[str, str]]:
    """(speaker, quotation) for each message the units come from, in the order said."""
    groups: dict[int, list[Unit]] = {}
    for unit in sorted(units, key=lambda u: u.order):
        groups.setdefault(unit.item, []).append(unit)
    out = []
    for index, group in groups.items():
        captions = [u for u in group if u.piece is not None and u.piece.kind == "caption"]
        said = [u for u in group if u not in captions]
        content = items[index].content
        if said:
            out.append((group[0].speaker, quote(said, content)))
        for caption in captions:
            out.append((group[0].speaker, f"(shared an image: {quote([caption], content)})"))
    return out


def attributed(units: Sequence[Unit], items: list[TranscriptItem], *, first_speaker: str = "") -> str:
    """Quotations with each speaker named when the speaker changes ("Ana: “…” “…” Ben: “…”")."""
    words, speaker = [], first_speaker
    for who, text in quotes_by_message(units, items):
        words.append(text if who == speaker else f"{who}: {text}")
        speaker = who
    return " ".join(words)


@dataclasses.dataclass(eq=False)
class Entry:
    """A line of a section: quoted units with the summarizer's framing, a tool attempt, or a carried line."""

    units: list[Unit] = dataclasses.field(default_factory=list)
    lead: str = ""  # framing before the quotes, e.g. "User agreed to Assistant's proposal:"
    tail: str = ""  # framing after, e.g. "— owner: Assistant; due: before production"
    day: str = ""
    attempt: Attempt | None = None
    carried: str = ""  # a line of the previous summary, kept as it was
    checkbox: bool = False
    heading: str = ""  # a day heading (no bullet) over the lines of a long day
    value: float = 0.0
    tokens: int = 0

    @property
    def order(self) -> tuple[int, int]:
        if self.carried:
            return (-1, 0)
        if self.attempt is not None:
            return (self.attempt.item, AFTER_PIECES)
        return min(unit.order for unit in self.units) if self.units else (-1, 0)


def attempt_text(attempt: Attempt, items: list[TranscriptItem]) -> str:
    """ "`run_tests` `-x -q` → failed: “FAILED …” · “1 failed, 211 passed in 48.31s”"."""
    call = f"`{attempt.name}`" + (f" {code(attempt.arguments)}" if attempt.arguments else "")
    if attempt.result_item is None:
        return f"{call} → its result is among the newer messages"
    content = items[attempt.result_item].content
    outcome = " · ".join(OPEN + content[start:end] + CLOSE for start, end in attempt.outcome)
    verdict = "failed" if attempt.failed else "ok"
    return f"{call} → {verdict}" + (f": {outcome}" if outcome else "")


def code(text: str) -> str:
    """`text` as inline code, whatever backticks it contains."""
    return code_span(text)


def render_entry(entry: Entry, items: list[TranscriptItem], *, show_day: bool) -> str:
    if entry.carried:
        return f"- {entry.carried}"
    day = f"{entry.day} · " if show_day and entry.day else ""
    box = "[ ] " if entry.checkbox else ""
    if entry.attempt is not None:
        body = attempt_text(entry.attempt, items)
    else:
        lead = f"{entry.lead} " if entry.lead else ""
        body = lead + (attributed(entry.units, items) if not entry.lead.endswith(":") else _bare(entry, items))
    tail = f" {entry.tail}" if entry.tail else ""
    return f"- {box}{day}{body}{tail}"


def _bare(entry: Entry, items: list[TranscriptItem]) -> str:
    """Quotations without speaker names: the lead already says whose they are."""
    return " ".join(text for _, text in quotes_by_message(entry.units, items))
