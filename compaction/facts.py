"""Pinning the facts a summary must not lose.

Whatever wrote the summary (a model or the offline summarizer), exact
details are what a later turn cannot reconstruct: file paths, URLs,
identifiers, error messages, dates and numbers. Those present in the
summarized text but absent from the summary are appended, verbatim, in a
short "References" section. Only what is what it says is listed (a path
must read as a path, `req/s` is not one; an identifier must have the shape
of code; a number only with its unit or the words around it, never a bare
"40"). Candidates that read like instructions to a model are never pinned,
and the text is redacted again on the way unless the caller says it was.

The section is part of the summary and lives inside its token limit: given
`max_tokens`, references are added one by one (errors first, numbers last)
while the whole text still fits, so a summary that used its whole budget
gets none rather than overflowing the limit its profile promises.

The source is read in line-aligned chunks, and reading stops as soon as
every kind has as many new references as it may list. A long stretch is
read at its start and at its end (HEAD_CHARS and TAIL_CHARS), where the
task was set and where it stands, not in full: the section lists a few
dozen details, and scanning a megabyte for them would cost more than the
rest of a compaction (the offline summary lists files, commands and
identifiers from the whole stretch itself).
"""

from __future__ import annotations

import bisect
import functools
import re
import threading
from collections.abc import Iterator

from chatcore.tokens import count_tokens
from compaction import lexicon, references
from compaction.redaction import redact
from compaction.safety.structure import code_span as code

HEADING = "## References (pinned from the summarized messages)"
# A few dozen details in all: errors are long and few matter, files and identifiers are short and many do.
MAX_PER_KIND = {"error": 4, "path": 12, "url": 8, "identifier": 12, "date": 6, "number": 8}
MAX_ITEM_CHARS = 160  # a reference longer than this is cut: a line of the section, not a paragraph
CHUNK_CHARS = 32_000  # read this much at a time, so that reading stops soon after every kind is full
HEAD_CHARS = 64_000
TAIL_CHARS = 64_000
_REDACTED_RE = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
MIN_NUMBER_DIGITS = 2  # a single digit is a count or a list number, not a figure worth pinning
NUMBER_CONTEXT_CHARS = 30  # a bare number is pinned with the name just before it, looked for this far back
# A number is a reference only with what it counts: a unit, or a word of context right before it.
_NUMBER_CONTEXT_RE = re.compile(r"[A-Za-z][\w/-]*[ =:]+$")
# The kinds in the order they are read: what an earlier kind claims, a later one does not read again.
_KINDS = {
    "error": lexicon.ERROR_RE,
    "url": lexicon.URL_RE,
    "path": lexicon.PATH_RE,
    "identifier": lexicon.IDENTIFIER_RE,
    "date": lexicon.DATE_RE,
    "number": lexicon.NUMBER_RE,
}


def _normalise(value: str) -> str:
    return " ".join(value.split()).strip(" .,;:")


class _Claims:
    """Claimed spans of one chunk, disjoint and sorted by start: an overlap check looks at two neighbours."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def claim(self, span: tuple[int, int]) -> None:
        index = bisect.bisect_right(self.starts, span[0])
        self.starts.insert(index, span[0])
        self.ends.insert(index, span[1])

    def overlaps(self, span: tuple[int, int]) -> bool:
        index = bisect.bisect_right(self.starts, span[0])
        if index > 0 and self.ends[index - 1] > span[0]:
            return True
        return index < len(self.starts) and self.starts[index] < span[1]


def _accepted(kind: str, value: str, chunk: str, start: int) -> str | None:
    """The reference `value` stands for, or None when it is not what it looks like."""
    if kind == "number":
        digits = re.sub(r"\D", "", value)
        unit = value[len(value.rstrip("abcdefghijklmnopqrstuvwxyz%×$ ")) :].strip()
        before = chunk[max(0, start - NUMBER_CONTEXT_CHARS) : start]
        if len(digits) < MIN_NUMBER_DIGITS or (not unit and not _NUMBER_CONTEXT_RE.search(before)):
            return None  # a bare number says nothing out of context
        if not unit:
            context = _NUMBER_CONTEXT_RE.search(before)
            value = (context.group(0) if context else "") + value
    elif kind == "date" and " " not in value and (value.lower().endswith("day") or value.isalpha()):
        return None  # "today", "Friday": no date without the day it was said
    elif kind == "path" and not references.is_path(value):
        return None
    elif kind == "identifier" and not references.is_identifier(value.strip("`")):
        return None
    return _normalise(value)[:MAX_ITEM_CHARS]


def _chunks(text: str):
    """Line-aligned chunks of the start and the end of `text` (all of it when it is short)."""
    if len(text) <= HEAD_CHARS + TAIL_CHARS:
        yield from _chunks_of(text)
        return
    head_end = text.rfind("\n", HEAD_CHARS // 2, HEAD_CHARS) + 1 or HEAD_CHARS
    tail_start = text.find("\n", len(text) - TAIL_CHARS) + 1 or len(text) - TAIL_CHARS
    yield from _chunks_of(text[:head_end])
    yield from _chunks_of(text[tail_start:])


def _chunks_of(text: str):
    start = 0
    while start < len(text):
        end = min(len(text), start + CHUNK_CHARS)
        if end < len(text):
            cut = text.rfind("\n", start + CHUNK_CHARS // 2, end)
            end = cut + 1 if cut > start else end
        yield text[start:end]
        start = end


def _on_injection_line(chunk: str, start: int, end: int) -> bool:
    line_end = chunk.find("\n", end)
    return lexicon.looks_like_injection(chunk[chunk.rfind("\n", 0, start) + 1 : line_end if line_end >= 0 else None])


_CLAIMING = ("error", "url", "path")  # their spans are not read again by the kinds after them


class _ChunkRead:
    """The references one chunk offers, kind by kind, as (value, key) in order: the same whatever the summary,
    so that pinning the same source twice (the offline summary's overflow check, then the final pin) reads each
    chunk once. The claiming kinds are read whole at once; the others only as far as a caller goes (a kind
    that is full is read no further), what was read kept for the next caller."""

    def __init__(self, chunk: str) -> None:
        self.chunk = chunk
        self.lock = threading.Lock()
        self.claims = _Claims()
        for redacted in _REDACTED_RE.finditer(chunk):
            self.claims.claim(redacted.span())
        self.kept: dict[str, list[tuple[str, str]]] = {kind: [] for kind in _KINDS}
        self.readers = {kind: self._read(kind) for kind in _KINDS}
        for kind in _CLAIMING:
            self.kept[kind].extend(self.readers[kind])

    def references(self, kind: str) -> Iterator[tuple[str, str]]:
        kept, index = self.kept[kind], 0
        while True:
            with self.lock:  # the same chunk may be pinned by two threads: one reads on at a time
                if index == len(kept):
                    found = next(self.readers[kind], None)
                    if found is None:
                        return
                    kept.append(found)
            yield kept[index]
            index += 1

    def _read(self, kind: str) -> Iterator[tuple[str, str]]:
        chunk = self.chunk
        for match in _KINDS[kind].finditer(chunk):
            if self.claims.overlaps(match.span()) or "[REDACTED:" in match.group(0):
                continue
            if kind in _CLAIMING:
                self.claims.claim(match.span())
            value = _accepted(kind, match.group(0), chunk, match.start())
            if not value or lexicon.looks_like_injection(value):
                continue
            if _on_injection_line(chunk, match.start(), match.end()):
                continue  # the payload of text addressed to a model is not a reference
            yield value, value.lower()


# The chunks of the last two pins or so (a chunk is at most CHUNK_CHARS of already redacted text).
_chunk_read = functools.lru_cache(maxsize=8)(_ChunkRead)


def _candidates(source_text: str, present: str) -> dict[str, list[str]]:
    """Up to MAX_PER_KIND values of each kind that the summary (`present`, lower-cased) lacks, in order."""
    chosen: dict[str, list[str]] = {kind: [] for kind in MAX_PER_KIND}
    seen: set[str] = set()
    for chunk in _chunks(source_text):
        read = _chunk_read(chunk)
        for kind in _KINDS:
            for value, key in read.references(kind):
                if len(chosen[kind]) >= MAX_PER_KIND[kind]:
                    break
                if key in seen or key in present:
                    continue
                seen.add(key)
                chosen[kind].append(value)
        if all(len(values) >= MAX_PER_KIND[kind] for kind, values in chosen.items()):
            break
    return chosen


_LABELS = {
    "error": "Errors",
    "path": "Files",
    "url": "URLs",
    "identifier": "Identifiers",
    "date": "Dates",
    "number": "Figures",
}


# Kinds whose values hold words from a message: written as code, verbatim data that never reads as the
# summary's own voice (an error message can say anything). Dates and figures are only what they count.
_QUOTED = frozenset({"error", "path", "url", "identifier"})


def _render(summary: str, chosen: dict[str, list[str]]) -> str:
    lines = [
        f"- {_LABELS[kind]}: " + "; ".join(code(value) if kind in _QUOTED else value for value in values)
        for kind, values in chosen.items()
        if values
    ]
    if not lines:
        return summary
    return summary.rstrip() + "\n\n" + HEADING + "\n" + "\n".join(lines)


def _fit(summary: str, chosen: dict[str, list[str]], max_tokens: int) -> dict[str, list[str]]:
    """The references, in order of kind, that fit in `max_tokens` together with the summary."""
    fitted: dict[str, list[str]] = {kind: [] for kind in chosen}
    used = count_tokens(summary.rstrip() + "\n\n" + HEADING)
    for kind, values in chosen.items():
        for value in values:
            # Estimate each item's cost alone (a new line for the first of its kind), then check the whole.
            piece = f"\n- {_LABELS[kind]}: `{value}`" if not fitted[kind] else f"; `{value}`"
            cost = count_tokens(piece) + 1
            if used + cost > max_tokens:
                continue
            fitted[kind].append(value)
            used += cost
    while any(fitted.values()) and count_tokens(_render(summary, fitted)) > max_tokens:
        kind = next(kind for kind in reversed(list(fitted)) if fitted[kind])
        fitted[kind].pop()
    return fitted


def facts_pin(*, source_text: str, summary: str, max_tokens: int | None = None, redacted: bool = False) -> str:
    """`summary` plus a References section listing the details it dropped (unchanged when none).

    With `max_tokens`, the result stays within it: references that do not fit are left out. `redacted`
    says the source was redacted already (the compaction service redacts every message once).
    """
    if not source_text:
        return summary
    if not redacted:
        source_text = redact(source_text).text
    chosen = _candidates(source_text, summary.lower())
    if max_tokens is not None:
        chosen = _fit(summary, chosen, max_tokens)
    return _render(summary, chosen)
