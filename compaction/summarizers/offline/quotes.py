"""Checking docs/design.md invariant 10 on a summary: a quote is a quote.

A quotation runs from “ to its matching ”. Inside it, " […] " joins two
pieces of the same message (an ellipsis, marked), a final " […]" says the
sentence went on, and a bracketed insertion that is not in the message
(an anchored date, " [7 May 2023]") is the summarizer's; what remains of
each piece must be an exact substring of one message, the same message for
all the pieces of one quotation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from compaction.summarizers.offline.entries import CLOSE, ELLIPSIS, OPEN

_INSERTION_RE = re.compile(r" \[[^\[\]\n]*\]")


def quotations(text: str) -> list[str]:
    """The text of every top-level quotation in `text`, in order (nested “ ” pairs stay inside)."""
    found, depth, start = [], 0, 0
    for position, character in enumerate(text):
        if character == OPEN:
            if depth == 0:
                start = position + 1
            depth += 1
        elif character == CLOSE and depth:
            depth -= 1
            if depth == 0:
                found.append(text[start:position])
    return found


def pieces(quotation: str) -> list[str]:
    """The parts of a quotation that must be verbatim, without the ellipsis and cut marks."""
    body = quotation[: -len(" […]")] if quotation.endswith(" […]") else quotation
    return [part for part in body.split(ELLIPSIS) if part]


def _verbatim_in(part: str, message: str) -> bool:
    if part in message:
        return True
    insertions = [m for m in _INSERTION_RE.finditer(part) if m.group(0) not in message]
    if not insertions:
        return False
    stripped, last = [], 0
    for match in insertions:
        stripped.append(part[last : match.start()])
        last = match.end()
    stripped.append(part[last:])
    return "".join(stripped) in message


def unverified(summary: str, messages: Iterable[str]) -> list[str]:
    """The quotations of `summary` that are not verbatim spans of one of `messages` (empty when all are)."""
    sources = [message for message in messages if message]
    bad = []
    for quotation in quotations(summary):
        parts = pieces(quotation)
        if not parts or not any(all(_verbatim_in(part, message) for part in parts) for message in sources):
            bad.append(quotation)
    return bad


_CODE_SPAN_RE = re.compile(r"(`+)(?:(?!\1).)+?\1")


def own_voice(summary: str) -> str:
    """What `summary` says in its own voice: the text left without its quotations, its code spans and its quoted
    blocks (lines opening with ">"), each of which is someone else's text copied as data."""
    for quotation in quotations(summary):
        summary = summary.replace(f"{OPEN}{quotation}{CLOSE}", " ", 1)
    summary = _CODE_SPAN_RE.sub(" ", summary)
    return "\n".join(line for line in summary.splitlines() if not line.startswith(">"))
