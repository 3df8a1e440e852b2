"""Pinning the facts a summary must not lose.

Whatever wrote the summary (a model or the offline summarizer), exact
details are what a later turn cannot reconstruct: file paths, URLs,
identifiers, error messages, dates and numbers. Those present in the
summarized text but absent from the summary are appended, verbatim, in a
short "References" section. Candidates that read like instructions to a
model are never pinned, and the text is redacted again on the way.

The section is part of the summary and lives inside its token limit: given
`max_tokens`, references are added one by one (errors first, numbers last)
while the whole text still fits, so a summary that used its whole budget
gets none rather than overflowing the limit its profile promises.
"""

from __future__ import annotations

import bisect
import re

from chatcore.tokens import count_tokens
from compaction import lexicon
from compaction.redaction import redact

HEADING = "## References (pinned from the summarized messages)"
MAX_PER_KIND = {"error": 4, "path": 12, "url": 8, "identifier": 12, "date": 6, "number": 8}
MAX_ITEM_CHARS = 160


def _normalise(value: str) -> str:
    return " ".join(value.split()).strip(" .,;:")


def _candidates(source_text: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    # Claimed spans, disjoint and sorted by start (so ends are sorted too): an
    # overlap check looks only at the two neighbours, keeping long sources linear.
    starts: list[int] = []
    ends: list[int] = []

    def claim(span: tuple[int, int]) -> None:
        index = bisect.bisect_right(starts, span[0])
        starts.insert(index, span[0])
        ends.insert(index, span[1])

    def overlaps(span: tuple[int, int]) -> bool:
        index = bisect.bisect_right(starts, span[0])
        if index > 0 and ends[index - 1] > span[0]:
            return True
        return index < len(starts) and starts[index] < span[1]

    for redacted in re.finditer(r"\[REDACTED:[a-z0-9_]+\]", source_text):
        claim(redacted.span())

    for kind, regex in (
        ("error", lexicon.ERROR_RE),
        ("url", lexicon.URL_RE),
        ("path", lexicon.PATH_RE),
        ("identifier", lexicon.IDENTIFIER_RE),
        ("date", lexicon.DATE_RE),
        ("number", lexicon.NUMBER_RE),
    ):
        for match in regex.finditer(source_text):
            value = _normalise(match.group(0))
            if not value or overlaps(match.span()) or "[REDACTED:" in value:
                continue
            if kind == "number" and len(re.sub(r"\D", "", value)) < 2:
                continue  # single digits carry no meaning out of context
            if (
                kind == "date"
                and value.lower() in ("today", "yesterday", "tomorrow")
                or (kind == "date" and value.lower().endswith("day") and " " not in value)
            ):
                continue
            if kind in ("url", "path", "error"):
                claim(match.span())
            found.append((kind, value[:MAX_ITEM_CHARS]))
    return found


_LABELS = {
    "error": "Errors",
    "path": "Files",
    "url": "URLs",
    "identifier": "Identifiers",
    "date": "Dates",
    "number": "Numbers",
}


def _render(summary: str, chosen: dict[str, list[str]]) -> str:
    lines = [
        f"- {_LABELS[kind]}: "
        + "; ".join(f"`{v}`" if kind in ("path", "identifier") and "`" not in v else v for v in values)
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


def facts_pin(*, source_text: str, summary: str, max_tokens: int | None = None) -> str:
    """`summary` plus a References section listing the details it dropped (unchanged when none).

    With `max_tokens`, the result stays within it: references that do not fit are left out.
    """
    if not source_text:
        return summary
    source_text = redact(source_text).text
    present = summary.lower()
    chosen: dict[str, list[str]] = {kind: [] for kind in MAX_PER_KIND}
    seen: set[str] = set()
    for kind, value in _candidates(source_text):
        key = value.lower()
        if key in seen or key in present or lexicon.looks_like_injection(value):
            continue
        seen.add(key)
        if len(chosen[kind]) < MAX_PER_KIND[kind]:
            chosen[kind].append(value)
    if max_tokens is not None:
        chosen = _fit(summary, chosen, max_tokens)
    return _render(summary, chosen)
