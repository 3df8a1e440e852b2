"""Names that go into a model's context or a summary, limited to a safe character set.

A speaker's name or a tool's name comes from message metadata, written by
whoever stored the message (an import, an API client, a model's tool call).
Rendered into a turn label or a note, a newline, a bracket or a '#' in it
could open a turn or a section of its own. A name is therefore its first
line only, cut short, and made of letters, digits, spaces and a few marks;
anything else is dropped. compaction.safety adds redaction and the
injection check on top of these.
"""

from __future__ import annotations

import re
import unicodedata

SPEAKER_MAX_CHARS = 48
TOOL_MAX_CHARS = 64
# Every format character (Unicode category Cf: zero-width spaces and joiners, bidi controls, soft hyphen, tag
# characters, ...), plus invisible characters of other categories (Hangul fillers, variation selectors,
# the combining grapheme joiner). tests/compaction/test_safety_injection.py checks the table against
# unicodedata. compaction.safety folds text with it too.
INVISIBLE_RE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
    "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u3164\uffa0\ufe00-\ufe0f\U000e0100-\U000e01ef]+"
)
_TOOL_UNSAFE_RE = re.compile(r"[^\w.\-:/]+")
_SPEAKER_MARKS = frozenset(" .'’-_@&(),+")


def _first_line(raw: object) -> str:
    text = unicodedata.normalize("NFKC", INVISIBLE_RE.sub("", str(raw or "")))
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


WORD_CUT_PART = 2  # a long name is cut at a space only when that keeps more than this part (half) of the limit


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // WORD_CUT_PART else limit].rstrip()


def speaker_name_clean(raw: object, *, fallback: str) -> str:
    """`raw` as a speaker's name: its first line, letters (any script), digits, spaces and . ' - _ @ & ( ) , +
    and symbols such as emoji, at most SPEAKER_MAX_CHARS; `fallback` when nothing is left."""
    kept = []
    for character in _first_line(raw):
        category = unicodedata.category(character)
        if category[0] in "LMN" or category == "So" or character in _SPEAKER_MARKS:
            kept.append(character)
        else:
            kept.append(" ")
    name = _cut(" ".join("".join(kept).split()), SPEAKER_MAX_CHARS).strip(" .,-_")
    return name or fallback


def tool_name_clean(raw: object, *, fallback: str = "tool") -> str:
    """`raw` as a tool's name: its first line, word characters and . - : / only, at most TOOL_MAX_CHARS."""
    name = _TOOL_UNSAFE_RE.sub("_", _first_line(raw)).strip("_")[:TOOL_MAX_CHARS]
    return name or fallback
