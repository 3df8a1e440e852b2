"""A first pass in RE2 for Python patterns that are long alternations.

Python's engine tries each branch of an alternation at every position of the
text, so a pattern of hundreds of phrases costs hundreds of microseconds a
message even when nothing matches, which is nearly always. RE2 runs the same
alternation in one linear scan. It lacks lookarounds and reads `\\b` and `\\w`
as ASCII, so the pattern is loosened until it matches wherever Python's would
(lookarounds and word boundaries dropped, a word character read as any
non-space, every Unicode space a space); Python's pattern then decides on the
rare text that passes.

`AsciiTwin` is the exact counterpart for patterns without lookarounds: on
ASCII text RE2 and Python read `\\b`, `\\w`, `\\d` and case alike, so RE2
alone answers there and Python's engine only reads the rest.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from typing import Any

import re2

_SPACE = r"[\s\x{0b}\x{1c}-\x{1f}\x{85}\pZ]"


def _without_lookarounds(pattern: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern[index] == "\\":
            out.append(pattern[index : index + 2])
            index += 2
        elif pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), index):
            index = _group_end(pattern, index)
        else:
            out.append(pattern[index])
            index += 1
    return "".join(out)


def _group_end(pattern: str, start: int) -> int:
    """The index after the group opened at `start` (escapes and character classes skipped)."""
    depth, index, in_class = 0, start, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern[index + 1 : index + 2] == "]":
                index += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    raise ValueError(f"unbalanced group at {start}")


# RE2's memory budget for one expression's automaton: room for the long alternations without its cache thrashing.
MAX_MEM = 64 << 20


def scan(source: str, flags: int = 0) -> re2.Set:
    """An RE2 expression asked only whether it matches anywhere (see `found`): a search set of one pattern."""
    prefix = "".join(flag for bit, flag in ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s")) if flags & bit)
    options = re2.Options()
    options.max_mem = MAX_MEM
    expression = re2.Set.SearchSet(options)
    expression.Add(f"(?{prefix}){source}" if prefix else source)
    expression.Compile()
    _SOURCES[id(expression)] = (f"(?{prefix}){source}" if prefix else source, options)
    return expression


_SOURCES: dict[int, tuple[str, Any]] = {}  # each scan's pattern, for the batch scans of `Joined` (compiled lazily)
_BATCH: dict[int, Any] = {}


def _batch_regexp(expression: re2.Set) -> Any:
    """The pattern of a scan as an RE2 expression that reports where it matches (a set only says whether)."""
    if id(expression) not in _BATCH:
        source, options = _SOURCES[id(expression)]
        _BATCH[id(expression)] = re2.compile(source, options)
    return _BATCH[id(expression)]


# The binding's compiled expression and its unanchored mode: `_Regexp.search` and `finditer` wrap each call to it in a
# generator and a match object (on bytes they map no offsets), several times the cost of a short search itself. Read
# when present; without them (another version of the binding) the public calls give the same spans.
_UNANCHORED = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)


def _core(regexp: Any) -> Any:
    core = getattr(regexp, "_regexp", None)
    return core if _UNANCHORED is not None and hasattr(core, "Match") else None


def byte_search(regexp: Any, data: bytes, position: int = 0) -> tuple[int, int] | None:
    """(start, end) of the first match of an RE2 expression in `data` from `position`, or None: `regexp.search`."""
    core = _core(regexp)
    if core is None:
        match = regexp.search(data, position)
        return None if match is None else match.span()
    span = core.Match(_UNANCHORED, data, max(0, min(position, len(data))), len(data))[0]
    return None if span[0] < 0 else span


def byte_spans(regexp: Any, data: bytes) -> list[tuple[int, int]]:
    """(start, end) of every match of an RE2 expression over `data`, as `regexp.finditer` finds them."""
    core = _core(regexp)
    if core is None:
        return [match.span() for match in regexp.finditer(data)]
    spans: list[tuple[int, int]] = []
    position, end, match = 0, len(data), core.Match
    while True:
        span = match(_UNANCHORED, data, position, end)[0]
        if span[0] < 0:
            return spans
        spans.append(span)
        if position == end:
            return spans
        # An empty match where the search began: step on, as the binding does.
        position = position + 1 if position == span[1] else span[1]


def found(expression: re2.Set, text: str) -> bool:
    """Whether an expression made by `scan` matches anywhere in `text`.

    A set answers which of its patterns match, with RE2's automaton alone and no match object: the binding's
    `search` builds one, and on a string maps its offsets back to characters, several times the cost of the
    scan itself on a sentence. A set never answers "no" for want of memory: its automaton does not give up on
    a thrashing cache (it has no other engine to fall back to), and `Compile` fails when the budget cannot
    hold it."""
    return expression.Match(text.encode("utf-8")) is not None


class Joined:
    """Texts joined by newlines as UTF-8, for scans of a whole batch at once (`hits`), in chunks of about
    CHUNK_BYTES, so that a search from a position never copies more than a chunk."""

    CHUNK_BYTES = 8_192

    def __init__(self, texts: list[str]) -> None:
        self.chunks: list[tuple[bytes, list[int], int]] = []  # (data, starts of its texts, index of its first)
        joined = "\n".join(texts)
        if joined.isascii():
            self._chunk_ascii(joined.encode("ascii"), [len(text) for text in texts])
            return
        encoded = [text.encode("utf-8") for text in texts]
        first = 0
        while first < len(encoded):
            size, last = 0, first
            while last < len(encoded) and (last == first or size + len(encoded[last]) < self.CHUNK_BYTES):
                size += len(encoded[last]) + 1
                last += 1
            starts, position = [], 0
            for data in encoded[first:last]:
                starts.append(position)
                position += len(data) + 1
            self.chunks.append((b"\n".join(encoded[first:last]), starts, first))
            first = last

    def _chunk_ascii(self, data: bytes, lengths: list[int]) -> None:
        """The chunks of ASCII texts of these `lengths` joined by newlines as `data` (a character is a byte), found
        from the texts' running offsets instead of a text at a time: the loop of `__init__` adds a text to a chunk
        while the chunk's texts, each with its newline, stay within CHUNK_BYTES once it is in, so a chunk that
        starts at offset c ends before the last text that starts at or before c + CHUNK_BYTES (one text at least)."""
        offsets = list(itertools.accumulate((length + 1 for length in lengths), initial=0))
        count, first = len(lengths), 0
        while first < count:
            base = offsets[first]
            last = max(first + 1, bisect.bisect_right(offsets, base + self.CHUNK_BYTES) - 1)
            starts = [offset - base for offset in offsets[first:last]]
            self.chunks.append((data[base : offsets[last] - 1], starts, first))
            first = last

    def hits(self, expression: re2.Set) -> set[int]:
        """The indices of the texts a scan matches in, or that a match touches (a superset of the texts `found`
        says yes for, one linear scan for all): each match is found where it starts, and a match that runs on
        into the next texts counts for them too, since it may have hidden one of theirs."""
        regexp = _batch_regexp(expression)
        found_in: set[int] = set()
        for data, starts, offset in self.chunks:
            _chunk_hits(regexp, data, starts, offset, found_in)
        return found_in

    def hits_many(self, expressions: Sequence[re2.Set]) -> list[set[int]]:
        """`hits` of each of `expressions`: one scan of each chunk by a set of them all says which of them match
        in it at all (most match nowhere in most chunks), and only those are searched there."""
        combined = _combined(tuple(expressions))
        regexps = [_batch_regexp(expression) for expression in expressions]
        found: list[set[int]] = [set() for _ in expressions]
        for data, starts, offset in self.chunks:
            for number in combined.Match(data) or ():
                _chunk_hits(regexps[number], data, starts, offset, found[number])
        return found

    def within_many(self, expressions: Sequence[re2.Set]) -> list[set[int]]:
        """`hits_many` of expressions that never match a newline: then a match lies inside one text, and the texts
        each expression matches in are those a set of them all names for each text of a chunk in which it matches
        at all. One call a text instead of a search, a look-up and a jump for each text with a match: cheaper
        where most texts of a chunk match (long tokens, paths, URLs), while a chunk with none costs one scan."""
        combined = _combined(tuple(expressions))
        found: list[set[int]] = [set() for _ in expressions]
        for data, starts, offset in self.chunks:
            if not combined.Match(data):
                continue
            ends = [*(start - 1 for start in starts[1:]), len(data)]
            for index, (start, end) in enumerate(zip(starts, ends, strict=True)):
                for number in combined.Match(data[start:end]) or ():
                    found[number].add(offset + index)
        return found


def _chunk_hits(regexp: Any, data: bytes, starts: list[int], offset: int, found_in: set[int]) -> None:
    """`Joined.hits` in one chunk (its texts at `starts`, the first of them text `offset`), added to `found_in`."""
    end, position = len(data), 0
    while position <= end:
        span = byte_search(regexp, data, position)
        if span is None:
            break
        start, stop = span
        first = bisect.bisect_right(starts, start) - 1
        if first + 1 < len(starts) and start == starts[first + 1] - 1:
            first += 1  # it starts at the newline before a text, read as that text's start
        last = bisect.bisect_right(starts, max(stop - 1, start)) - 1
        found_in.update(range(offset + first, offset + last + 1))
        # Another match in a text already counted would add nothing: go on from the next text, at the newline
        # before it (a boundary that a pattern may read, as it reads the start of a text), even when this match
        # ended past it (its last character that newline, read as the end of its text).
        position = max(start + 1, starts[last + 1] - 1 if last + 1 < len(starts) else end + 1)


_COMBINED: dict[tuple[int, ...], re2.Set] = {}


def scan_set(expressions: Sequence[re2.Set]) -> re2.Set:
    """One search set of the patterns of `expressions` (each made by `scan`): its `Match` of a text names, by
    position, every one of them that matches anywhere in it, in one scan instead of one a pattern."""
    return _combined(tuple(expressions))


def _combined(expressions: tuple[re2.Set, ...]) -> re2.Set:
    """A search set of the patterns of `expressions` (each made by `scan`), in their order: which of them match."""
    key = tuple(id(expression) for expression in expressions)
    if key not in _COMBINED:
        options = re2.Options()
        options.max_mem = MAX_MEM * len(expressions)  # room for every pattern's automaton, as each had alone
        combined = re2.Set.SearchSet(options)
        for expression in expressions:
            combined.Add(_SOURCES[id(expression)][0])
        combined.Compile()
        _COMBINED[key] = combined
    return _COMBINED[key]


def loosened(pattern: re.Pattern[str]) -> re2.Set:
    """`pattern` compiled by RE2, matching a superset of what Python's engine matches (see the module)."""
    loose = _without_lookarounds(pattern.pattern)
    loose = loose.replace(r"\b", "").replace(r"\w", r"\S").replace(r"\s", _SPACE)
    return scan(loose, pattern.flags)


class Layered:
    """A Python pattern behind its RE2 first pass: `search` says whether Python's pattern matches."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.first = pattern, loosened(pattern)

    def search(self, text: str, first: bool | None = None) -> bool:
        """`first`, when given, is the first pass's answer already known (from a batch's `Joined.hits`)."""
        passed = found(self.first, text) if first is None else first
        return passed and self.pattern.search(text) is not None


# Python's \s on ASCII text: the information separators count as spaces too.
_ASCII_SPACE = r"\t\n\x0b\f\r\x1c-\x1f "


class AsciiTwin:
    """A Python pattern and its RE2 copy: `search` says whether Python's pattern matches, asking RE2 when the
    text is ASCII (one linear scan for a long alternation) and Python's engine otherwise."""

    made: list[AsciiTwin] = []  # every twin built, for the test that holds each to its pattern

    def __init__(self, pattern: re.Pattern[str]) -> None:
        source = pattern.pattern
        if any(sign in source for sign in ("(?=", "(?!", "(?<", "\\Z")) or ("$" in source and not pattern.flags & re.M):
            raise ValueError(f"no RE2 twin reads exactly as {source[:40]!r}…: a lookaround or a bare $")
        self.pattern, self.fast = pattern, scan(_ascii_spaces(source), pattern.flags)
        AsciiTwin.made.append(self)

    def search(self, text: str) -> bool:
        return found(self.fast, text) if text.isascii() else self.pattern.search(text) is not None


def _ascii_spaces(source: str) -> str:
    """`source` with each \\s and \\S spelled out as Python reads them on ASCII text."""
    out: list[str] = []
    index, in_class = 0, False
    while index < len(source):
        token = source[index : index + 2] if source[index] == "\\" else source[index]
        index += len(token)
        if token == r"\s":
            token = _ASCII_SPACE if in_class else f"[{_ASCII_SPACE}]"
        elif token == r"\S":
            if in_class:
                raise ValueError(r"no RE2 twin for \S inside a class")
            token = f"[^{_ASCII_SPACE}]"
        elif token == "[" and not in_class:
            in_class = True
            if source.startswith(("]", "^]"), index):  # a ] first in a class is a character
                end = source.index("]", index) + 1
                token, index = source[index - 1 : end], end
        elif token == "]" and in_class:
            in_class = False
        out.append(token)
    return "".join(out)
