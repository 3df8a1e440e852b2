"""Where messages are cut into sentences and clauses (`compaction.pieces`)."""

import pytest

from compaction.pieces import pieces_of


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
