"""The word splits the summarizer and the instruction finder share (compaction.lexicon): the fast split of ASCII
text finds exactly what the expressions find."""

import random

from compaction import lexicon
from compaction.instructions import sentence_words

MARKS = "abcxyz019 _-.,:/\t\n'’AZÉé\x00\x7f"


def _texts() -> list[str]:
    generator = random.Random(3)
    return ["".join(generator.choice(MARKS) for _ in range(generator.randint(0, 40))) for _ in range(30_000)]


def test_tokens_are_the_expression_s_runs():
    for text in _texts():
        lower = text.lower()
        assert lexicon.tokens_of(lower) == lexicon.TOKEN_RE.findall(lower), repr(text)


def test_content_words_are_the_expression_s_runs_without_stop_words():
    for text in [*_texts(), "The plan is what we'll ship"]:
        expected = [w for w in lexicon.CONTENT_WORD_RE.findall(text.lower()) if w not in lexicon.STOP_WORDS]
        assert lexicon.content_words(text) == expected, repr(text)


def test_a_sentence_s_words_keep_an_apostrophe_s_parts():
    assert sentence_words("Don’t push to main_branch, OK?") == {
        "don't",
        "don",
        "t",
        "push",
        "to",
        "main",
        "branch",
        "ok",
    }
    assert sentence_words("Push it now") == {"push", "it", "now"}
