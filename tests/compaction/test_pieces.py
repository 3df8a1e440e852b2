"""Where messages are cut into sentences and clauses (`compaction.pieces`)."""

import random
import re

import pytest

from compaction import pieces
from compaction.pieces import estimate_tokens, pieces_of
from devtools import redaction_eval as corpora


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Hi. “Quoted.” (Paren.) Next one! e.g. this stays. 3 apples?",
            [("“Quoted.", 1), ("(Paren.", 2), ("Next one! e.g. this stays.", 3), ("3 apples?", 4)],
        ),
        ("他说。好！再见？”她说。", [("他说。", 1), ("好！", 2), ("再见？", 3), ("她说。", 4)]),
        ("a.. B c… D", [("a..", 1), ("B c…", 2)]),
        (
            "We moved the standup to ten, since the rota clashes with the school run twice a week; nobody objected, "
            "and the notes live in the wiki now, under team rituals.",
            [
                ("We moved the standup to ten, since the rota clashes with the school run twice a week", 1),
                ("nobody objected, and the notes live in the wiki now, under team rituals.", 1),
            ],
        ),
    ],
)
def test_sentences_end_at_their_mark_and_long_ones_are_offered_in_clauses(text, expected):
    pieces = pieces_of(0, text)

    assert [(piece.text, piece.sentence) for piece in pieces] == expected
    assert all(text[piece.start : piece.end] == piece.text and not piece.cut for piece in pieces)


# The sentence ends as two alternatives, each opening with its own class of marks.
_SENTENCE_END_BY_FAMILY = re.compile(
    r"[.!?…।॥؟]([\"'”’)»]*\s+)(?=[\"'“‘(«„]?[^\W_a-z\u00df-\u024f])|[。！？]([”’」』）)]*\s*)(?=[^\s”’」』）)])"
)


def test_sentence_ends_are_those_of_the_two_families():
    marks = list(".!?…।॥؟。！？\"'”’)»“‘(«„」』）aAß Ωz1_ \n\t")
    generator = random.Random(4)
    texts = ["".join(generator.choice(marks) for _ in range(generator.randint(0, 40))) for _ in range(50_000)]
    texts += corpora.locomo_messages(corpora.default_locomo()[:1]) + corpora.demo_messages()

    def ends(expression: re.Pattern[str], text: str, start: int = 0) -> list:
        return [(m.span(), m.span(1), m.span(2)) for m in expression.finditer(text, start, len(text))]

    for text in texts:
        assert ends(pieces._SENTENCE_END_RE, text) == ends(_SENTENCE_END_BY_FAMILY, text), repr(text)
        assert ends(pieces._SENTENCE_END_RE, text, 1) == ends(_SENTENCE_END_BY_FAMILY, text, 1), repr(text)


def _estimate_by_expressions(text: str) -> int:
    """The token estimate as its expressions define it: a token per word, number or other character, one more
    for a word of 9 letters and another from 15, and runs of other letters (no spaces) counted in pairs."""
    return (
        len(re.findall(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]", text))
        + len(re.findall(r"[A-Za-z]{9,}", text))
        + len(re.findall(r"[A-Za-z]{15,}", text))
        - sum(len(run) - -(-len(run) // 2) for run in re.findall(r"[^\W\d_A-Za-z]{2,}", text))
    )


def test_the_token_estimate_counts_long_words_once_and_longer_words_twice():
    generator = random.Random(11)
    parts = ["a", "word", "nine-letr", "abcdefghi", "abcdefghijklmno", "x" * 30, "Δδδδ", "日本語", "42", ".", " ", "\n"]
    for _ in range(5_000):
        text = "".join(generator.choice(parts) for _ in range(generator.randint(0, 12)))
        assert estimate_tokens(text) == _estimate_by_expressions(text), repr(text)


def test_the_token_estimate_of_ascii_text_is_the_expressions_count():
    """ASCII text is counted by translations and splits: the same count as the expressions, whatever the
    characters (spaces as \\s reads them, controls, marks)."""
    generator = random.Random(12)
    parts = [chr(code) for code in range(128)] + ["abcdefghi", "abcdefghijklmno", "42"]
    for _ in range(20_000):
        text = "".join(generator.choice(parts) for _ in range(generator.randint(0, 16)))
        assert estimate_tokens(text) == _estimate_by_expressions(text), repr(text)


def test_an_ascii_opening_outside_a_patterns_first_characters_is_never_trimmed_by_it():
    """pieces._OPENING_FIRSTS passes over a pattern for any other ASCII first character: the pattern's own phrases,
    their first character replaced by every such character (but a space: _trimmed skips spaces first), never
    match."""
    for pattern, firsts in pieces._OPENINGS:
        phrases = re.findall(r"[A-Za-z' ]{2,}", pattern.pattern) + ["- item", "12. item", "## Title", "> quote"]
        for phrase in phrases:
            for rest in (phrase, phrase + ", then more", phrase + "! Then more", phrase + " Anna, hi."):
                assert pattern.match(rest) is None or rest[0] in firsts or not rest[0].isascii(), rest
                for code in range(128):
                    if chr(code) not in firsts and not chr(code).isspace():
                        assert pattern.match(chr(code) + rest[1:]) is None, (pattern.pattern[:30], chr(code) + rest)


def test_the_trimmed_spans_are_those_every_opening_pattern_asked_gives():
    def asked_all(text, start, end):
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start == 0:
            for pattern in pieces._OPENING_PATTERNS:
                match = pattern.match(text, 0, end)
                if match and match.end() > 0:
                    start = match.end()
                    break
        while end > start and text[end - 1] in " -–—,;:":
            end -= 1
        return start, end

    texts = corpora.locomo_messages(corpora.default_locomo()) + corpora.demo_messages()  # LoCoMo only beside a clone
    openers = [
        "Hey Anna! ",
        "Wow, ",
        "So much has happened since we last spoke! ",
        "- ",
        "1) ",
        "Thanks! ",
        "İ ",
        "ſo, ",
    ]
    texts = [*texts, *(opener + text for opener in openers for text in texts[:200])]
    assert [t for t in texts if pieces._trimmed(t, 0, len(t)) != asked_all(t, 0, len(t))] == []
    assert sum(pieces._trimmed(t, 0, len(t))[0] > 0 for t in texts) > 500  # many are trimmed
