"""Whether a text addresses a summarizer or a model instead of the other person.

The text is folded first (`normalize.fold`), so hidden characters, line
breaks, fullwidth forms, accents and case change nothing; then the phrase
families are tried in English (`english.py`) on its skeleton (every
look-alike letter read as ASCII) and, when it has entities, URL escapes,
hyphens or underscores, on its decoded view too; and in the other languages
(`languages.py`) on the folded text. Text that shows a spelling game is also
read letters-only (`normalize.compact`) against the core commands. Ordinary
text stops at cheap checks: the English hint words, and whether it has any
letters beyond ASCII.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from compaction.safety import encoded, english, languages
from compaction.safety import model as learned
from compaction.safety.first_pass import Layered, found, scan
from compaction.safety.normalize import compact, decoded, fold, skeleton

_CACHE_CHARS = 2_000  # texts up to this length are remembered (a piece is checked by several selectors)


def looks_like_injection(text: str) -> bool:
    """Whether `text` tries to instruct whoever reads it as a model (see the module docstring)."""
    if not text:
        return False
    if len(text) <= _CACHE_CHARS:
        return _cached(text)
    return _check(text)


def injection_flags(texts: Sequence[str], *, neighbours: bool = True) -> list[bool]:
    """Which of `texts` try to instruct a model: the phrase patterns on each text, and the learned model
    (`model.py`) over the batch, each text read alone and, when `neighbours` (the texts are consecutive messages
    of one conversation), together with the next one; text hidden in hex or base64 is decoded and read too."""
    folded = [fold(text) for text in texts]
    found = [bool(text) and _check(text, view) for text, view in zip(texts, folded, strict=True)]
    weights = learned.shipped()
    if weights is not None and texts:
        scored = learned.flags_folded(weights, folded, neighbours=neighbours)
        found = [rule or bool(flag) for rule, flag in zip(found, scored, strict=True)]
    hidden = [(index, view) for index, text in enumerate(texts) if not found[index] for view in encoded.views(text)]
    if hidden:
        verdicts = injection_flags([view for _, view in hidden], neighbours=False)
        for (index, _), verdict in zip(hidden, verdicts, strict=True):
            found[index] = found[index] or verdict
    return found


def injection_cache_clear() -> None:
    """Forget the texts checked so far: a benchmark that repeats a compaction measures the first one's cost."""
    _cached.cache_clear()


@functools.lru_cache(maxsize=16_384)
def _cached(text: str) -> bool:
    return _check(text)


def _check(text: str, folded: str | None = None) -> bool:
    folded = fold(text) if folded is None else folded
    if _english(folded) or languages.spaced_search(folded):
        return True
    for view in _views(text, folded):
        if _english(view) or (("&" in text or "%" in text) and languages.spaced_search(view)):
            return True
    if not folded.isascii() and languages.has_unspaced_script(folded) and languages.UNSPACED_RE.search(folded):
        return True
    letters = compact(text, folded)
    return letters is not None and english.COMPACT_RE.search(letters) is not None


def _views(text: str, folded: str) -> list[str]:
    """The skeleton and the decoded view of `text`, each only when it makes a word of the English families appear
    that the folded text lacks (otherwise the patterns would read the same thing twice)."""
    views = []
    words: set[str] | None = None
    for view in (skeleton(text) if not text.isascii() else None, decoded(text)):
        if view is None or view == folded:
            continue
        if not found(_VIEW_HINT_SCAN, view) and not ("<" in view and "<" not in folded):
            continue  # no hint word in the view at all: the split into words below would find none either
        words = words if words is not None else _words(folded)
        if not english.HINTS.isdisjoint(_words(view) - words) or ("<" in view and "<" not in folded):
            views.append(view)
    return views


def _words(text: str) -> set[str]:
    return {word.strip(_PUNCTUATION) for word in text.split()}


_HINT_ALTERNATION = "|".join(re.escape(hint) for hint in sorted(english.HINTS))
# A hint word that is a whole run of letters and underscores: exactly what the split of `_english` finds.
_HINT_SCAN = scan(rf"(?:^|[^a-z_])(?:{_HINT_ALTERNATION})(?:$|[^a-z_])")
# A hint word between any two non-letters: every hint `_words` can find in a view is one (and more).
_VIEW_HINT_SCAN = scan(rf"(?:^|[^a-z])(?:{_HINT_ALTERNATION})(?:$|[^a-z])")
_INJECTION = Layered(english.INJECTION_RE)
_INDIRECT = Layered(english.INDIRECT_RE)
_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~“”‘’«»—–…"


def _english(folded: str) -> bool:
    if "<" not in folded and "[/inst" not in folded and "[inst" not in folded and not found(_HINT_SCAN, folded):
        return False
    if _INJECTION.search(folded) or _INDIRECT.search(folded):
        return True
    words = english.HINT_WORD_RE.findall(folded)
    return not english.FRAMING_HINTS.isdisjoint(words) and english.FRAMING_RE.search(folded) is not None
