"""The word splits the summarizer and the instruction finder share (compaction.lexicon): the fast split of ASCII
text finds exactly what the expressions find."""

import random
import re

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


def test_word_runs_are_content_words_with_the_stop_words():
    for text in [*_texts(), "The plan is what we'll ship", "Kelvin \u212a and \u0130stanbul"]:
        assert lexicon.word_runs(text) == lexicon.CONTENT_WORD_RE.findall(text.lower()), repr(text)


# Sentence marks, quotes and blanks of every kind, line breaks, list bullets, and their usual neighbours.
SENTENCE_MARKS = [*"aBZ9 \t\u00a0\u2028.!?…\"'”’)“‘(-*•", "  ", "1)", ". A", "? 'B", "…) 9", ".\u2003C"]
SENTENCE_MARKS += ["\n", "\n\n", "\n- "]


def test_sentences_are_the_expression_s_split():
    # A line is split at the matches of a faster expression; with a line break, by SENTENCE_SPLIT_RE itself.
    generator = random.Random(5)
    for _ in range(40_000):
        text = "".join(generator.choice(SENTENCE_MARKS) for _ in range(generator.randint(0, 25)))
        parts = [" ".join(part.split()) for part in lexicon.SENTENCE_SPLIT_RE.split(text)]
        assert lexicon.split_sentences(text) == [part for part in parts if part], repr(text)


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


# IDENTIFIER_RE as first written, with backtracking runs: the possessive runs must find exactly what it finds.
BACKTRACKING_IDENTIFIER_RE = re.compile(
    r"`[^`\n]{2,80}`"
    r"|\b(?:[A-Za-z_][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"
    r"|[a-z]+(?:[A-Z][a-z0-9]+)+\b|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b"
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(\)"
    r"|[A-Z][A-Z0-9]{1,9}-\d{1,6}\b"
    r"|v?\d+\.\d+\.\d+(?:[-+][\w.]+)?\b"
    r"|[0-9a-f]{7,40}\b(?=[^\n]*\b(?:commit|sha|hash|rev)\b)|(?:commit|sha|hash|rev)\s+[0-9a-f]{7,40}\b"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)"
)
IDENTIFIER_PARTS = [
    "foo",
    "Bar",
    "BAZ",
    "q",
    "Q",
    "_",
    "__",
    "x1",
    "9",
    "42",
    "v1.2.3",
    ".",
    "()",
    "-",
    "ABC-12",
    "`",
    "é",
    "ß",
    "Δx",
    "deadbeef1",
    "commit",
    "sha",
    " ",
    " ",
    "\n",
    "-rc1",
    "+",
    "fooBar",
    "FooBar",
    "snake_case",
    "a.b",
]


def test_identifiers_found_are_the_backtracking_expression_s():
    generator = random.Random(7)
    for _ in range(30_000):
        text = "".join(generator.choice(IDENTIFIER_PARTS) for _ in range(generator.randint(0, 10)))
        assert lexicon.IDENTIFIER_RE.findall(text) == BACKTRACKING_IDENTIFIER_RE.findall(text), repr(text)


def test_identifiers_found_are_the_expression_s():
    """find_identifiers asks RE2's twin on ASCII text without a hash word: the same matches as IDENTIFIER_RE
    (on every text its prefilter lets through)."""
    generator = random.Random(11)
    for _ in range(30_000):
        text = "".join(generator.choice(IDENTIFIER_PARTS) for _ in range(generator.randint(0, 10)))
        if "_" in text or "`" in text or lexicon._MAYBE["identifier"].search(text):
            assert lexicon.find_identifiers(text) == lexicon.IDENTIFIER_RE.findall(text), repr(text)


PATH_PARTS = [
    "a",
    "src",
    "x.py",
    "run.sh",
    "~",
    "/",
    ".",
    "..",
    ":",
    "-",
    "_",
    "a-b",
    " ",
    "\n",
    "http://",
    "é",
    "json",
    ".yml",
    ".md",
    "9",
    "(",
    "'",
    ",",
    "x/",
    "~/",
    "./",
    "../",
    "dockerfile",
]


def test_paths_of_paths_found_are_the_expression_s():
    """find_paths asks RE2's twin on ASCII text (a character read for each look behind): PATH_RE's matches (on
    every text its prefilter lets through)."""
    generator = random.Random(13)
    for _ in range(30_000):
        text = "".join(generator.choice(PATH_PARTS) for _ in range(generator.randint(0, 12)))
        if "/" in text or lexicon._MAYBE["path"].search(text):
            assert lexicon.find_paths(text) == [m.group(0) for m in lexicon.PATH_RE.finditer(text)], repr(text)


def test_runs_text_splits_as_the_expression_where_no_apostrophe_joins_a_word():
    generator = random.Random(4)
    exact = 0
    for text in [*_texts(), "The log said 'TimeoutError after 10 s' and the runners' logs", "We'll see"]:
        if not lexicon.runs_exact(text):
            assert not text.isascii() or re.search(r"[a-z0-9]'[a-z]", text.lower()), repr(text)
            continue
        exact += 1
        runs = lexicon.runs_text(text)
        start = generator.randint(0, len(text))
        end = generator.randint(start, len(text))
        for a, b in ((0, len(text)), (start, end)):
            expected = lexicon.TOKEN_RE.findall(text[a:b].lower())
            assert runs[a:b].split() == expected, repr(text[a:b])
            assert not any("'" in token for token in expected)
    assert exact > 1_000
    assert lexicon.runs_exact("The log said 'TimeoutError after 10 s'")
    assert not lexicon.runs_exact("We'll see") and not lexicon.runs_exact("Café")


# Marks that make and break paths and identifiers, with newlines (inside a text, and the batch's separator).
DETAIL_PARTS = [
    "src/",
    "app",
    "/",
    ".",
    ".py",
    ".md",
    "~",
    "..",
    "_",
    "`",
    "()",
    "snake_case",
    "camelCase",
    "PRJ-12",
    "1.2.3",
    "-",
    ":",
    "\n",
    " ",
    "a",
    "Z",
    "9",
    "é",
    "commit ",
    "abc1234f",
    "https://x.io/a",
    "2024-05-01",
    "T10:00",
    "t09:30",
    "Z",
    "z",
    "+02:00",
    "5/1/2024",
    "May ",
    "today",
]


def _assert_batch_counts_each(texts: list[str], tokens: list[frozenset[str]]) -> None:
    counted = lexicon.count_details(texts, tokens)
    for text, words, found in zip(texts, tokens, counted, strict=True):
        digits = re.search(r"\d", text) is not None
        each = (
            len(lexicon.find_paths(text)),
            len(lexicon.find_identifiers(text)),
            len(lexicon.find_dates(text, digits, words or None)),
        )
        assert found == each, repr(text)


def test_details_counted_in_a_batch_are_each_text_s_own():
    generator = random.Random(11)
    texts = ["".join(generator.choice(DETAIL_PARTS) for _ in range(generator.randint(0, 12))) for _ in range(20_000)]
    # Each text's words, or none given (every other text): find_dates reads both ways.
    tokens = [frozenset(lexicon.tokens_of(text.lower())) if i % 2 else frozenset() for i, text in enumerate(texts)]
    for start in range(0, len(texts), 500):  # batches of many sizes and neighbours
        end = start + generator.randint(1, 500)
        _assert_batch_counts_each(texts[start:end], tokens[start:end])


def test_details_counted_in_a_batch_on_the_corpora():
    from types import SimpleNamespace

    from compaction.summarizers.offline import units
    from compaction.transcript import transcript_items
    from devtools.benchmarks.compaction import _text
    from devtools.docs.samples import demo_items

    messages = [
        SimpleNamespace(pk=i, role=("user", "assistant")[i % 2], content=_text(i), metadata={}, created_at=None)
        for i in range(500)
    ]
    corpora = [demo_items(keep) for keep in (0, 6)] + [transcript_items(messages)]
    for items in corpora:
        reads = [read for index, item in enumerate(items) for read in units.read_item(index, item)]
        _assert_batch_counts_each([read.piece.text for read in reads], [read.tokens for read in reads])


def test_details_counted_in_a_batch_on_locomo():
    import json

    from compaction.imports import locomo_turns
    from compaction.summarizers.offline import units
    from compaction.transcript import TranscriptItem
    from tests.locomo import locomo_required

    for path in locomo_required():
        turns = locomo_turns(json.loads(path.read_text(encoding="utf-8")))
        items = [TranscriptItem(i, t.role, t.speaker, t.text, t.created_at) for i, t in enumerate(turns)]
        reads = [read for index, item in enumerate(items) for read in units.read_item(index, item)]
        _assert_batch_counts_each([read.piece.text for read in reads], [read.tokens for read in reads])
