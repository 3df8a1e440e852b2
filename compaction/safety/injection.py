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

import dataclasses
import functools
import re
from collections.abc import Sequence

from compaction import conf
from compaction.safety import encoded, english, languages
from compaction.safety import model as learned
from compaction.safety.first_pass import Joined, Layered, found, scan
from compaction.safety.normalize import GAME_SCAN, compact, decoded, fold, skeleton

_CACHE_CHARS = 2_000  # texts up to this length are remembered (a piece is checked by several selectors)


def looks_like_injection(text: str) -> bool:
    """Whether `text` tries to instruct whoever reads it as a model (see the module docstring)."""
    if not text:
        return False
    if len(text) <= _CACHE_CHARS:
        return _cached(text)
    return _check(text)


def pattern_flags(texts: Sequence[str], folded: Sequence[str] | None = None) -> list[bool]:
    """`looks_like_injection` of each of `texts` (the phrase patterns alone, each text on its own), with the RE2
    first passes scanning the batch once each: a text none of them matches costs no scan of its own. `folded`, when
    given, is each text's `fold`."""
    folded = [fold(text) for text in texts] if folded is None else list(folded)
    return [
        bool(text) and not _plain(text, know) and _check(text, view, know)
        for text, view, know in zip(texts, folded, _batch_known(folded), strict=True)
    ]


def injection_flags(texts: Sequence[str], *, neighbours: bool = True, decode: bool = True) -> list[bool]:
    """Which of `texts` try to instruct a model: the phrase patterns on each text, and the learned model
        (`model.py`) over the batch, each text read alone and, when `neighbours` (the texts are consecutive messages
        of one conversation), together with the next one; text hidden in hex, base64, URL escapes, HTML entities or
    leet is decoded and read too (`encoded.views`).

        The patterns' RE2 first passes scan the whole batch once each (`first_pass.Joined`), so that a text none of
        them matches costs no scan of its own."""
    if not texts:
        return []
    folded = [fold(text) for text in texts]
    found = pattern_flags(texts, folded)
    leet, decodable = Joined(list(texts)).hits_many((encoded.LEET_SCAN, encoded.DECODABLE_SCAN))
    maybe_encoded = _maybe_encoded(texts, folded, leet=leet, decodable=decodable)
    # A text whose fold only lowered its case, with no run that could decode (`encoded.DECODABLE_SCAN`) and no \x
    # escape, reads as its fold and hides nothing in its runs: its runs are not looked for (most paths and tokens).
    case_only = {i for i in maybe_encoded if _case_only(texts[i], folded[i])}
    undecodable = {i for i in case_only if i not in decodable and "\\x" not in folded[i]}
    spans = encoded.runs_of(texts, case_only - undecodable)
    weights = learned.shipped() if conf.INJECTION_MODEL else None
    decoded_runs: dict[int, list[str]] = dict.fromkeys(undecodable, [])
    if weights is not None:
        read = list(folded)
        for i in maybe_encoded:
            if i in undecodable:
                continue
            if i in case_only:
                read[i], decoded_runs[i] = encoded.read_and_decoded(texts[i], folded[i], spans[i])
            else:
                read[i] = encoded.without_runs(folded[i])
        scored = learned.flags_folded(weights, read, neighbours=neighbours)
        found = [rule or bool(flag) for rule, flag in zip(found, scored, strict=True)]
    if not decode:  # a decoded view is read as it stands: an encoding inside an encoding is not unwrapped
        return found
    hidden = [
        (index, view)
        for index in sorted(maybe_encoded)
        if not found[index] and _may_hide(texts[index], decoded_runs.get(index), leet=index in leet)
        for view in encoded.views(
            texts[index], spans.get(index), leet=index in leet, decoded_runs=decoded_runs.get(index)
        )
    ]
    if hidden:
        verdicts = injection_flags([view for _, view in hidden], neighbours=False, decode=False)
        for (index, _), verdict in zip(hidden, verdicts, strict=True):
            found[index] = found[index] or verdict
    return found


def _maybe_encoded(texts: Sequence[str], folded: list[str], *, leet: set[int], decodable: set[int]) -> set[int]:
    """The texts of `texts` that `encoded.GATE_SCAN` matches in, among those where what it says changes anything:
    a text whose fold only lowered its case (`_case_only`), with no run that could decode, no leet word and no URL
    escape, entity or string escape sign, reads as its fold and shows no view whether the gate matches or not (the
    read leaves it as it is, and `_may_hide` says no for it). Most texts with a path or a long token are such, and
    are not asked: the gate matches in nearly all of them, so a scan of the batch would ask each on its own."""
    return {
        index
        for index, (text, view) in enumerate(zip(texts, folded, strict=True))
        if (
            index in leet
            or index in decodable
            or "%" in text
            or "&" in text
            or "\\" in text
            or not _case_only(text, view)
        )
        and found(encoded.GATE_SCAN, text)
    }


def _may_hide(text: str, decoded_runs: list[str] | None, *, leet: bool) -> bool:
    """Whether `encoded.views` could find anything in `text`, its runs' readable texts known (`decoded_runs`): with
    none of them, no URL escape, entity or string escape sign, and no leet word, it finds nothing (most texts with a
    path or a long token), and is not called."""
    return decoded_runs is None or bool(decoded_runs) or leet or "%" in text or "&" in text or "\\" in text


def _case_only(text: str, folded: str) -> bool:
    """Whether folding changed nothing of `text` but the case of ASCII letters: then its runs (`encoded.runs`) are
    where they are in `text`."""
    return text.isascii() and len(folded) == len(text) and folded == text.lower()


@dataclasses.dataclass(frozen=True, slots=True)
class _Known:
    """The answers of the RE2 first passes for one text, known from a scan of its batch."""

    hint: bool = False
    injection: bool = False
    indirect: bool = False
    spaced: bool = False
    game: bool = False
    framing: bool = False
    cut: bool = False  # a hint word may appear where hyphens inside words are dropped or underscores spaced


_NOTHING = _Known()


def _plain(text: str, known: _Known) -> bool:
    """Whether `_check` would say no without reading further: ASCII text that no first pass matched, with no
    entity or escape to decode (most of any conversation)."""
    return known is _NOTHING and text.isascii() and "&" not in text and "%" not in text


def _batch_known(folded: list[str]) -> list[_Known]:
    *scans, cut = Joined(folded).hits_many(_KNOWN_SCANS)
    scans.append({index for index in cut if _cut_hint(folded[index])})
    known = [_NOTHING] * len(folded)
    for index in set().union(*scans):
        known[index] = _Known(*(index in hits for hits in scans))
    return known


_CUT_SCAN = scan(r"[a-z][-_]+[a-z]")
_CUT_RE = re.compile(r"[a-z]+(?:[-_]+[a-z]+)+")


def _cut_hint(folded: str) -> bool:
    """Whether a word cut by hyphens or joined by underscores could read as a hint word once `decoded` joins or
    splits it (a superset: every hyphen dropped)."""
    return any(
        part.replace("-", "") in english.HINTS for cut in _CUT_RE.findall(folded) for part in cut.split("_") if part
    )


PEOPLE = ("user", "assistant")


def conversation_flags(turns: Sequence[tuple[str, str]]) -> list[bool]:
    """`injection_flags` for the (role, content) turns of one conversation, as a compaction judges them: the
    people's messages in order, each with its neighbours; a tool result (or any other role) on its own, since
    what a tool returns is not the next thing a person said."""
    found = [False] * len(turns)
    for group, neighbours in ((PEOPLE, True), (None, False)):
        indices = [i for i, (role, text) in enumerate(turns) if text and ((role in PEOPLE) == (group is not None))]
        verdicts = injection_flags([turns[i][1] for i in indices], neighbours=neighbours)
        for index, verdict in zip(indices, verdicts, strict=True):
            found[index] = verdict
    return found


def injection_cache_clear() -> None:
    """Forget the texts checked so far: a benchmark that repeats a compaction measures the first one's cost."""
    _cached.cache_clear()


@functools.lru_cache(maxsize=16_384)
def _cached(text: str) -> bool:
    return _check(text)


def _check(text: str, folded: str | None = None, known: _Known | None = None) -> bool:
    folded = fold(text) if folded is None else folded
    if _english(folded, known) or languages.spaced_search(folded, known.spaced if known else None):
        return True
    for view in _views(text, folded, known):
        if _english(view) or (("&" in text or "%" in text) and languages.spaced_search(view)):
            return True
    if not folded.isascii() and languages.has_unspaced_script(folded) and languages.UNSPACED_RE.search(folded):
        return True
    letters = compact(text, folded, known.game if known else None)
    return letters is not None and english.COMPACT_RE.search(letters) is not None


def _views(text: str, folded: str, known: _Known | None = None) -> list[str]:
    """The skeleton and the decoded view of `text`, each only when it makes a word of the English families appear
    that the folded text lacks (otherwise the patterns would read the same thing twice). On ASCII text without
    entities or escapes the decoded view only joins cut words, which a batch already looked at (`known.cut`)."""
    views = []
    words: set[str] | None = None
    ascii_text = text.isascii()
    plain = ascii_text and known is not None and not known.cut and "&" not in text and "%" not in text
    for view in (skeleton(text) if not ascii_text else None, None if plain else decoded(text)):
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
# A framing hint word between two non-letters: every text in which HINT_WORD_RE finds one (and more).
_FRAMING_HINT_SCAN = scan(rf"(?:^|[^a-z])(?:{'|'.join(sorted(english.FRAMING_HINTS))})(?:$|[^a-z])")
_INJECTION = Layered(english.INJECTION_RE)
_INDIRECT = Layered(english.INDIRECT_RE)
# The first passes a batch knows for each text (`_Known`'s fields in order, the hint words cut last).
_KNOWN_SCANS = (
    _HINT_SCAN,
    _INJECTION.first,
    _INDIRECT.first,
    languages.SPACED_FIRST_PASS,
    GAME_SCAN,
    _FRAMING_HINT_SCAN,
    _CUT_SCAN,
)
_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~“”‘’«»—–…"


def _english(folded: str, known: _Known | None = None) -> bool:
    hint = known.hint if known else found(_HINT_SCAN, folded)
    if "<" not in folded and "[/inst" not in folded and "[inst" not in folded and not hint:
        return False
    if _INJECTION.search(folded, known.injection if known else None):
        return True
    if _INDIRECT.search(folded, known.indirect if known else None):
        return True
    if known is not None and not known.framing:
        return False
    words = english.HINT_WORD_RE.findall(folded)
    return not english.FRAMING_HINTS.isdisjoint(words) and english.FRAMING_RE.search(folded) is not None
