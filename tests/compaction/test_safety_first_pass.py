"""The RE2 first pass in front of the injection patterns: it must let through every text that Python's
pattern matches (or an injection would slip past), and it is what ordinary text stops at."""

import random
import re

import pytest

from compaction.safety import english, languages, normalize
from compaction.safety.first_pass import Layered, loosened
from compaction.safety.normalize import decoded, fold, skeleton
from devtools import redaction_eval
from tests.compaction.red_team_probes import INJECTIONS, ORDINARY
from tests.reliability.injection_cases import CASES
from tests.reliability.injection_cases import ORDINARY as ORDINARY_CASES

PATTERNS = {"spaced": languages.SPACED_RE, "injection": english.INJECTION_RE, "indirect": english.INDIRECT_RE}


def _views(text: str) -> list[str]:
    return [view for view in (fold(text), skeleton(text), decoded(text)) if view]


def _texts() -> list[str]:
    probes = [*INJECTIONS.values(), *ORDINARY, *CASES, *ORDINARY_CASES]
    ordinary = redaction_eval.locomo_messages(redaction_eval.default_locomo())[:400]
    return [view for text in probes + ordinary for view in _views(text)]


@pytest.mark.parametrize("name", PATTERNS)
def test_the_first_pass_lets_through_every_text_the_pattern_matches(name):
    pattern, first = PATTERNS[name], loosened(PATTERNS[name])
    texts = _texts()
    matched = [text for text in texts if pattern.search(text)]
    assert matched  # the probes exercise the pattern
    assert [text for text in matched if first.search(text) is None] == []
    assert Layered(pattern).search(matched[0]) is True


def test_lookarounds_and_word_classes_are_loosened_not_kept():
    first = loosened(re.compile(r"\bignore(?! me)\s+(?<=\s)all\w*", re.IGNORECASE))
    assert first.search("IGNORE\u00a0allé") is not None  # a Unicode space and a non-ASCII word character
    assert first.search("nothing to see") is None
    refused = re.compile(r"\bignore(?! me)")
    assert loosened(refused).search("ignore me") is not None  # the lookahead is dropped: a superset
    assert Layered(refused).search("ignore me") is False  # and Python's pattern still decides
    assert Layered(refused).search("ignore it") is True


def _spelling_game_texts() -> list[str]:
    """The probes and LoCoMo, folded, and short strings drawn from the characters the pattern turns on: letters,
    digits, the marks it names, spaces and line breaks (where a lookaround at the text's edge would differ)."""
    rng = random.Random(12)
    alphabet = "abzy019@$|!*·•_~^+\\ .-\n"
    drawn = ["".join(rng.choices(alphabet, k=rng.randint(1, 14))) for _ in range(30_000)]
    return [fold(text) for text in _texts()] + drawn


def test_the_spelling_game_scan_in_re2_answers_as_python_pattern_does():
    texts = _spelling_game_texts()
    python = [normalize._GAME_RE.search(text) is not None for text in texts]
    scan = [normalize._GAME_SCAN.search(text) is not None for text in texts]
    assert 1_000 < sum(python) < len(texts) - 1_000  # both answers are common in the sample
    assert [text for text, one, other in zip(texts, python, scan, strict=True) if one != other] == []
