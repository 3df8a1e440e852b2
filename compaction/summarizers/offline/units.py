"""One pass over the transcript: every quotable piece becomes a candidate unit with its worth and cost.

A unit is a piece of one message (a span of its text, so quoting it is
quoting the speaker) with who said it and when, its content words, how much
it reads as a reported fact, the details that make it irreplaceable and
what it costs to quote. Each unit also carries the forms of speech the
sections look for (a request, a decision, a next step, an open question, an
instruction), read here once so that every section chooses from the same
analysis.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import sys

from compaction import instructions, lexicon
from compaction.pieces import Piece, estimate_tokens, pieces_of
from compaction.safety.first_pass import scan_set
from compaction.summarizers.offline import patterns, scoring
from compaction.transcript import TranscriptItem, format_date

QUOTE_TOKENS = 2  # the quotation marks around a quote
# Words of any other script (Greek, Cyrillic, Devanagari, accented Latin …), and the runs of scripts written
# without spaces (Chinese, Japanese, Korean syllables are spaced but kept here too), read as overlapping pairs
# of characters: what a word is there without a dictionary.
_OTHER_WORD_RE = re.compile(r"[^\W\d_]*[^\W\d_a-z][^\W\d_]*")
_UNSPACED_RUN_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")
ANCHOR_TOKENS = 5  # " [7 May 2023]"
MIN_SHORT_BONUS = 1.5  # a piece of few words is kept only with details worth this much (a path, two dates …)


@dataclasses.dataclass(slots=True, eq=False)
class Unit:
    """A candidate for the summary: a quotable piece (or a line carried over from the previous summary)."""

    item: int
    position: int
    speaker: str
    role: str
    day: str
    text: str
    words: frozenset[str]
    factor: float
    bonus: float
    tokens: int
    piece: Piece | None = None
    said_on: dt.datetime | None = None
    flags: frozenset[str] = frozenset()
    previous: str = ""  # the previous summary's section title, for a carried line
    weight: float = 0.0  # information of the words, set once the conversation's rarities are known
    anchored: str | None = None  # the text with its dates inserted, once written (entries._anchored)

    @property
    def order(self) -> tuple[int, int]:
        return (self.item, self.position)


def speaker_label(item: TranscriptItem) -> str:
    if item.role == "tool":
        return f"tool {item.tool_name or item.speaker}"
    speaker = item.speaker or item.role
    return speaker.capitalize() if speaker in ("user", "assistant") else speaker


# (flag, its hint words, its pattern, whether it has an RE2 twin), in the order they are looked for.
_FLAG_FORMS = tuple(
    (flag, patterns.HINTS[flag], patterns.FORMS[flag], flag in patterns.FLAG_TWINS) for flag in patterns.FLAGS
)
# Every flag's twin in one RE2 set: one scan of an ASCII text names each twinned flag that matches in it.
_TWINNED = tuple(flag for flag in patterns.FLAGS if flag in patterns.FLAG_TWINS)
_TWIN_SET = scan_set([patterns.FLAG_TWINS[flag].fast for flag in _TWINNED])


def _flags(text: str, tokens: frozenset[str], role: str, instruction: bool) -> frozenset[str]:
    """The forms of speech in `text`; `tokens` (its lower-cased words) spare the patterns that cannot match.

    Each form is searched as patterns.FLAG_SEARCHES does (the twin's RE2 set on ASCII text, the pattern
    otherwise); on ASCII text the twins are asked together (one scan, at the first form that needs one), and each
    form the hints allow takes the answer of its own twin."""
    flags = set()
    question = text.rstrip().endswith("?")
    if question:
        flags.add("question")
    if instruction:
        flags.add("instruction")
    ascii_text = text.isascii()
    twins_found: frozenset[str] | None = None
    for flag, hints, pattern, twinned in _FLAG_FORMS:
        if (flag == "goal" and role != "user") or (flag == "decision" and question) or hints.isdisjoint(tokens):
            continue
        if twinned and ascii_text:
            if twins_found is None:
                twins_found = frozenset(_TWINNED[n] for n in _TWIN_SET.Match(text.encode("ascii")) or ())
            found = flag in twins_found
        else:
            found = pattern.search(text) is not None
        if found:
            flags.add(flag)
    return frozenset(flags)


@dataclasses.dataclass(slots=True)
class Read:
    """A piece read cheaply, before it is known whether it is worth a full analysis."""

    index: int
    item: TranscriptItem
    piece: Piece
    words: frozenset[str]
    tokens: frozenset[str]
    alone: bool  # the only sentence of its message: kept even if it only reacts
    addressed: int = 0  # how many times it says "you"


def read_item(index: int, item: TranscriptItem) -> list[Read]:
    """The pieces of one user or assistant message with their words (tool results are paired with calls)."""
    if item.role not in ("user", "assistant") or not item.content:
        return []
    content = item.content
    pieces = pieces_of(index, content)
    alone = len(pieces) <= 1 or [piece.kind for piece in pieces].count("sentence") <= 1
    # On ASCII text in which no apostrophe joins a word (most messages), a piece's tokens are the runs of its span of
    # the whole message's runs text (lower-casing and the translation map each character to one): made once per
    # message. Every word kept is interned (see _interned).
    runs = lexicon.runs_text(content) if lexicon.runs_exact(content) else None
    reads = []
    for piece in pieces:
        if runs is not None:
            listed = runs[piece.start : piece.end].split()
            tokens = frozenset(map(_interned, listed))
            words = tokens - lexicon.STOP_WORDS
        else:
            listed, tokens, words = _words_of(piece.text)
        addressed = 0
        if not scoring.SECOND_PERSON.isdisjoint(tokens):
            addressed = sum(1 for token in listed if token in scoring.SECOND_PERSON)
        reads.append(Read(index, item, piece, words, tokens, alone, addressed))
    return reads


# Each word a read keeps is the one interned copy of it: a conversation says its words thousands of times, and its
# counts and rarities (scoring.idf, the pieces' information) then find each by identity, in far less memory, instead
# of comparing a fresh copy with the first one's characters each time.
# CPython 3.12 before 3.12.6 kept every interned string for the life of the process (python/cpython#113993), which
# would keep every word ever summarized in a long-running worker: there a table of this module's own stands in.
INTERNED_STRINGS_IMMORTAL = (3, 12) <= sys.version_info[:3] < (3, 12, 6)
# The words that table holds before it starts again (a copy made before then stays a valid word, only not the
# table's): far more than one conversation's vocabulary, little memory for a worker.
KEPT_WORDS = 200_000
_kept_words: dict[str, str] = {}


def _kept_word(word: str) -> str:
    """The table's copy of `word` (the stand-in for sys.intern, see INTERNED_STRINGS_IMMORTAL)."""
    if len(_kept_words) >= KEPT_WORDS:
        _kept_words.clear()
    return _kept_words.setdefault(word, word)


_interned = _kept_word if INTERNED_STRINGS_IMMORTAL else sys.intern


def _words_of(text: str) -> tuple[list[str], frozenset[str], frozenset[str]]:
    """(its tokens in order, the set of them with an apostrophe's parts and other scripts' words, its content
    words) of a piece's text, each word interned."""
    lower = text.lower().replace("’", "'")
    listed = list(map(_interned, lexicon.tokens_of(lower)))
    if "'" in lower:
        found = set(listed)
        found.update(_interned(part) for token in listed if "'" in token for part in token.split("'"))
        tokens, words = frozenset(found), frozenset(map(_interned, lexicon.content_words(lower)))
    else:
        # Without an apostrophe the tokens are exactly the runs content_words splits: no second pass.
        tokens = frozenset(listed)
        words = tokens - lexicon.STOP_WORDS
    if not lower.isascii():
        others = _other_words(lower)
        tokens, words = tokens | others, words | others
    return listed, tokens, words


def _other_words(lower: str) -> frozenset[str]:
    """The words of `lower` in scripts other than ASCII's (see _OTHER_WORD_RE), for the text's worth and rarity."""
    found = set()
    for word in _OTHER_WORD_RE.findall(lower):
        runs = _UNSPACED_RUN_RE.findall(word)
        if not runs:
            found.add(word)
        for run in runs:
            found.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(map(_interned, found))


def may_instruct(read: Read) -> bool:
    """A cheap first look: could this piece be an instruction of the user's (then it is always analysed)?"""
    return read.item.role == "user" and read.piece.kind == "sentence" and instructions.could_be_instruction(read.tokens)


def unit_of(read: Read, *, injected: bool | None = None, details: tuple[int, int, int] | None = None) -> Unit | None:
    """The candidate unit of a piece, or None when it only reacts, asks back, or addresses a model. `injected`, when
    given, is `looks_like_injection` of the piece's text, and `details` its paths, identifiers and dates counted
    (lexicon.count_details; both asked for a batch of pieces at once)."""
    piece, words, tokens, item = read.piece, read.words, read.tokens, read.item
    caption = piece.kind == "caption"
    if injected is None:
        injected = lexicon.looks_like_injection(piece.text)
    if piece.text.count("“") != piece.text.count("”") or injected:
        return None  # curly quotes that would unbalance the summary's own; or an injection attempt
    # An instruction is kept however short ("Patch it.", "Short answers."): the profile may want it verbatim.
    instruction = (
        item.role == "user" and not caption and instructions.is_instruction(piece.text, screened=True, words=tokens)
    )
    if not caption and not read.alone and not instruction and not scoring.informative(piece.text, words, tokens):
        return None
    capitalised = scoring.capitalised(piece.text)
    bonus = scoring.detail_bonus(piece.text, tokens, capitalised, details)
    if len(words) < scoring.MIN_CONTENT_WORDS and bonus < MIN_SHORT_BONUS and not instruction:
        return None
    return Unit(
        item=read.index,
        position=piece.position,
        speaker=speaker_label(item),
        role=item.role,
        day=format_date(item.created_at),
        text=piece.text,
        words=words,
        factor=scoring.fact_factor(piece.text, words, tokens, capitalised, caption=caption, addressed=read.addressed),
        bonus=bonus,
        tokens=quote_tokens(piece.text, item.created_at),
        piece=piece,
        said_on=item.created_at,
        flags=frozenset() if caption else _flags(piece.text, tokens, item.role, instruction),
    )


def units_of_item(index: int, item: TranscriptItem) -> list[Unit]:
    """Every candidate unit of one message."""
    return [unit for read in read_item(index, item) if (unit := unit_of(read)) is not None]


def quote_tokens(text: str, said_on: dt.datetime | None) -> int:
    """An estimate of what quoting `text` costs, with its quotation marks and date anchors."""
    anchors = 0
    lower = text.lower() if said_on is not None else ""
    if "ago" in lower or "last" in lower or "yesterday" in lower or "past" in lower:
        from compaction.dates import date_anchors

        anchors = len(date_anchors(text, said_on=said_on))
    return estimate_tokens(text) + QUOTE_TOKENS + ANCHOR_TOKENS * anchors
