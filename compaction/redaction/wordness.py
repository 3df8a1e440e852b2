"""Does a run of letters read as a word? A letter-bigram model of words, not a dictionary.

The entropy layer's vowel test takes any piece with a vowel for a word, so a
random lower-case body (`blufwgozt72zwnnw1gpsaqveb0`) passed for a name made
of words. Here a piece is scored by how likely its letter pairs are in words:
the average log-probability of each letter after the one before it (with the
word's start and end as letters), learned from the shipped BIP39 list of
2,048 common English words (`data/bip39_english.txt`): words of English and
of the languages written in Latin letters that share its pairs score well
above random letters, and short random pieces overlap words most. The model
knows no words, so it needs no list of names, products or languages, and it
ships no vocabulary beyond the one seed phrases need.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from pathlib import Path

_WORDLIST = Path(__file__).with_name("data") / "bip39_english.txt"
_EDGE = "^"  # the start and the end of a word, as one more letter
SMOOTHING = 0.5  # added to every pair's count, so a pair never seen in a word is unlikely but possible
ALPHABET = 27  # the letters a to z and the word's edge
# Below this average log2-probability per letter pair, a piece of letters reads as no word: above the scores
# of nearly all random pieces of ten or more letters, below those of nearly all words of the list.
WORD_FLOOR = -4.9
MIN_SCORED_LETTERS = 5  # shorter pieces are scored too noisily to tell (ghp, zoom, kms): they count as words


@functools.cache
def _model() -> tuple[dict[tuple[str, str], float], dict[str, float]]:
    pairs: Counter = Counter()
    firsts: Counter = Counter()
    for word in _WORDLIST.read_text(encoding="utf-8").split():
        framed = f"{_EDGE}{word}{_EDGE}"
        for a, b in zip(framed, framed[1:], strict=False):
            pairs[a, b] += 1
            firsts[a] += 1
    log_pairs = {
        pair: math.log2((count + SMOOTHING) / (firsts[pair[0]] + SMOOTHING * ALPHABET)) for pair, count in pairs.items()
    }
    unseen = {first: math.log2(SMOOTHING / (count + SMOOTHING * ALPHABET)) for first, count in firsts.items()}
    return log_pairs, unseen


def score(piece: str) -> float:
    """Average log2-probability of the letter pairs of `piece` (ASCII letters; case ignored)."""
    log_pairs, unseen = _model()
    framed = f"{_EDGE}{piece.lower()}{_EDGE}"
    floor = math.log2(SMOOTHING / (SMOOTHING * ALPHABET))
    total = sum(log_pairs.get((a, b), unseen.get(a, floor)) for a, b in zip(framed, framed[1:], strict=False))
    return total / (len(framed) - 1)


def wordlike(piece: str) -> bool:
    """True when the letters of `piece` pair as a word's do (or the piece is too short to tell)."""
    return len(piece) < MIN_SCORED_LETTERS or score(piece) >= WORD_FLOOR
