"""The identifier a secret-ish word sits in, and whether the word is really there.

`DB_PASSWORD`, `x-api-key`, `spring.datasource.password`, `apiKey`: the
identifier is the run of identifier characters around the word. A word glued
into an ordinary word (`keyboard`, `passenger`, `author`) is not there at all;
a word that languages glue into compounds (`toegangssleutel`,
`Zugangsschlüssel`) is there whatever comes before it.
"""

from __future__ import annotations

import re

from compaction.redaction.assignment import QUALIFIERS
from compaction.redaction.vocabulary import UNGLUED_WORDS

# The characters of an identifier (names, header names, dotted settings paths).
IDCHARS_TEXT = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-."
_IDCHARS = frozenset(IDCHARS_TEXT)
# How far before the word the identifier is read at first (longer heads are followed character by character).
HEAD_CHARS = 64
# The identifier's characters after the word (it matches the empty string).
_ID_TAIL = re.compile(r"[A-Za-z0-9_.\-]*")
# An identifier's pieces: UPPER, Capitalised or lower words and numbers (DB_PASSWORD, apiKey, key2).
SEGMENT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# Letters after the word, to see whether it runs on into an ordinary word (it matches the empty string).
_ASCII_LETTERS = re.compile(r"[A-Za-z]*")
# What may follow a word glued to it and still name a secret (passkey, secretid, authtoken).
_TAILS = frozenset(("token", "key", "secret", "id", "pass", "auth"))
# Words whose plural is an ordinary word of its own (tokens, keys, passes, pins: counted, not a secret).
_NO_PLURAL = frozenset(("token", "key", "pass", "pin"))
# An abbreviation this short glued after letters is a piece of another word or of a random token (…9E8zspwI).
MAX_GLUED_ABBREVIATION = 3
# A qualifier glued before the word keeps it a secret (apikey, accesstoken, sessionsecret).
_QUALIFIER_ENDINGS = tuple(QUALIFIERS)


def extent(text: str, start: int, end: int) -> tuple[int, int]:
    """(start, end) of the identifier around the word text[start:end]."""
    head = text[max(0, start - HEAD_CHARS) : start]
    a = start - len(head) + len(head.rstrip(IDCHARS_TEXT))
    while a > 0 and a == start - HEAD_CHARS and text[a - 1] in _IDCHARS:  # a head longer than the piece looked at
        a -= 1
    b = _ID_TAIL.match(text, end).end()  # type: ignore[union-attr]  # (it matches the empty string)
    if b > end and text[b - 1] in ".-":
        b = end + len(text[end:b].rstrip(".-"))
    return a, b


# Characters from this code point on are CJK and beyond, where words are not separated by spaces.
_CJK_START = 0x2E80


def letters_end(text: str, end: int) -> int:
    """A word in a language that inflects keeps its ending (şifresi, Passwortes, пароля)."""
    while end < len(text) and text[end].isalpha() and ord(text[end]) < _CJK_START:
        end += 1
    return end


def glued(text: str, lower: str, start: int, end: int, word: str) -> bool:
    """True when the word sits inside an ordinary word (keyboard, passenger, author, monkey)."""
    if not word.isascii():
        return False
    tail_end = _ASCII_LETTERS.match(text, end).end()  # type: ignore[union-attr]  # (it matches the empty string)
    camel_tail = end < len(text) and text[end].isupper() and text[end - 1].islower()
    tail = "" if camel_tail else lower[end:tail_end]
    if tail and not (tail == "s" and word not in _NO_PLURAL) and tail not in _TAILS:
        return True
    head_start = start
    while head_start > 0 and text[head_start - 1].isascii() and text[head_start - 1].isalpha():
        head_start -= 1
    camel_head = text[start].isupper() and start > 0 and text[start - 1].islower()
    head = "" if camel_head else lower[head_start:start]
    if not head or (word in UNGLUED_WORDS and len(word) > MAX_GLUED_ABBREVIATION):
        return False
    return not head.endswith(_QUALIFIER_ENDINGS)
