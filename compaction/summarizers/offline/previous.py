"""The previous summary in an iterative update: its lines compete with the new ones.

Each bullet of the previous summary becomes a candidate that keeps its text
exactly as it was (its quotations were verbatim when written, and stay so)
and its section, with a bonus, so an update keeps earlier facts inside the
same budget instead of summarizing a summary. A line that addresses a model
is set aside, as in the messages.
"""

from __future__ import annotations

import re

from compaction import lexicon
from compaction.pieces import estimate_tokens
from compaction.redaction import redact
from compaction.summarizers.offline.select import PER_TOKEN_PAD
from compaction.summarizers.offline.units import Unit

_HEADING_RE = re.compile(r"^#{2,3}\s+(.*?)\s*$")
_BULLET_RE = re.compile(r"^\s*[-*•]\s+(.*)$")
_DAY_RE = re.compile(r"^(?:\[ \] )?(\d{1,2} [A-Z][a-z]+ \d{4}) · ")
CARRIED_BONUS = 3.0  # a line of the previous summary was chosen once already: it outranks most new pieces


def carried_units(previous_summary: str) -> tuple[list[Unit], int]:
    """(units, lines set aside) of the previous summary's bullets, each with the title of its section."""
    section = "Key facts by day"
    units: list[Unit] = []
    set_aside = 0
    for number, line in enumerate(redact(previous_summary).text.splitlines()):
        heading = _HEADING_RE.match(line)
        if heading:
            section = heading.group(1)
            continue
        bullet = _BULLET_RE.match(line)
        if not bullet or section.startswith("References"):
            continue
        text = bullet.group(1).strip()
        if not text or text.lower() in ("none", "none recorded.") or text.startswith("Note: "):
            continue
        if lexicon.looks_like_injection(text):
            set_aside += 1
            continue
        day = _DAY_RE.match(text)
        units.append(
            Unit(
                item=-1,
                position=number,
                speaker="",
                role="summary",
                day=day.group(1) if day else "",
                text=text,
                words=frozenset(lexicon.content_words(text)),
                factor=1.0,
                bonus=CARRIED_BONUS,
                tokens=estimate_tokens(text) + PER_TOKEN_PAD,
                previous=section,
            )
        )
    return units, set_aside
