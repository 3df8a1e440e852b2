"""One spelling of a text for the checks: what a reader sees, not how it was typed.

An instruction hidden from a pattern is still read by a model: zero-width
characters inside "ig<U+200B>nore", bidi controls, fullwidth or mathematical
letters ("ｉｇｎｏｒｅ"), accents, Cyrillic look-alikes mixed into a Latin
word ("іgnоrе"), odd spacing. `fold` undoes all of that (NFKC, format
characters removed, accents on Latin letters dropped, lower case,
look-alikes in mixed-script words mapped to Latin, runs of spaces made
one), so the phrase patterns are written once, in plain lower case.
`skeleton` goes further for the English patterns and the structure checks:
every character drawn like an ASCII one (look_alikes.txt, from Unicode's
confusables) becomes it, whatever the word ("АІ" in Cyrillic, "ЅΥЅТЕМ"
mixing Cyrillic and Greek). `decoded` reads HTML entities and URL escapes
("&#73;gnore", "ignore%20previous"), and joins words cut by hyphens or
underscores ("ig-nore", "ignore_all_previous"). `compact` is a last view for
spelling games that survive folding ("i g n o r e", "1gn0re", words glued by
removed zero-width spaces): letters only, digits read as the letters they
imitate. The views are only ever checked, never shown or stored: the text
itself is left as written, except that `unify_lines` makes every line break
(CR, CRLF, vertical tab, form feed, the information separators, NEL, U+2028,
U+2029) a newline wherever untrusted text enters a transcript, since a model
or a Markdown reader takes each of them for the start of a line.
"""

from __future__ import annotations

import html
import re
import unicodedata
from importlib import resources
from urllib.parse import unquote

from chatcore.names import INVISIBLE_RE
from compaction.safety.first_pass import found, scan

__all__ = ["GAME_SCAN", "INVISIBLE_RE", "LINE_BREAK_RE", "compact", "decoded", "fold", "skeleton", "unify_lines"]

# Every character str.splitlines() breaks at, other than the newline itself (CRLF counts as one).
LINE_BREAK_RE = re.compile("\r\n?|[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_BREAK_CHAR_RE = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # one class: a fast scan


def unify_lines(text: str) -> str:
    """`text` with every kind of line break written as a newline: what a line is, the checks and the reader agree."""
    if text.isascii():  # its possible breaks looked for one by one: a few fast substring scans instead of a regex's
        if (
            "\r" not in text
            and "\x0b" not in text
            and "\x0c" not in text
            and "\x1c" not in text
            and "\x1d" not in text
            and "\x1e" not in text
        ):
            return text
    elif not _BREAK_CHAR_RE.search(text):
        return text
    return LINE_BREAK_RE.sub("\n", text)


def _look_alike_table() -> dict[int, str]:
    """look_alikes.txt: each line an ASCII character, then the code points (hex) drawn like it."""
    table: dict[int, str] = {}
    text = resources.files(__package__).joinpath("look_alikes.txt").read_text(encoding="utf-8")
    for line in text.splitlines():
        if line and not line.startswith("#"):
            target, *points = line.split()
            table.update({int(point, 16): target for point in points})
    return table


_SKELETON = _look_alike_table()

_LATIN_MARKS_RE = re.compile(r"(?<=[a-z])[\u0300-\u036f]+")
_SPACES_RE = re.compile(r"[^\S\n]{2,}|[^\S\n ]")
# Cyrillic and Greek letters drawn like Latin ones (lower case; folding lowers first).
_LOOK_ALIKES = str.maketrans(
    "аеорсухіјѕԁһԛԝӏкмтнвѵνοαικτρυεɡ",
    "aeopcyxijsdhqwlkmthbvvoaiktpueg",
)
_LOOK_ALIKE_CHARS = frozenset("аеорсухіјѕԁһԛԝӏкмтнвѵνοαικτρυεɡ")
_LETTER_RUN_RE = re.compile(r"[^\W\d_]{2,}")

_LEET = str.maketrans("0134578@$!|", "oieastbasil")
_NOT_LETTER_RE = re.compile(r"[^a-zа-яё]+")
# Signs of a spelling game that folding alone leaves: single letters spaced out ("i g n o r e", "i.g.n.o.r.e"),
# digits or symbols inside words ("1gn0re", "pr3vious", "$ystem"), unusual marks inside words ("ign*re").
_GAME_RE = re.compile(
    r"(?:(?<![a-z])[a-z][^a-z\n]{1,3}){3,}[a-z](?![a-z])"
    r"|[a-z][0-9@$|!][a-z]|(?<![a-z0-9])[0-9@$][a-z]{2}|[a-z]{2}[0-9@$](?![a-z0-9])"
    r"|[a-z][*·•_~^+\\][a-z]"
)
# The same test in RE2, one linear scan instead of Python's five branches tried at every position: each
# lookaround becomes the character (or the text's edge) it asks for, which a yes-or-no search may consume.
_GAME_SCAN = scan(
    r"(?:^|[^a-z])(?:[a-z][^a-z\n]{1,3}){3,}[a-z](?:$|[^a-z])"
    r"|[a-z][0-9@$|!][a-z]|(?:^|[^a-z0-9])[0-9@$][a-z]{2}|[a-z]{2}[0-9@$](?:$|[^a-z0-9])"
    r"|[a-z][*·•_~^+\\][a-z]"
)

GAME_SCAN = _GAME_SCAN


def _unconfuse(text: str) -> str:
    """Look-alike letters mapped to Latin in words that mix them with Latin letters (a Russian word stays)."""

    def mapped(match: re.Match) -> str:
        word = match.group(0)
        if word.isascii() or _LOOK_ALIKE_CHARS.isdisjoint(word) or not any("a" <= c <= "z" for c in word):
            return word
        return word.translate(_LOOK_ALIKES)

    return _LETTER_RUN_RE.sub(mapped, text)


def fold(text: str) -> str:
    """The text as the checks read it: NFKC, no format characters, no accents on Latin letters, lower case,
    look-alikes in mixed-script words made Latin, each run of spaces one space (newlines kept)."""
    if text.isascii():
        folded = text.lower()
    else:
        folded = unicodedata.normalize("NFKC", INVISIBLE_RE.sub("", text)).lower()
        if not folded.isascii():
            folded = unicodedata.normalize("NFC", _LATIN_MARKS_RE.sub("", unicodedata.normalize("NFD", folded)))
            folded = _unconfuse(folded)
    folded = unify_lines(folded)
    if "  " in folded or "\t" in folded:
        folded = _SPACES_RE.sub(" ", folded)
    return folded


def skeleton(text: str) -> str:
    """`fold(text)` with every look-alike character (in any word, of any script) read as the ASCII one it
    imitates: the view the English patterns and the structure checks read."""
    if text.isascii():
        return fold(text)
    mapped = unicodedata.normalize("NFKC", INVISIBLE_RE.sub("", text)).translate(_SKELETON)
    return fold(mapped)


_ENTITY_RE = re.compile(r"&(?:#\d{1,7}|#x[0-9a-f]{1,6}|[a-z][a-z0-9]{1,31});?", re.IGNORECASE)
_ESCAPE_RE = re.compile(r"%[0-9a-f]{2}", re.IGNORECASE)
_CUT_WORD_RE = re.compile(r"-(?<=[a-z]-)(?=[a-z])")  # the hyphen first: scanned for, not tried at every position


def decoded(text: str) -> str | None:
    """The skeleton of `text` with HTML entities and URL escapes read, hyphens inside words dropped and
    underscores made spaces; None when none of those is in it (then it says nothing new)."""
    entities = "&" in text and _ENTITY_RE.search(text) is not None
    escapes = "%" in text and _ESCAPE_RE.search(text) is not None
    if not (entities or escapes or "_" in text or "-" in text):
        return None
    if entities:
        text = html.unescape(text)
    if escapes:
        text = unquote(text)
    return _CUT_WORD_RE.sub("", skeleton(text).replace("_", " "))


def compact(text: str, folded: str, game: bool | None = None) -> str | None:
    """Letters only, digits read as letters ("1gn0re all" → "ignoreall"), when `text` shows a spelling game
    (see _GAME_RE) or hid characters; None otherwise, so ordinary text costs one search (`game` is its answer
    when a batch's scan knows it already)."""
    hidden = not text.isascii() and INVISIBLE_RE.search(text) is not None
    if not hidden and not (found(_GAME_SCAN, folded) if game is None else game):
        return None
    return _NOT_LETTER_RE.sub("", folded.translate(_LEET))
