"""What a piece of conversation is worth to someone who did not read it.

A piece is worth the information of its content words — rare in this
conversation (IDF) and rare in English at large (word frequencies from the
`wordfreq` package, shipped with its data) — weighted by how much it reads
as a report of facts rather than chit-chat (first person, past tense,
anchored in time, naming things), plus the details a reader cannot
reconstruct later: paths, URLs, identifiers, numbers, dates, errors,
decisions. All of it is read from the form of the text alone; the
summarizer never sees what anyone will ask later.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable
from itertools import chain, repeat

import wordfreq

from compaction import lexicon

# Every alternative opens with one of i, m, o, u, w (in any case): looked at first, so that the other positions are
# passed over at once rather than each trying every alternative (the same matches, about three times as fast).
FIRST_PERSON_RE = re.compile(r"(?=[imouw])\b(?:I|I'm|I've|I'd|I'll|we|we're|we've|my|our|me|us|mine)\b", re.I)
_LOWER_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
# The capital letter is looked for first (the lookbehinds only where there is one): the same matches, faster.
_CAPITALISED_RE = re.compile(r"(?=[A-Z])(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
_FIRST_PERSON = frozenset("i i'm i've i'd i'll we we're we've we'd we'll my our me us mine ours".split())
SECOND_PERSON = frozenset("you your you're you've yours you'd you'll".split())
_IRREGULAR_PAST = frozenset(
    """went made got took gave ran saw bought found began felt met left won lost wrote read
sang taught brought built caught chose drew drove ate fell flew grew heard held kept knew led paid rode sent sold
spent spoke stood swam thought told threw wore did had was were became came broke forgot ago since""".split()
)
_TIME_WORDS = frozenset(
    """yesterday today tonight tomorrow ago last next recently weekend week month year monday
tuesday wednesday thursday friday saturday sunday summer winter spring fall autumn birthday anniversary since
deadline release sprint""".split()
)
# Reactions rather than facts: a sentence made mostly of these reports nothing new.
EVALUATIVE = frozenset(
    """amazing awesome great good nice cool lovely beautiful wonderful fantastic incredible
inspiring inspired proud happy glad fun exciting excited love loved loving lots special important vital
super sweet cute gorgeous stunning impressive brilliant perfect best better totally sure hope hoping wish feel feels
felt feeling thanks thank congrats congratulations sounds sound looks look seems true agree definitely
keep support supportive means mean meaning appreciate appreciated care caring kind wow interesting thing things
stuff tough hard difficult easy""".split()
)


MIN_CONTENT_WORDS = 3  # fewer content words (and no number) say too little to stand alone
MAX_EVALUATIVE_SHARE = 0.5  # a sentence with this share of reaction words or more reports nothing new


# The lower-cased words one of FIRST_PERSON_RE's matches holds as a token (an apostrophe's parts included).
_FIRST_PERSON_HINTS = frozenset("i we my our me us mine".split())


def informative(text: str, words: frozenset[str], tokens: frozenset[str] | None = None) -> bool:
    """Whether a sentence says something beyond reacting or asking back. `tokens` (its lower-cased words, an
    apostrophe's parts included), when given, spare the search for the first person in an ASCII question without
    any of its words (on other text, ignoring case reads some other letters as ASCII ones)."""
    if text.rstrip().endswith("?"):
        if tokens is not None and text.isascii() and _FIRST_PERSON_HINTS.isdisjoint(tokens):
            return False
        if not FIRST_PERSON_RE.search(text):
            return False
    if len(words) < MIN_CONTENT_WORDS and not lexicon.NUMBER_RE.search(text):
        return False
    evaluative = len(words & EVALUATIVE) / max(1, len(words))
    return evaluative < MAX_EVALUATIVE_SHARE


_DIGIT_RE = re.compile(r"\d")
_ERROR_HINT_RE = re.compile(r"rror|xception|Warning|Traceback|FATAL|ERROR|panic|fault|exit|status|HTTP")


def capitalised(text: str) -> int:
    """How many capitalised names the text has (not counting a sentence's first word)."""
    return len(_CAPITALISED_RE.findall(text))


# Points for each detail a later turn cannot reconstruct, and the most of each kind that count.
PATH_POINTS, MOST_PATHS = 2.0, 3  # paths and URLs
IDENTIFIER_POINTS, MOST_IDENTIFIERS = 1.5, 3
DATE_POINTS, MOST_DATES = 1.5, 2
NUMBER_POINTS, MOST_NUMBERS = 1.0, 3
NAME_POINTS, MOST_NAMES = 0.8, 4
ERROR_POINTS, MOST_ERRORS = 1.5, 2
DECISION_POINTS = 2.0  # a decision, once


def detail_bonus(
    text: str,
    tokens: frozenset[str] = frozenset(),
    names: int | None = None,
    details: tuple[int, int, int] | None = None,
) -> float:
    """Details a later turn cannot reconstruct: references, identifiers, dates, numbers, names, errors, decisions.

    `tokens` (the lower-cased words), `names` (capitalised names) and `details` (how many paths, identifiers and
    dates, as lexicon.count_details counts them for a batch of pieces) may be given when already counted.
    """
    bonus = 0.0
    digits = _DIGIT_RE.search(text) is not None
    if "/" in text or "." in text:  # a path needs one of them (else find_paths finds none)
        urls = len(lexicon.URL_RE.findall(text)) if "://" in text else 0
        paths = len(lexicon.find_paths(text)) if details is None else details[0]
        bonus += PATH_POINTS * min(MOST_PATHS, urls + paths)
    if details is None:
        identifiers, dates = len(lexicon.find_identifiers(text)), len(lexicon.find_dates(text, digits, tokens or None))
    else:
        _, identifiers, dates = details
    bonus += IDENTIFIER_POINTS * min(MOST_IDENTIFIERS, identifiers)
    bonus += DATE_POINTS * min(MOST_DATES, dates)
    if digits:
        bonus += NUMBER_POINTS * min(MOST_NUMBERS, len(lexicon.NUMBER_RE.findall(text)))
    bonus += NAME_POINTS * min(MOST_NAMES, capitalised(text) if names is None else names)
    if _ERROR_HINT_RE.search(text):
        bonus += ERROR_POINTS * min(MOST_ERRORS, len(lexicon.ERROR_RE.findall(text)))
    if lexicon.mentions_decision(text, tokens or None):
        bonus += DECISION_POINTS
    return bonus


# How much a passage reads as a report of facts: multipliers for what its form shows.
TIME_FACTOR = 1.8  # anchored in time ("last Friday")
FIRST_PERSON_FACTOR, NO_FIRST_PERSON_FACTOR = 1.3, 0.8  # told by whoever lived it, or not
PAST_FACTOR, NOT_PAST_FACTOR = 1.2, 0.85  # told in the past tense, or not
CAPTION_FACTOR = 0.5  # an attachment's caption: generic words
DIGIT_FACTOR = 1.1  # has a figure
NAME_RAISE, MOST_NAMES_RAISING = 0.1, 3  # a tenth more for each capitalised name, up to three
QUESTION_CUT = 0.4  # a question loses this share
ADDRESSED_FACTOR, MOST_ADDRESSED = 0.85, 3  # for each "you" (up to three): talk to the other person, not facts
EVALUATIVE_CUT = 0.8  # the share of reaction words, times this, is taken off
MIN_REGULAR_PAST = 5  # shorter words ending in -ed ("need", "bed") are rarely past tenses
# A word of MIN_REGULAR_PAST letters or more ending in -ed, in a text of words each followed by a space (no word holds
# one): the "ed " is looked for first (a literal the engine scans for), the letters before it looked back at.
_REGULAR_PAST_RE = re.compile(rf"ed (?<=[^ ]{{{MIN_REGULAR_PAST - 2}}}ed )")


def fact_factor(
    text: str,
    words: frozenset[str],
    tokens: frozenset[str] | None = None,
    names: int | None = None,
    *,
    caption: bool = False,
    addressed: int | None = None,
) -> float:
    """How much a passage reads as a report of facts rather than chit-chat, from its form alone.

    Reported events are told in the first person, often in the past tense
    and anchored in time ("last Friday I …"); reactions and questions back
    to the other person ("that's amazing, how did you …?") carry little. A
    caption describes an attachment in generic words; it weighs half.
    """
    present = tokens if tokens is not None else frozenset(_LOWER_WORD_RE.findall(text.lower().replace("’", "'")))
    factor = TIME_FACTOR if not present.isdisjoint(_TIME_WORDS) else 1.0
    factor *= FIRST_PERSON_FACTOR if not present.isdisjoint(_FIRST_PERSON) else NO_FIRST_PERSON_FACTOR
    past = not present.isdisjoint(_IRREGULAR_PAST) or _REGULAR_PAST_RE.search(" ".join(present) + " ") is not None
    factor *= PAST_FACTOR if past else NOT_PAST_FACTOR
    factor *= CAPTION_FACTOR if caption else 1.0
    factor *= DIGIT_FACTOR if _DIGIT_RE.search(text) else 1.0
    factor *= 1.0 + NAME_RAISE * min(MOST_NAMES_RAISING, capitalised(text) if names is None else names)
    factor *= 1.0 - QUESTION_CUT * min(1.0, text.count("?"))
    if addressed is None:
        addressed = sum(1 for t in _LOWER_WORD_RE.findall(text.lower().replace("’", "'")) if t in SECOND_PERSON)
    factor *= ADDRESSED_FACTOR ** min(MOST_ADDRESSED, addressed)
    if words:
        factor *= 1.0 - EVALUATIVE_CUT * len(words & EVALUATIVE) / len(words)
    return factor


IDF_SMOOTHING = 0.5  # half a message: a word said in every message keeps a small weight
# General rarity, read in thirds of its range, weighs the conversation's IDF between these bounds.
RARITY_SCALE = 3.0
MIN_RARITY_WEIGHT, MAX_RARITY_WEIGHT = 0.2, 1.5


def idf(documents: Iterable[Iterable[str]], count: int) -> dict[str, float]:
    """Rarity of each word: in this conversation (per message) and in English at large.

    "marshmallows" and "Sweden" outweigh "colors" and "feel", even when each is said once.
    """
    frequency = Counter(chain.from_iterable(documents))
    total = max(count, 1)
    # Most words are said in one message or a few: the conversation's factor is computed once for each count.
    rarity_here: dict[int, float] = {}
    weights: dict[str, float] = {}
    for word, seen in frequency.items():
        here = rarity_here.get(seen)
        if here is None:
            here = rarity_here[seen] = math.log((total + 1) / (seen + IDF_SMOOTHING))
        weights[word] = here * _rarity_weight(word)
    return weights


def information(words: Iterable[str], idf: dict[str, float]) -> float:
    """The information of a piece's words: the sum of their rarities (a word without one counts 1)."""
    # fsum: a set's order changes with the hash seed, and a plain float sum with it; ties must not.
    return math.fsum(map(idf.get, words, repeat(1.0)))


@functools.cache
def _rarity_weight(word: str) -> float:
    """How much a word's general rarity weighs its rarity in the conversation (see RARITY_SCALE)."""
    return min(max(general_rarity(word) / RARITY_SCALE, MIN_RARITY_WEIGHT), MAX_RARITY_WEIGHT)


DIGITS_RARITY = 2.5  # a bare number: fairly rare, whatever its digits
ZIPF_COMMONEST = 7.0  # about the Zipf frequency of "the": rarity counts down from it
# No word is wholly predictable; beyond the most, rarity is noise (typos, names).
MIN_RARITY, MAX_RARITY = 0.1, 4.5
OTHER_SCRIPT_RARITY = DIGITS_RARITY  # a word outside English's table, as rare as a number


@functools.cache
def general_rarity(word: str) -> float:
    """Bits-like surprise of a word in general English: 0 for 'the', about 4 for rare words."""
    if word.isdigit():
        return DIGITS_RARITY
    if not word.isascii():
        return OTHER_SCRIPT_RARITY  # wordfreq's English table knows none of them: neither common nor rare
    zipf = wordfreq.zipf_frequency(word, "en")
    return min(max(ZIPF_COMMONEST - zipf, MIN_RARITY), MAX_RARITY)
