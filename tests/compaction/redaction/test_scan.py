"""The shared scan's fast paths find exactly what the plain expressions they stand for find.

The scan runs RE2 over an ASCII image of the text and narrows Python's expressions to the few places
that can match; each test here compares that with the expression run the simple way over the whole text,
on texts drawn from the characters that matter (letters, digits, separators, non-ASCII letters and
digits, newlines)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.redaction import redact, redact_many, tokens
from compaction.redaction.spans import (
    _RUN_CHARS,
    _RUN_TAIL_RE,
    CORE_RE,
    DIGITS_RE,
    UPPER_ID_RE,
    Scan,
    _wordish,
    char_spans,
    re2_spans,
)
from devtools import redaction_eval as evaluation

_ALPHABET = "aeiKqxzAEZT0123456789_-+/=.:~%$ \n\t'\"?éÉ٣３ßİ"
_TEXTS = st.text(alphabet=_ALPHABET, max_size=300)
_DIGIT_TEXTS = st.text(alphabet="0123456789 -./+ABZx,:\n٣é", max_size=120)


def _runs_plainly(text: str) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    for core in CORE_RE.finditer(text):
        if (found and core.start() < found[-1][1]) or _wordish(core.group()):
            continue
        start = core.start()
        while start > 0 and text[start - 1] in _RUN_CHARS:
            start -= 1
        tail = _RUN_TAIL_RE.match(text, core.end())
        found.append((start, tail.end() if tail else core.end()))
    return found


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_runs_are_the_cores_found_plainly(text):
    assert Scan(text).runs == _runs_plainly(text)


def _id_candidates_plainly(text: str) -> list[tuple[int, int]]:
    return char_spans(UPPER_ID_RE, text) + [match.span() for match in DIGITS_RE.finditer(text)]


@settings(max_examples=400, deadline=None)
@given(_DIGIT_TEXTS)
def test_id_candidates_are_those_found_plainly(text):
    assert Scan(text).id_candidates == _id_candidates_plainly(text)


def test_a_digit_group_in_other_scripts_is_still_found():
    text = "رقم ٤١١١ ١١١١ ١١١١ ١١١١ هنا"
    assert Scan(text).id_candidates == _id_candidates_plainly(text) != []


def test_catalogue_tokens_and_kinds_are_those_of_one_group_per_format():
    grouped = tokens.catalogue_re(groups=True)
    texts = [sample["text"] for sample in evaluation.load_positive([evaluation.default_corpus() / "positive.jsonl"])]
    texts += ["ghp_" + "a1B2" * 9 + " at the start", "sk-ant-api03-" + "x" * 30]
    for text in texts:
        image = Scan(text).image
        expected = [(*match.span(match.lastindex), match.lastindex - 1) for match in grouped.finditer(image)]
        found = []
        for start, end in re2_spans(tokens.catalogue_re(), image):
            index, token_start, token_end = tokens._format(image, start, end)
            found.append((token_start, token_end, index))
        assert found == expected, text


_PIECES = ["password", "=", " ", "\n", "ΚΩΔΙΚΌΣ", "Σ", "é", "Hq2Lk9Zp4Xw1Rt8", "٣", "x"]
_PIECE_TEXTS = st.lists(st.sampled_from(_PIECES), max_size=8).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(_PIECE_TEXTS, max_size=6))
def test_a_batch_is_redacted_as_its_texts_one_by_one(texts):
    """The batch is lowered text by text (most are ASCII, quick to lower): the same as lowering it whole."""
    assert redact_many(texts) == [redact(text) for text in texts]
