"""The scan every layer shares, and the spans they report.

`Scan` runs the three cheap expressions once per text (secret-ish words on
the lower-cased text, runs of token characters, digit and id groups) and
keeps what they found; the layers read those hits instead of scanning again.
`Spans` collects what the layers found: a span that overlaps one already
taken is dropped, unless it swallows it whole (a keyword's value that
contains a token keeps one placeholder, of the keyword's kind).
"""

from __future__ import annotations

import bisect
import functools
import re
from typing import Any

import re2

from compaction.redaction.vocabulary import NOISE_WORDS, TRIGGER_WORDS
from compaction.safety.first_pass import byte_spans

PLACEHOLDER = "[REDACTED:{kind}]"
PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z0-9_]+\]")

_PREFILTERED: list[Any] = []


def prefiltered(expression: Any) -> Any:
    """Register an RE2 expression over the text's ASCII image with the shared set (`Scan.image_spans`); returns it."""
    _PREFILTERED.append(expression)
    return expression


# Secret-ish words and command names, matched on the lower-cased text. RE2 runs this alternation of
# a few hundred words as one automaton, in linear time (Python's `re` backtracks through the alternation).
KEYWORD_RE = re2.compile("|".join(re.escape(word) for word in sorted(TRIGGER_WORDS, key=len, reverse=True)))
_NOISE = frozenset(NOISE_WORDS)
# The scan's expression: the words and, matched whole so that they can be dropped, the noise words.
_SCAN_WORDS = sorted(set(TRIGGER_WORDS) | _NOISE, key=len, reverse=True)
# Last, a decimal digit outside ASCII, which no word holds: Python's \d (DIGITS_RE) matches it and the
# ASCII image cannot show it, so this pass tells whether the digit groups need a full scan.
KEYWORD_BYTES_RE = re2.compile(("|".join(re.escape(word) for word in _SCAN_WORDS) + r"|[^0-9\P{Nd}]").encode("utf-8"))
# Tokens are found through their core: 12 or more letters and digits in a row that are not a word
# (`understanding`, `TimeoutError`) nor a number; the run of token characters around a core is the
# candidate ("digits:token" formats keep their ':'; later layers split further).
CORE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]{11,}")
# The scan finds them as runs of 12 or more of those characters (RE2 over the text's ASCII image), the
# core being the run from its first letter or digit: what CORE_RE finds, without its attempt at each letter.
_CORE_RUN_RE = re2.compile(rb"[A-Za-z0-9_\-]{12,}")
MIN_CORE_CHARS = 12  # what both expressions ask for
_PIECE_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
MAX_WORD_CHARS = 20  # a piece of letters longer than this is no word
MIN_WORD_VOWELS, MAX_WORD_VOWELS = 0.2, 0.7  # the share of vowels a word has (a key's letters have fewer or more)
_VOWEL_RE = re.compile(r"[aeiouyAEIOUY]")


@functools.lru_cache(maxsize=4096)
def _wordish(core: str) -> bool:
    """A number, or words: lower-case, Capitalised, CamelCase or UPPER, each piece with vowels like a word."""
    if core.isdigit():
        return True
    letters = core.replace("_", "").replace("-", "")
    if not letters.isalpha():
        return False
    for piece in _PIECE_RE.findall(letters):
        vowels = len(_VOWEL_RE.findall(piece))
        if len(piece) > MAX_WORD_CHARS or not MIN_WORD_VOWELS <= vowels / len(piece) <= MAX_WORD_VOWELS:
            return False
    return True


_RUN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=.~:%$")
_RUN_TAIL_RE = re.compile(r"[A-Za-z0-9_\-+/=.~:%$]*")
# Digit groups (cards, national ids) ...
DIGITS_RE = re.compile(
    r"\d(?<![\w.,:/-]\d)(?!\d{3}[-./]\d\d?[-./]\d\d?(?![\d.]|[-/]\d)|\d?[-./]\d\d?[-./]\d{2,4}(?![\d.]|[-/]\d))"
    r"[\d \-./+]{5,40}\d[A-Z]?(?![\w])"
)
# A run of digits and separators that can hold a digit group (RE2 on the text's ASCII image).
_DIGIT_RUN_RE = prefiltered(re2.compile(rb"[0-9 \-./+]*[0-9][0-9 \-./+]{5,}[0-9][0-9 \-./+]*"))
# DIGITS_RE reads a little past a run of digits and separators (a letter after the last digit, its look-aheads):
# it is run over the run and this many characters more.
DIGITS_READ_PAST = 4
# ... and upper-case ids with digits (IBAN, NINO, codice fiscale, PAN, CURP, NIE), few: RE2 again.
UPPER_ID_RE = prefiltered(re2.compile(rb"\b[A-Z]{1,6} ?\d[A-Z0-9 \-]{3,38}[A-Z0-9]\b"))
# Literal marks of the structure layer.
MARKS = ("-----BEGIN", "PuTTY-User-Key-File", "://", "WIFI:")
# A .pgpass line's host:port:db (the structure layer reads the line): RE2 on the text's ASCII image.
PGPASS_HINT = prefiltered(re2.compile(rb"[A-Za-z0-9_*]:(?:[0-9]{1,5}|\*):[A-Za-z0-9_*]"))


def re2_spans(expression: Any, data: bytes) -> list[tuple[int, int]]:
    """(start, end) of every match of an RE2 expression (one that cannot match the empty string) over `data`.

    On bytes the binding maps no offsets back to characters: each hit costs the search alone (`byte_spans`)."""
    return byte_spans(expression, data)


_PREFILTER_SETS: dict[int, tuple[Any, dict[int, int]]] = {}


def _prefilter_set() -> tuple[Any, dict[int, int]]:
    """The set of the registered expressions (built on first use, again if more were registered), and each
    expression's index in it."""
    count = len(_PREFILTERED)
    if count not in _PREFILTER_SETS:
        options = re2.Options()
        options.max_mem = PREFILTER_MAX_MEM
        expressions = re2.Set.SearchSet(options)
        for expression in _PREFILTERED:
            expressions.Add(expression.pattern)
        expressions.Compile()
        _PREFILTER_SETS[count] = (expressions, {id(expression): index for index, expression in enumerate(_PREFILTERED)})
    return _PREFILTER_SETS[count]


PREFILTER_MAX_MEM = 64 << 20  # RE2's memory for the set's automaton: room for all its expressions at once


def re2_group(expression: Any, data: bytes, start: int, end: int) -> tuple[int, int, int]:
    """(index from 0, start, end) of the first group that took part in `expression` matching data[start:end]
    whole (the catalogue's formats are one group each: the one that took part names the format)."""
    match = expression.fullmatch(data, start, end)
    group = next(group for group in range(1, match.re.groups + 1) if match.start(group) != -1)
    return (group - 1, *match.span(group))


def char_spans(expression: Any, text: str) -> list[tuple[int, int]]:
    """Spans (in characters) of an RE2 expression over `text`, run on its UTF-8 bytes with one conversion pass."""
    encoded = text.encode("utf-8")
    spans = re2_spans(expression, encoded)
    if len(encoded) == len(text):
        return spans
    result = []
    chars = previous = 0
    for start, end in spans:
        chars += len(encoded[previous:start].decode("utf-8"))
        width = len(encoded[start:end].decode("utf-8"))
        result.append((chars, chars + width))
        chars += width
        previous = end
    return result


class Scan:
    """One text with the hits of the shared expressions, computed on first use."""

    def __init__(self, text: str, lower: str | None = None) -> None:
        self.text = text
        if lower is None:
            lower = text.lower()
            # Lower-casing must keep offsets (a few characters such as 'İ' grow); otherwise fold ASCII only.
            if len(lower) != len(text):
                lower = text.translate(_ASCII_LOWER)
        self.lower = lower

    def suspicious(self) -> bool:
        text = self.text
        return bool(
            self.keyword_hits
            or self.runs
            or self.id_candidates
            or any(mark in text for mark in MARKS)
            or bool(self.image_spans(PGPASS_HINT))
        )

    @functools.cached_property
    def _present(self) -> frozenset[int]:
        """Indices (in the shared set) of the registered expressions that match somewhere in the image."""
        return frozenset(_prefilter_set()[0].Match(self.image) or ())

    def present(self, expression: Any) -> bool:
        """Whether a registered expression (`prefiltered`) matches somewhere in the image (the shared set's pass)."""
        return _prefilter_set()[1][id(expression)] in self._present

    def image_spans(self, expression: Any) -> list[tuple[int, int]]:
        """`re2_spans(expression, self.image)` of a registered expression (`prefiltered`): none without a pass
        of its own when the shared set's one pass found it nowhere. Most texts hold none of them, and one pass
        of the set costs about what one of them alone does."""
        index = _prefilter_set()[1].get(id(expression))
        if index is not None and index not in self._present:
            return []
        return re2_spans(expression, self.image)

    @functools.cached_property
    def image(self) -> bytes:
        """The text as ASCII bytes, every other character one '?': offsets are the text's, and the
        expressions of ASCII character classes that run on it (RE2's \\d and \\b are ASCII too) find
        what they would find on the text."""
        return self.text.encode("ascii", "replace")

    @functools.cached_property
    def keyword_hits(self) -> list[tuple[int, int]]:
        """Spans of the secret-ish words. RE2 runs on UTF-8 bytes; offsets are turned back into characters
        here in one pass (the binding's own conversion costs a pass over the text per match)."""
        return self._words[0]

    @functools.cached_property
    def _words(self) -> tuple[list[tuple[int, int]], bool]:
        """The secret-ish words, and whether the text holds a decimal digit outside ASCII."""
        lower = self.lower
        hits = [(s, e) for s, e in char_spans(KEYWORD_BYTES_RE, lower) if lower[s:e] not in _NOISE]
        if lower.isascii():
            return hits, False
        words = [(s, e) for s, e in hits if not (e - s == 1 and not lower[s].isascii() and lower[s].isdecimal())]
        return words, len(words) < len(hits)

    @functools.cached_property
    def runs(self) -> list[tuple[int, int]]:
        text = self.text
        found: list[tuple[int, int]] = []
        for start, end in re2_spans(_CORE_RUN_RE, self.image):
            core = text[start:end]
            if core[0] in "_-":  # a core starts with a letter or a digit
                core = core.lstrip("_-")
                if len(core) < MIN_CORE_CHARS:
                    continue
                start = end - len(core)
            if (found and start < found[-1][1]) or _wordish(core):
                continue
            while start > 0 and text[start - 1] in _RUN_CHARS:
                start -= 1
            tail = _RUN_TAIL_RE.match(text, end)
            found.append((start, tail.end() if tail else end))
        return found

    @functools.cached_property
    def id_candidates(self) -> list[tuple[int, int]]:
        text = self.text
        found = self.image_spans(UPPER_ID_RE)  # IBANs before the digit groups inside them
        if self._words[1]:
            return found + [m.span() for m in DIGITS_RE.finditer(text)]
        # Every digit group lies in a run of digits and separators that the cheap expression finds; the
        # full expression (its look-arounds see the text around) runs only there. A search, and another
        # from each match's end, finds what `finditer` does (no match is empty) without an iterator and a
        # list per run: most runs (dates, times, versions) hold no group.
        search, length = DIGITS_RE.search, len(text)
        for start, end in self.image_spans(_DIGIT_RUN_RE):
            stop = min(length, end + DIGITS_READ_PAST)
            match = search(text, start, stop)
            while match is not None:
                found.append(match.span())
                match = search(text, match.end(), stop)
        return found

    def line_bounds(self, position: int) -> tuple[int, int]:
        start = self.text.rfind("\n", 0, position) + 1
        end = self.text.find("\n", position)
        return start, len(self.text) if end == -1 else end


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class Spans:
    """Non-overlapping (start, end, kind) spans of one text, kept sorted, and placeholders that must stay
    as they are (kind None). Lookups are by bisection: a long text with many secrets stays linear."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._spans: list[tuple[int, int, str | None]] = []
        self._starts: list[int] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    @property
    def items(self) -> list[tuple[int, int, str]]:
        return [span for span in self._spans if span[2] is not None]  # type: ignore[misc]

    def _overlapping(self, start: int, end: int) -> tuple[int, int]:
        """Index range of the spans that overlap [start, end)."""
        low = bisect.bisect_left(self._starts, start)
        if low > 0 and self._spans[low - 1][1] > start:
            low -= 1
        high = low
        while high < len(self._spans) and self._spans[high][0] < end:
            high += 1
        return low, high

    def protect(self, start: int, end: int) -> None:
        low, high = self._overlapping(start, end)
        if low == high:
            self._spans.insert(low, (start, end, None))
            self._starts.insert(low, start)

    def covered(self, start: int, end: int) -> bool:
        """True when [start, end) overlaps a span or a placeholder already there."""
        low, high = self._overlapping(start, end)
        return high > low

    def within_one(self, start: int, end: int) -> bool:
        """True when [start, end) lies inside a single span already there."""
        low, high = self._overlapping(start, end)
        return high - low == 1 and self._spans[low][0] <= start and end <= self._spans[low][1]

    def add(self, start: int, end: int, kind: str, *, swallow: bool = False) -> bool:
        """Take [start, end) as a secret of `kind`; False if it clashes with what is there.

        With `swallow`, spans lying wholly inside the new one are replaced by it.
        """
        while start < end and self.text[start].isspace():
            start += 1
        while end > start and self.text[end - 1].isspace():
            end -= 1
        if start >= end:
            return False
        low, high = self._overlapping(start, end)
        clashing = self._spans[low:high]
        if clashing:
            if not swallow or any(k is None or s < start or e > end for s, e, k in clashing):
                return False
            if sum(e - s for s, e, _ in clashing) >= end - start:
                return False  # already hidden whole, under a more precise kind
        self._spans[low:high] = [(start, end, kind)]
        self._starts[low:high] = [start]
        return True
