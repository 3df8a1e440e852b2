"""Lines that could pass for structure, escaped; names made safe.

The transcript a model reads is a sequence of turns, each opened by a label
("[USER · Dana · 8 May 2023, 13:56]: …") at the start of a line, fenced
between markers, and the summary it writes is Markdown with sections. A
message, a tool result, a tool call's arguments or a name that contains a
line shaped like any of those could open a turn of its own, close a fence or
start a section. So, wherever a transcript or prompt is built:

- every kind of line break becomes a newline (`normalize.unify_lines`: a
  lone CR or U+2028 starts a line for a model or a Markdown reader too);
- each line of such text that reads (in its `normalize.skeleton`: no hidden
  characters, look-alike letters read as ASCII) as a turn label (in any
  bracket, after a quote mark, a bullet or emphasis), a fence
  or chat-template marker, or a heading is escaped with a leading backslash
  (`ESCAPE`), and the continuation lines of a turn are indented
  (`turn_body`), so only the renderer's own labels start a line;
- speaker and tool names are redacted (`compaction.redaction.redact`), cut
  to their first line and a safe character set (`chatcore.names`), and
  refused (the role stands in) when they are shaped like structure or
  address a model.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Iterable

import re2

from chatcore.names import speaker_name_clean, tool_name_clean
from compaction.redaction import redact
from compaction.redaction.spans import PLACEHOLDER_RE
from compaction.safety.first_pass import Joined, scan
from compaction.safety.injection import looks_like_injection
from compaction.safety.normalize import skeleton, unify_lines

ESCAPE = "\\"
INDENT = "  "
_ROLE = (
    r"(?:user|assistant|system|developer|tool(?:[ _](?:result|call|output))?|function|human|ai|model|bot|operator|"
    r"admin|summari[sz]er|earlier summary)"
)
_LEAD_RE = re.compile(r"^[\s>]*")
_OPEN = r"[\[(<{【〔〖〘〚⟦⟨«‹]"
_CLOSE = r"[\])>}】〕〗〙〛⟧⟩»›]"
_SQUARE = r"[\[【〔〖〘〚⟦]"  # a role right after one of these opens a label even without its colon
_MARK = r"[*_~`]*"  # emphasis or code marks around a label
_SEPARATOR = r"[·•|\-–—/,]"
_LABEL_RE = re.compile(
    rf"(?:(?:[-+•*]|\d{{1,3}}[.)])\s+)?{_MARK}"
    rf"(?:{_OPEN}[^\n]{{0,200}}?{_CLOSE}{_MARK}\s*:|{_SQUARE}\s*{_ROLE}\b"
    rf"|{_ROLE}{_MARK}\s*(?:\([^)\n]{{0,60}}\)|{_SEPARATOR}[^:\n]{{0,80}})?{_MARK}\s*:"
    rf"|(?:role|speaker|from|author|name)\s*:\s*{_ROLE}\b)"
)
_FENCE_START_RE = re.compile(r"<<<|>>>|`{3,}|~{3,}|(?:begin|end)\s+(?:transcript|earlier summary|keep verbatim)\b")
_MARKER_RE = re.compile(
    r"<<<\s*(?:begin|end)\b|<\|\s*[a-z_]{2,30}\s*\|>|\[/?inst\]|<<\s*/?\s*sys\s*>>"
    r"|</?\s*(?:system|user|assistant|transcript|conversation_summary|instructions?|human|ai|tool|developer|"
    r"earlier_summary|context|message|im_start|im_end|h[1-6])\b[^<>\n]{0,80}>"
)
# What every match of _MARKER_RE holds (it reads a lower-cased line): a "<", or a "[" only in "[inst]" or "[/inst]".
_MARKER_STARTS = ("<", "[inst]", "[/inst]")
_HEADING_RE = re.compile(
    r"#{1,6}(?:\s|$)|(?:={3,}|-{3,}|\*{3,}|_{3,})\s*$|\*\*[^*\n]{1,80}\*\*\s*:?\s*$|__[^_\n]{1,80}__\s*:?\s*$"
    r"|(?:goal|goals|summary|instructions?|current state(?: and next steps)?|state|key (?:decisions|facts|points)"
    r"(?: by day)?|decisions(?: to respect)?|settled|tried and outcome|done(?: and tried)?|rejected and why|"
    r"open questions|next (?:steps|actions)|blockers(?: and risks)?|where it stands|background|account by day|"
    r"files(?:, commands)? and (?:references|identifiers)|references(?: \([^)\n]*\))?|user instructions"
    r"(?: \(verbatim\))?|opening exchange(?: \(verbatim\))?|hand-?over)\s*:?\s*$"
)


@functools.lru_cache(maxsize=256)
def _names_re(names: frozenset[str]) -> re.Pattern[str] | None:
    folded = sorted({skeleton(name) for name in names if len(name) >= 2}, key=len, reverse=True)
    if not folded:
        return None
    alternatives = "|".join(re.escape(name) for name in folded)
    return re.compile(
        rf"{_MARK}(?:{alternatives}){_MARK}\s*(?:\([^)\n]{{0,60}}\)|{_SEPARATOR}[^:\n]{{0,80}})?{_MARK}\s*:"
    )


def structural(line: str, *, names: frozenset[str] = frozenset(), headings: bool = True) -> bool:
    """Whether `line` could be read as a turn label (of a role or of one of `names`), a fence or chat-template
    marker, or (with `headings`) a Markdown heading or a summary's section title."""
    folded = skeleton(line)
    bare = folded[_LEAD_RE.match(folded).end() :]  # type: ignore[union-attr]  # the pattern always matches
    if not bare:
        return False
    # Every marker opens with "<" or "[": a line with neither is not searched for one.
    marker = ("<" in bare or "[" in bare) and _MARKER_RE.search(bare) is not None
    if _LABEL_RE.match(bare) or _FENCE_START_RE.match(bare) or marker:
        return True
    if headings and _HEADING_RE.match(bare):
        return True
    names_re = _names_re(names) if names else None
    return names_re is not None and names_re.match(bare) is not None


def neutralize_lines(text: str, *, names: Iterable[str] = (), headings: bool = True) -> str:
    """`text` with every structural line (see `structural`) escaped by a leading backslash; nothing else
    changes."""
    known = frozenset(names)
    lines = unify_lines(text).split("\n")
    for number, line in enumerate(lines):
        if line and structural(line, names=known, headings=headings):
            lines[number] = ESCAPE + line
    return "\n".join(lines)


def turn_body(text: str, *, names: Iterable[str] = ()) -> str:
    """The text of one turn as the transcript shows it: structural lines escaped, continuation lines indented
    (a blank line stays blank), so that nothing in it starts a line the way a turn label does."""
    escaped = neutralize_lines(text, names=names)
    if "\n" not in escaped:
        return escaped
    first, *rest = escaped.split("\n")
    return "\n".join([first, *(INDENT + line if line.strip() else "" for line in rest)])


# What makes `fold` of an ASCII line more than its lower case: a run of spaces, or a space other than " " (after
# `unify_lines`, no line holds a line break). Looked for one by one: a few fast substring scans, not a regex's.
_UNUSUAL_SPACES = ("  ", "\t", "\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x1f")


@functools.lru_cache(maxsize=256)
def _line_start_scan(names: frozenset[str]) -> re2.Set | None:
    """An RE2 scan of ASCII lines lower-cased (each its `skeleton` then, when it holds no unusual space) that
    matches at the start of every line where `_LABEL_RE`, `_FENCE_START_RE`, `_HEADING_RE` or the names' pattern
    matches once the line's lead is skipped (on ASCII text RE2 reads their classes, `\\b` and `$` in MULTILINE mode
    as Python does, and none of them looks past a line's end otherwise); None when a name's pattern is not RE2's."""
    alternatives = [_LABEL_RE.pattern, _FENCE_START_RE.pattern, _HEADING_RE.pattern]
    names_re = _names_re(names) if names else None
    if names_re is not None:
        alternatives.append(names_re.pattern)
    try:
        return scan("^[ >]*(?:" + "|".join(f"(?:{alternative})" for alternative in alternatives) + ")", re.MULTILINE)
    except re2.error:
        return None


def _structural_lines(lines: list[str], names: frozenset[str]) -> set[int]:
    """The indices of `lines` (none holding a line break) that `structural` (headings included) says yes for. The
    ASCII lines are lower-cased at once and joined; only those whose start `_line_start_scan` matches, or that hold
    what a marker holds (`_MARKER_STARTS`), are asked: a superset of the lines it says yes for."""
    numbers: list[int] | None = None  # which line each of the batch is, when not all are in it
    joined = "\n".join(lines)
    asked: set[int] = set()
    present = [space for space in _UNUSUAL_SPACES if space in joined]
    if present or not joined.isascii():  # the lines that are not asked one by one
        plain = [line.isascii() and not any(space in line for space in present) for line in lines]
        asked = {number for number, line in enumerate(lines) if not plain[number] and structural(line, names=names)}
        numbers = [number for number in range(len(lines)) if plain[number]]
        joined = "\n".join(lines[number] for number in numbers)
    batch = lines if numbers is None else [lines[number] for number in numbers]
    line_start = _line_start_scan(names)
    if not batch:
        return asked
    if line_start is None:
        return {number for number, line in enumerate(lines) if line and structural(line, names=names)}
    lower = joined.lower()
    maybe = Joined(lower.split("\n")).hits(line_start)
    starts = list(itertools.accumulate((len(line) + 1 for line in batch[:-1]), initial=0))
    for mark in _MARKER_STARTS:
        position = lower.find(mark)
        while position >= 0:
            maybe.add(bisect.bisect_right(starts, position) - 1)
            position = lower.find(mark, position + 1)
    found = {number for number in maybe if batch[number] and structural(batch[number], names=names)}
    return asked | (found if numbers is None else {numbers[number] for number in found})


def turn_bodies(texts: list[str], *, names: frozenset[str] = frozenset()) -> list[str]:
    """`turn_body` of each of `texts`, the lines of them all checked in one batch (`_structural_lines`)."""
    split = [unify_lines(text).split("\n") for text in texts]
    lines = [line for text_lines in split for line in text_lines]
    escaped = _structural_lines(lines, names)
    bodies, number = [], 0
    for text_lines in split:
        if escaped:
            text_lines = [ESCAPE + line if number + i in escaped else line for i, line in enumerate(text_lines)]
        number += len(text_lines)
        if len(text_lines) == 1:
            bodies.append(text_lines[0])
        else:
            first, *rest = text_lines
            bodies.append("\n".join([first, *(INDENT + line if line.strip() else "" for line in rest)]))
    return bodies


_BACKTICKS_RE = re.compile(r"`+")


def code_span(text: str) -> str:
    """`text` as Markdown inline code, whatever backticks it holds (the fence is longer than any run of them):
    verbatim data on the page, never read as the surrounding text's own words."""
    fence = "`" * (max((len(run) for run in _BACKTICKS_RE.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _unbracketed(text: str) -> str:
    return PLACEHOLDER_RE.sub(lambda match: "(redacted)", text)


# A name from metadata is read this far at most before it is checked: far beyond any name kept, and redaction and
# the injection check stay cheap on a "name" of a megabyte.
RAW_NAME_CHARS = 200


@functools.lru_cache(maxsize=4_096)
def safe_speaker(raw: str, fallback: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    """(name, redaction counts) of a speaker's name from metadata: redacted, its first line in the safe set,
    `fallback` when it is empty, shaped like structure, or addressed to a model."""
    redacted = redact(str(raw or ""))
    first = next((line for line in redacted.text.splitlines() if line.strip()), "")
    name = speaker_name_clean(_unbracketed(first), fallback=fallback)
    if name != fallback and (structural(first) or structural(name) or looks_like_injection(first)):
        name = fallback
    return name, tuple(sorted(redacted.counts.items()))


@functools.lru_cache(maxsize=4_096)
def safe_tool(raw: str, fallback: str = "tool") -> tuple[str, tuple[tuple[str, int], ...]]:
    """(name, redaction counts) of a tool's name: redacted, in the safe set of `chatcore.names.tool_name_clean`."""
    redacted = redact(str(raw or ""))
    name = tool_name_clean(_unbracketed(redacted.text), fallback=fallback)
    if name != fallback and looks_like_injection(name.replace("_", " ")):
        name = fallback
    return name, tuple(sorted(redacted.counts.items()))
