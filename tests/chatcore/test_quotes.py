"""Finding the passages of a summary that quote messages word for word, and blanking them visibly."""

import pytest

from chatcore.quotes import (
    QUOTE_REMOVED,
    quoted_spans,
    quotes_blanked,
    quotes_blanked_all,
    quotes_count,
    quotes_found,
    source_grams,
)

SOURCE = "We decided to use PostgreSQL 16 for the ledger, see src/ledger/io.py and https://example.org/a-b."


def _quoted(text: str, *sources: str) -> list[str]:
    return [text[start:end] for start, end in quoted_spans(text, source_grams(sources or (SOURCE,)))]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Words compare exactly: "we" is not "We", so the quote starts at the next word.
        ("Settled: we decided to use PostgreSQL 16 for the ledger.", ["decided to use PostgreSQL 16 for the ledger"]),
        # Re-spaced and re-punctuated: still the same words in the same order.
        (
            "Settled: We decided to use   PostgreSQL 16; for the ledger.",
            ["We decided to use   PostgreSQL 16; for the ledger"],
        ),
        # The quotation marks around a quote go with it, and the punctuation inside them.
        ("User: “We decided to use PostgreSQL.” Then", ["“We decided to use PostgreSQL.”"]),
        ('User: "We decided to use PostgreSQL 16." Next.', ['"We decided to use PostgreSQL 16."']),
        ("Zitat: „We decided to use PostgreSQL 16“ – gut.", ["„We decided to use PostgreSQL 16“"]),
        # A path or a URL is one word; three words, even long ones, are a fact rather than a quote.
        (
            "Files: see src/ledger/io.py and https://example.org/a-b.",
            ["see src/ledger/io.py and https://example.org/a-b"],
        ),
        ("Pinned: src/ledger/io.py and https://example.org/a-b.", []),
        ("Nothing of it here at all.", []),
    ],
)
def test_quoted_spans(text, expected):
    assert _quoted(text) == expected


def test_runs_from_two_messages_are_two_passages_and_overlaps_merge():
    first, second = "the ledger moves to the new cluster", "alerts page the on-call engineer first"
    text = "Notes: the ledger moves to the new cluster. Then alerts page the on-call engineer first."
    assert _quoted(text, first, second) == [
        "the ledger moves to the new cluster",
        "alerts page the on-call engineer first",
    ]


def test_blanking_replaces_each_passage_in_place():
    text = 'A: "We decided to use PostgreSQL 16." B: fine.'
    spans = quoted_spans(text, source_grams([SOURCE]))
    assert quotes_blanked(text, spans) == f"A: {QUOTE_REMOVED} B: fine."


def test_a_record_covers_the_text_and_the_extracts_and_the_note_says_how_many():
    grams = source_grams([SOURCE])
    content = 'Goal: "We decided to use PostgreSQL 16." Files: see src/ledger/io.py and https://example.org/a-b.'
    extracts = {"decisions": ["user: We decided to use PostgreSQL 16 for the ledger", "other"], "tools": {"x": 1}}
    record = quotes_found(content=content, extracts=extracts, grams=grams)
    assert quotes_count(record) == 3
    again = quotes_found(content=content, extracts=extracts, grams=grams, known=record)
    assert again == record  # found twice, recorded once
    text, blanked = quotes_blanked_all(content=content, extracts=extracts, record=record)
    assert text == (
        f"Goal: {QUOTE_REMOVED} Files: {QUOTE_REMOVED}.\n\n"
        "[2 passages of this summary and 1 passage of its extracts quoted messages that were purged and were "
        "removed where marked.]"
    )
    assert blanked == {"decisions": [f"user: {QUOTE_REMOVED}", "other"], "tools": {"x": 1}}
    assert quotes_blanked_all(content=content, extracts=extracts, record={}) == (content, extracts)
