"""The forms of speech a unit is flagged with: the encoded-once search finds what each flag's search finds."""

import random

from compaction import lexicon
from compaction.summarizers.offline import patterns, scoring, units
from compaction.transcript import TranscriptItem
from devtools.docs.samples import demo_items

PHRASES = [
    "we decided to",
    "we'll go with",
    "I want to",
    "help me",
    "next step",
    "is green",
    "blocked by",
    "still open",
    "tbd",
    "rather than",
    "it failed",
    "sign-off",
    "Déjà vu",
    "naïve",
    "we need to",
    "the plan is",
    "?",
    ".",
    ",",
    " ",
    "Ana",
    "the release",
    "by Friday",
    "won't",
    "stay on",
    "currently",
    "unknown",
]


def _reference(text: str, tokens: frozenset[str], role: str, instruction: bool) -> frozenset[str]:
    """The flags as patterns.FLAG_SEARCHES reads them, one search a flag."""
    question = text.rstrip().endswith("?")
    flags = {"question"} if question else set()
    if instruction:
        flags.add("instruction")
    for flag, search in patterns.FLAG_SEARCHES.items():
        if (flag == "goal" and role != "user") or (flag == "decision" and question):
            continue
        if not patterns.HINTS[flag].isdisjoint(tokens) and search(text):
            flags.add(flag)
    return frozenset(flags)


def _texts() -> list[str]:
    generator = random.Random(13)
    made = ["".join(generator.choice(PHRASES) for _ in range(generator.randint(1, 8))) for _ in range(3_000)]
    return made + [
        piece.piece.text for index, item in enumerate(demo_items(0)) for piece in units.read_item(index, item)
    ]


def test_flags_are_each_flag_s_search():
    flagged = 0
    for text in _texts():
        tokens = units._words_of(text)[1]
        for role in ("user", "assistant"):
            expected = _reference(text, tokens, role, instruction=False)
            assert units._flags(text, tokens, role, False) == expected, repr(text)
            flagged += bool(expected - {"question"})
    assert flagged > 1_000  # the sample holds many flagged texts, not only plain ones


FIRST_PERSON_PHRASES = ["I", "I'm", "we're", "my", "Our", "US", "mine", "me", "you", "them", "we_team", "ı", "uſ", "?"]


def test_a_question_s_first_person_read_with_its_tokens_is_the_search_s():
    """informative() passes over the first person's search in an ASCII question without any of its words: the
    same answer as the search."""
    generator = random.Random(17)
    phrases = PHRASES + FIRST_PERSON_PHRASES
    questions = 0
    for _ in range(5_000):
        text = "".join(generator.choice(phrases) for _ in range(generator.randint(1, 8))) + "?"
        _, tokens, words = units._words_of(text)
        assert scoring.informative(text, words, tokens) == scoring.informative(text, words), repr(text)
        questions += bool(scoring.FIRST_PERSON_RE.search(text))
    assert 500 < questions < 4_500  # both kinds of question are in the sample


QUOTING_PHRASES = [
    "said 'TimeoutError",
    " s'",
    "the runners' logs",
    "'ok'",
    "don't",
    "Rock'n'roll",
    ". Next",
    "!",
    "\n",
]


def test_a_message_s_pieces_read_once_are_each_piece_s_words():
    """read_item splits a whole ASCII message once when no apostrophe in it joins a word (an apostrophe that only
    quotes included): each piece's words and tokens are what `_words_of` finds in the piece alone."""
    generator = random.Random(19)
    phrases = PHRASES + QUOTING_PHRASES
    once = 0
    for index in range(3_000):
        content = "".join(generator.choice(phrases) for _ in range(generator.randint(1, 12)))
        item = TranscriptItem(index, "user", "user", content)
        once += "'" in content and lexicon.runs_exact(content)
        for read in units.read_item(index, item):
            listed, tokens, words = units._words_of(read.piece.text)
            assert (read.tokens, read.words) == (tokens, words), repr(read.piece.text)
            assert read.addressed == sum(1 for token in listed if token in scoring.SECOND_PERSON)
    assert once > 200  # quoting apostrophes read with the whole message, not only messages without any


def test_the_regular_past_is_found_in_the_joined_words_as_word_by_word():
    from devtools import redaction_eval

    texts = [
        *redaction_eval.locomo_messages(redaction_eval.default_locomo()),  # LoCoMo only beside a clone
        *redaction_eval.demo_messages(),
        *("bed", "I needed", "a reed", "éclaired"),
    ]
    found = 0
    for text in texts:
        present = frozenset(scoring._LOWER_WORD_RE.findall(text.lower())) | frozenset(text.lower().split())
        word_by_word = any(len(t) >= scoring.MIN_REGULAR_PAST and t.endswith("ed") for t in present)
        assert (scoring._REGULAR_PAST_RE.search(" ".join(present) + " ") is not None) == word_by_word, text
        found += word_by_word
    assert 100 < found < len(texts) - 100


def test_the_stand_in_for_interning_gives_one_copy_of_each_word_and_starts_again_when_full(monkeypatch):
    monkeypatch.setattr(units, "KEPT_WORDS", 3)
    monkeypatch.setattr(units, "_kept_words", {})
    first = units._kept_word("".join(["rel", "ease"]))
    again = units._kept_word("".join(["re", "lease"]))
    assert again is first and again == "release"
    for word in ("alpha", "beta"):
        units._kept_word(word)
    assert len(units._kept_words) == 3
    later = units._kept_word("".join(["gam", "ma"]))
    assert units._kept_words == {"gamma": "gamma"} and units._kept_words["gamma"] is later
    assert units._kept_word("".join(["rel", "ease"])) is not first  # a new table: a new copy, the same word
