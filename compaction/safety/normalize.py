"""One spelling of a text for the checks: what a reader sees, not how it was typed.

An instruction hidden from a pattern is still read by a model: zero-width
characters inside "ig<U+200B>nore", bidi controls, fullwidth or mathematical
letters ("ｉｇｎｏｒｅ"), accents, Cyrillic look-alikes mixed into a Latin
word ("іgnоrе"), odd spacing. `fold` undoes all of that (NFKC, format
characters removed, accents on Latin letters dropped, lower case,
look-alikes in mixed-script words mapped to Latin, runs of spaces made
one), so the phrase patterns are written once, in plain lower case.
`compact` is a second view for spelling games that survive folding
("i g n o r e", "1gn0re", words glued by removed zero-width spaces): letters
only, digits read as the letters they imitate. The views are only ever
checked, never shown or stored: the text itself is left as written.
"""

from __future__ import annotations

import re
import unicodedata

from chatcore.names import INVISIBLE_RE

__all__ = ["INVISIBLE_RE", "compact", "fold"]

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
    if "  " in folded or "\t" in folded or "\r" in folded or "\x0b" in folded or "\x0c" in folded:
        folded = _SPACES_RE.sub(" ", folded)
    return folded


def compact(text: str, folded: str) -> str | None:
    """Letters only, digits read as letters ("1gn0re all" → "ignoreall"), when `text` shows a spelling game
    (see _GAME_RE) or hid characters; None otherwise, so ordinary text costs one search."""
    hidden = not text.isascii() and INVISIBLE_RE.search(text) is not None
    if not hidden and not _GAME_RE.search(folded):
        return None
    return _NOT_LETTER_RE.sub("", folded.translate(_LEET))
