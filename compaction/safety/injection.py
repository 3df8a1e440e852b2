"""Whether a text addresses a summarizer or a model instead of the other person.

The text is folded first (`normalize.fold`), so hidden characters, look-alike
letters, fullwidth forms, accents and case change nothing; then the phrase
families are tried in English (`english.py`) and in the other languages
(`languages.py`); text that shows a spelling game is also read letters-only
(`normalize.compact`) against the core commands. Ordinary text stops at
cheap checks: the English hint words, and whether it has any letters beyond
ASCII.
"""

from __future__ import annotations

import functools

from compaction.safety import english, languages
from compaction.safety.normalize import compact, fold

_CACHE_CHARS = 2_000  # texts up to this length are remembered (a piece is checked by several selectors)


def looks_like_injection(text: str) -> bool:
    """Whether `text` tries to instruct whoever reads it as a model (see the module docstring)."""
    if not text:
        return False
    if len(text) <= _CACHE_CHARS:
        return _cached(text)
    return _check(text)


@functools.lru_cache(maxsize=16_384)
def _cached(text: str) -> bool:
    return _check(text)


def _check(text: str) -> bool:
    folded = fold(text)
    if _english(folded) or languages.SPACED_RE.search(folded):
        return True
    if not folded.isascii() and languages.has_unspaced_script(folded) and languages.UNSPACED_RE.search(folded):
        return True
    letters = compact(text, folded)
    return letters is not None and english.COMPACT_RE.search(letters) is not None


def _english(folded: str) -> bool:
    if (
        "<" not in folded
        and "[/inst" not in folded
        and "[inst" not in folded
        and english.HINTS.isdisjoint(english.HINT_WORD_RE.findall(folded))
    ):
        return False
    return bool(english.INJECTION_RE.search(folded) or english.INDIRECT_RE.search(folded))
