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


def test_a_word_share_of_vowels_counts_only_when_the_letters_pair_as_words():
    assert looks_random("cioB2Keyp9sjlttAwvIHSaOH9Uwe0H8IQ5K", strict=True)  # vowels, but no words
    assert not looks_random("getUserAccountSettings2024ForAdmin", strict=True)


def test_letters_glued_to_a_hex_key_are_a_prefix_and_hex_alone_is_a_digest():
    assert looks_random("cs3562437a1d2780c7d0d5c49ef9c262a3", strict=True)
    assert not looks_random("3562437a1d2780c7d0d5c49ef9c262a3", strict=True)
    assert not looks_random("abcd3562437a1d2780c7d0d5c49ef9c262a3", strict=True)  # hex letters: still hex
