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


# Pieces of dates, paths and words around them, put together at random: the pruned searches must find what the
# whole expressions find.
DATE_PARTS = [
    "2024-05-01",
    "2024-05-01T10:20Z",
    "5/1/24",
    "12/31/2023",
    "May",
    "may",
    "Sept",
    "sept.",
    "12th",
    "of",
    "1",
    "2023",
    "June",
    "yesterday",
    "Yesterday's",
    "last",
    "week",
    "next",
    "month",
    "friday",
    "Fri",
    "today",
    "src/app/x.py",
    "notes.md",
    "a.b",
    "/etc/hosts",
    "./run.sh",
    "~/x",
    "PRJ-12",
    "o'may",
    "rock'n'roll",
    "x_may",
    "mayo",
    "jan_2",
    "naïve",
    "Δ",
    "ſept",
    "–",
    ",",
    ".",
    "/",
    "-",
    " ",
    " ",
    " ",
    "\t",
    "\n",
    "’",
]


def _date_texts() -> list[str]:
    generator = random.Random(5)
    return ["".join(generator.choice(DATE_PARTS) for _ in range(generator.randint(0, 12))) for _ in range(20_000)]


def _tokens(text: str) -> frozenset[str]:
    """A piece's tokens as the summarizer reads them (units.read_item): an apostrophe's parts included."""
    listed = lexicon.tokens_of(text.lower().replace("’", "'"))
    return frozenset(listed) | {part for token in listed for part in token.split("'")}


def test_dates_found_with_the_tokens_are_the_expression_s():
    for text in _date_texts():
        assert lexicon.find_dates(text, tokens=_tokens(text)) == lexicon.DATE_RE.findall(text), repr(text)


def test_paths_found_are_the_expression_s():
    for text in _date_texts():
        assert lexicon.find_paths(text) == [match.group(0) for match in lexicon.PATH_RE.finditer(text)], repr(text)
