"""Which writing systems a text uses, so that a summary that quotes none of one can say why.

The summary quotes text in any script. When a conversation has messages in
a script of which nothing is quoted (the Greek messages of a mostly English
conversation, say), the reader would otherwise take the silence for an
absence; `render` adds a line naming the script and the reason. The Latin
script (accents included) and the signs shared by all scripts are not
counted: every summary is written in them.
"""

from __future__ import annotations

import functools
import unicodedata

# Unicode's names start with the script; these read better under another name.
_NAMES = {
    "CJK": "Chinese",
    "HIRAGANA": "Japanese kana",
    "KATAKANA": "Japanese kana",
    "HANGUL": "Korean",
}
_SKIPPED = frozenset({"LATIN", "MODIFIER", "COMBINING", "FULLWIDTH", "HALFWIDTH", ""})
_LAST_LATIN = 0x24F  # Latin Extended-B: every letter up to it is Latin


@functools.cache
def _script(character: str) -> str:
    first = unicodedata.name(character, "").split(" ", 1)[0]
    return "" if first in _SKIPPED else _NAMES.get(first, first.capitalize())


def scripts_of(text: str) -> frozenset[str]:
    """The scripts other than Latin whose letters appear in `text` ("Greek", "Cyrillic", "Devanagari" …)."""
    if text.isascii():
        return frozenset()
    found = {_script(c) for c in set(text) if ord(c) > _LAST_LATIN and c.isalpha()}
    found.discard("")
    return frozenset(found)


def by_message(items) -> dict[str, list[int]]:
    """script → the indices of the people's messages (the user's and the assistant's) that use it."""
    found: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        if item.role in ("user", "assistant") and item.content:
            for script in scripts_of(item.content):
                found.setdefault(script, []).append(index)
    return found
