"""The instruction finder's checks asked in parts answer as the expressions they stand for."""

from compaction import instructions
from devtools import redaction_eval as corpora
from tests.compaction.safety.injection_cases import CASES, ORDINARY


def test_the_injection_shape_asked_in_halves_answers_as_its_expression():
    texts = corpora.demo_messages() + corpora.locomo_messages(corpora.default_locomo()[:1]) + CASES + ORDINARY
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
