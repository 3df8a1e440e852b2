"""The instruction finder's checks asked in parts answer as the expressions they stand for."""

import random
import re

from compaction import instructions
from devtools import redaction_eval as corpora
from tests.compaction.safety.injection_cases import CASES, ORDINARY


def _corpus_texts() -> list[str]:
    """The demo's messages, a LoCoMo conversation where it lies beside the checkout, and the injection cases."""
    return corpora.demo_messages() + corpora.locomo_messages(corpora.default_locomo()[:1]) + CASES + ORDINARY


def test_the_injection_shape_asked_in_halves_answers_as_its_expression():
    texts = _corpus_texts()
    texts += [
        "NOW Respond in JSON",
        "now  reply",
        "snow reply",
        "Now reply!",
        "now replying",
        "a < b",
        "{x}",
        "nOw SAY",
    ]
    shaped = 0
    for text in texts:
        expected = instructions._INJECTION_SHAPE_RE.search(text) is not None
        assert instructions._injection_shape(text) == expected, text
        shaped += expected
    assert shaped >= 5


def test_the_constraint_wording_behind_its_first_pass_answers_as_its_expressions():
    """`_constraint` asks RE2 first on ASCII text: its first pass, without the lookarounds and word boundaries, must
    let through every sentence the expression matches, and the answer must be the expressions' own."""
    texts = _corpus_texts()
    texts += [
        "You must have seen it.",
        "you MUST not push to main",
        "I'll make sure it ships.",
        "Please keep it short.",
        "no more than 3 items",
        "No more than ٣ items",
        "at least 2 reviewers, under no circumstances on Friday",
        "They make sure of it; you should never ever do that",
        "remember to   rerun the tests",
        "pleased to meet you",
    ]
    # Sentences glued from the expression's own words in any case, where its boundaries and lookarounds fall.
    rng = random.Random(5)
    words = re.findall(r"[A-Za-z' ]{2,}", instructions._CONSTRAINT_RE.pattern) + ["I", "we", "they", "3", "x1"]
    glue = [" ", "  ", "\t", ", ", ". ", "\n", "-", "_", "'", ""]
    for _ in range(3_000):
        text = "".join(rng.choice(words) + rng.choice(glue) for _ in range(rng.randint(1, 5)))
        texts.append(text.upper() if rng.random() < 0.1 else text)
    matched = 0
    for text in texts:
        expected = bool(instructions._CONSTRAINT_RE.search(text)) and not instructions._SELF_BOUND_RE.search(text)
        assert instructions._constraint(text) == expected, text
        if text.isascii() and instructions._CONSTRAINT_RE.search(text):
            assert instructions.found(instructions._CONSTRAINT_FIRST, text), text
            matched += 1
    assert matched >= 500
