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

import re

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
    return expression


def found(expression: re2.Set, text: str) -> bool:
    """Whether an expression made by `scan` matches anywhere in `text`.

    A set answers which of its patterns match, with RE2's automaton alone and no match object: the binding's
    `search` builds one, and on a string maps its offsets back to characters, several times the cost of the
    scan itself on a sentence. A set never answers "no" for want of memory: its automaton does not give up on
    a thrashing cache (it has no other engine to fall back to), and `Compile` fails when the budget cannot
    hold it."""
    return expression.Match(text.encode("utf-8")) is not None


def loosened(pattern: re.Pattern[str]) -> re2.Set:
    """`pattern` compiled by RE2, matching a superset of what Python's engine matches (see the module)."""
    loose = _without_lookarounds(pattern.pattern)
    loose = loose.replace(r"\b", "").replace(r"\w", r"\S").replace(r"\s", _SPACE)
    return scan(loose, pattern.flags)


class Layered:
    """A Python pattern behind its RE2 first pass: `search` says whether Python's pattern matches."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.first = pattern, loosened(pattern)

    def search(self, text: str) -> bool:
        return found(self.first, text) and self.pattern.search(text) is not None


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
