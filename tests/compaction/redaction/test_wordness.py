"""The letter-pair model that tells a word from random letters, and the entropy test that uses it."""

import pytest

from compaction.redaction import redact
from compaction.redaction.entropy import looks_random
from compaction.redaction.wordness import WORD_FLOOR, score, wordlike


@pytest.mark.parametrize("word", ["password", "hasher", "switching", "staging", "authorization", "lösenordet"])
def test_words_pair_as_words(word):
    assert wordlike(word)
    assert score(word) >= WORD_FLOOR


@pytest.mark.parametrize("piece", ["blufwgozt", "gpsaqveb", "zqxkvjwpt", "mcqljrtx"])
def test_random_letters_do_not(piece):
    assert not wordlike(piece)


def test_a_short_piece_is_given_the_benefit():
    assert wordlike("xq")  # too short to tell


def test_random_lower_case_body_is_random_and_a_name_of_words_is_not():
    assert looks_random("kq3vzt7wplmx9rbn2hdyc4sf", strict=False)
    assert not looks_random("PBKDF2SHA1PasswordHasher", strict=False)
    assert not looks_random("HTTP_101_SWITCHING_PROTOCOLS", strict=False)


def test_prefixed_token_with_random_lower_case_body_is_redacted():
    text = "use this: akey_blufwgozt72zwnnw1gpsaqveb0 for the sandbox"
    assert redact(text).text == "use this: [REDACTED:prefixed_token] for the sandbox"
