"""The phrasebook the injection model also trains on: every language of the corpus, well-formed texts, cases that
carry their payload, and nothing copied from the corpus it is measured on."""

import re

import pytest

from devtools import injection_data, injection_phrasebook
from tests.injection_corpus import languages, load

SLOT_RE = re.compile(r"\{(\w+)\}")


@pytest.fixture(scope="module")
def book():
    return injection_phrasebook.phrasebook()


def test_every_language_of_the_corpus_has_injections_and_look_alikes(book):
    assert set(book) == {language.code for language in languages()}
    for code, texts in book.items():
        assert len(texts["inject"]) >= 12 and len(texts["benign"]) >= 10, code
        for text in texts["inject"]:
            assert set(SLOT_RE.findall(text)) <= {"code", "word", "host", "user"} and len(SLOT_RE.findall(text)) <= 1
        assert sum(bool(SLOT_RE.search(text)) for text in texts["inject"]) >= len(texts["inject"]) // 2, code
        assert not any(SLOT_RE.search(text) for text in texts["benign"]), code


def test_cases_are_development_cases_that_carry_their_payload(book):
    made = injection_phrasebook.cases()

    assert len(made) == 2 * sum(len(texts["inject"]) + len(texts["benign"]) for texts in book.values())
    assert {case.split for case in made} == {"dev"} and {case.family for case in made} == {"phrasebook"}
    for case in made:
        carrier = case.texts[case.target[0]]
        assert case.text in carrier and case.turns[case.target[0]][0] == "user"
        assert (case.payload in carrier) if case.injection else not case.payload
        assert "{" not in carrier


def test_nothing_is_copied_from_the_corpus(book):
    """Compared with every text of the corpus (both parts), its payload read as a slot: only this boolean is
    looked at, never a test case."""
    corpus = set()
    for case in load():
        for text in (case.text, *(turn["content"] for turn in case.turns)):
            corpus.add(text.replace(case.payload, "{}") if case.payload else text)
    written = [SLOT_RE.sub("{}", text) for texts in book.values() for text in texts["inject"] + texts["benign"]]

    assert injection_data.cases("dev")[1] == "tests.injection_corpus"
    assert not [text for text in written if text in corpus]
