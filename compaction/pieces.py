"""Cutting messages into quotable pieces: sentences, with their place in the message.

Every piece is a span of the message's (redacted) text, so whatever the
summary quotes of it is an exact substring of what the speaker wrote
(docs/design.md, invariant 10). Nothing is rewritten here: a piece only starts
later (after a greeting or an interjection that opens the sentence) or ends
earlier (a sentence longer than a reader needs is cut at a clause, and the
renderer marks the cut). Code blocks are not quoted: the commands and paths
in them reach the summary through the references.

The offline summarizer and the instruction finder (`compaction.instructions`,
which the summarizer reads) both cut text this way, so it lives outside both.
"""

from __future__ import annotations

import dataclasses
import re

from compaction import lexicon

MAX_PIECE_WORDS = 45
# A sentence longer than this is offered in clauses too (cut at a comma, semicolon, colon or dash), each at
# least MIN_CLAUSE_WORDS long: a reader needs "I lost my job as a banker yesterday", not the "- so I'm
# gonna …" that follows. Chosen with compaction_fidelity on LoCoMo: clauses keep more answers at 10× than
# whole sentences do, and no fewer at 5×.
SPLIT_WORDS = 20
MIN_CLAUSE_WORDS = 8
MIN_PIECE_CHARS = 2  # a shorter piece is punctuation or a stray letter, not something said

# A sentence ends at its mark and the spaces after it when the next one starts with a capital, a digit or a letter
# of a script without case (Greek and Cyrillic capitals, Devanagari, Arabic …; not a lower-case Latin letter, so
# "e.g. this" stays whole); the Devanagari danda and the Arabic question mark end one too. Chinese and Japanese
# full stops end a sentence with or without a space after them.
# The mark itself starts a match (a search for a mark is a fast scan; a look behind is tried at every position) and
# the group after it is what lies between the two sentences. Every mark is one class first, so that the scan jumps
# from mark to mark (an alternation of two classes is tried at every character); a look behind at the mark just read
# then picks the family: the same matches and groups as
# r"[.!?…।॥؟]([\"'”’)»]*\s+)(?=[\"'“‘(«„]?[^\W_a-z\u00df-\u024f])|[。！？]([”’」』）)]*\s*)(?=[^\s”’」』）)])".
_SENTENCE_END_RE = re.compile(
    r"[.!?…।॥؟。！？](?:(?<=[.!?…।॥؟])([\"'”’)»]*\s+)(?=[\"'“‘(«„]?[^\W_a-z\u00df-\u024f])"
    r"|(?<=[。！？])([”’」』）)]*\s*)(?=[^\s”’」』）)]))"
)
_LINE_RE = re.compile(r"[^\n]+")
_FENCE_RE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_BULLET_RE = re.compile(r"^\s*(?:[-*•>]|\d+[.)]|#{1,6})\s+")
_SHARED_RE = re.compile(r"\[shared an? (?:image|photo|file|link)[^\]]*\]")
_CAPTION_RE = re.compile(r"\[shared an? (?:image|photo|file|link)(?::[^\S\n]*)?([^\]\n]*)\]")
# What every match starts with: _FENCE_RE's, and both _SHARED_RE's and _CAPTION_RE's.
_FENCE_MARK, _SHARED_MARK = "```", "[shared a"
# What opens a chat turn and reports nothing: interjections (with the name that may follow), and words that
# are interjections only when punctuation follows them ("Well, …", "Great!", but not "Great news: …").
_OPENER_RE = re.compile(
    r"^(?:(?:oh|ohh|wow|hey|hi|hello|yeah|yes|yep|yup|haha+|hah|lol|omg|aw+|ah+|um+|uh|hmm+|ooh|whoa|gosh|btw)"
    r"\b(?:\s+[A-Z][a-z]+(?=\s*[,!.]))?(?:[\s,!.…~]+|$)"
    r"|(?:well|so|thanks|thank you|cool|great|nice|awesome|sure|okay|ok|totally|absolutely|definitely|right|true|"
    r"exactly|damn|congrats|congratulations|anyway|anyways|by the way)\b(?:\s+[A-Z][a-z]+)?\s*[,!.…~]+\s*)+",
    re.IGNORECASE,
)
_PLEASANTRY_RE = re.compile(
    r"^(?:(?:(?:so )?(?:much|a lot|lots|a lot's|lot's|a bunch|quite a bit|tons|loads)\s+(?:has\s+|'s\s+)?"
    r"(?:happened|going on|been going on)\s+)?since (?:we|I) last (?:spoke|talked|chatted|chat|caught up|saw "
    r"each other|met)|long time no (?:see|talk|chat|speak)|how(?:'s| is) it going|how have you been|how are you"
    r"(?: doing)?|what's up(?: with you)?|guess what|good to (?:hear from|see|talk to) you)"
    # Only as a clause of its own: "guess what I bought" says something.
    r"(?=\s*[,!?.:;…~-]|\s*$)[\s,!?.:;…~-]*",
    re.IGNORECASE,
)
_CLAUSE_RE = re.compile(r"[,;:–—](\s+)(?=\S)")  # the group: the spaces after the mark (see _SENTENCE_END_RE)
_WORD_RE = re.compile(r"\S+")
# A rough token count without the tokenizer: English words are about one token each, long or rare words
# more, punctuation one. The summary is counted exactly once written; this only guides the selection.
_TOKEN_PIECE_RE = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")
# Letters of other scripts: a tokenizer spends about one token on every UNSCRIPTED_CHARS of them.
_OTHER_LETTERS_RE = re.compile(r"[^\W\d_A-Za-z]{2,}")
UNSCRIPTED_CHARS = 2


@dataclasses.dataclass(slots=True)
class Piece:
    """A quotable span of one message."""

    item: int  # index of the message in the transcript
    start: int
    end: int
    text: str
    position: int  # order of the piece in its message
    kind: str = "sentence"  # or "caption"
    cut: bool = False  # the sentence goes on after `end`
    sentence: int = 0  # which sentence of the message it belongs to (clauses of one sentence share it)


# A letter or digit: exactly what str.isalnum() accepts (re's \w is those and the underscore). A piece that opens
# with one (most) is not searched.
_ALNUM_RE = re.compile(r"[^\W_]")
_LONG_WORD_RE = re.compile(r"[A-Za-z]{9,}")
LONGER_WORD_LETTERS = 15  # a word this long costs a token more again


# _TOKEN_PIECE_RE's three kinds on ASCII text, each kept (as one byte) while every other byte becomes a space: the
# letters' runs and the digits' runs are the splits of their copies, and each other mark that is no space (\s on
# ASCII text: these six and the four separators \x1c-\x1f) a byte of its own.
_ASCII_SPACE_BYTES = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
_LETTER_BYTES = bytes(97 if chr(byte).isascii() and chr(byte).isalpha() else 32 for byte in range(256))
_DIGIT_BYTES = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))
_MARK_BYTES = bytes(32 if chr(byte).isalnum() or byte in _ASCII_SPACE_BYTES else 46 for byte in range(256))
LONG_WORD_LETTERS = 9  # _LONG_WORD_RE's shortest run: a word this long costs a token more


def estimate_tokens(text: str) -> int:
    """About one token per word, number or mark; long words more."""
    if text.isascii():
        # What the expressions below count, counted by translations and splits (no match object per token).
        data = text.encode("ascii")
        letters = data.translate(_LETTER_BYTES).split()
        estimate = len(letters) + len(data.translate(_DIGIT_BYTES).split()) + data.translate(_MARK_BYTES).count(46)
        for run in letters:
            if len(run) >= LONG_WORD_LETTERS:
                estimate += 2 if len(run) >= LONGER_WORD_LETTERS else 1
        return estimate
    # Each run of 9 letters or more is one long word, and those of 15 or more are longer still: one search finds both.
    long_words = _LONG_WORD_RE.findall(text)
    longer = sum(1 for word in long_words if len(word) >= LONGER_WORD_LETTERS) if long_words else 0
    estimate = len(_TOKEN_PIECE_RE.findall(text)) + len(long_words) + longer
    if not text.isascii():
        # _TOKEN_PIECE_RE counted each letter of another script as a token: a run costs about a token per
        # UNSCRIPTED_CHARS letters instead.
        estimate -= sum(len(run) - -(-len(run) // UNSCRIPTED_CHARS) for run in _OTHER_LETTERS_RE.findall(text))
    return estimate


def _words(text: str, start: int, end: int) -> int:
    """Words between `start` and `end`, counted by the spaces between them (no regex: it runs on every piece)."""
    return text.count(" ", start, end) + 1 if end > start else 0


# Tried in this order (see _trimmed). A pleasantry after an opener ("Hey! Long time no see") is never trimmed: the
# opener's match moves the span's start off the text's start, where no pattern's ^ can match any more, so the first
# pattern that matches is the only one that trims.
_OPENING_PATTERNS = (_BULLET_RE, _PLEASANTRY_RE, _OPENER_RE)


def _both_cases(letters: str) -> frozenset[str]:
    return frozenset(letters.lower() + letters.upper())


# What a text opening with an ASCII character must open with for each of _OPENING_PATTERNS to match at all: a
# bullet's marks and digits; the first letters of the pleasantries' and of the openers' words, in either case (on
# an ASCII character ignoring case folds in no other letter). Any other opening is passed over without a match;
# a text opening with any other character is matched by every pattern, as before.
_OPENING_FIRSTS = (
    frozenset("-*>#0123456789"),
    _both_cases("smalqthwg"),
    _both_cases("owhylaugbstcnrde"),
)
_OPENINGS = tuple(zip(_OPENING_PATTERNS, _OPENING_FIRSTS, strict=True))


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """The span without leading bullets, greetings and interjections, or surrounding spaces."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    # Each pattern opens with ^, which matches only where `text` itself starts, never at a later `start`: only a
    # span at the very start of the message can lose a bullet or an opener, and every other span skips the searches.
    # For the same reason the first pattern that trims is the last one that could: the rest are not asked.
    if start == 0 and end > 0:
        first = text[0]
        any_first = not first.isascii()
        for pattern, firsts in _OPENINGS:
            if any_first or first in firsts:
                match = pattern.match(text, 0, end)
                if match and match.end() > 0:
                    start = match.end()
                    break
    while end > start and text[end - 1] in " -–—,;:":
        end -= 1
    return start, end


def _spans_of_sentences(text: str) -> list[tuple[int, int]]:
    """The sentences of each line of `text` in turn, as spans (one list: a generator per line cost more than the
    spans)."""
    spans: list[tuple[int, int]] = []
    # Most messages are one line: the whole text is then _LINE_RE's one match (when not empty), without a search.
    lines = [line.span() for line in _LINE_RE.finditer(text)] if "\n" in text else [(0, len(text))] if text else []
    for position, end in lines:
        for match in _SENTENCE_END_RE.finditer(text, position, end):
            gap = match.span(1 if match.start(1) >= 0 else 2)
            spans.append((position, gap[0]))
            position = gap[1]
        if position < end:
            spans.append((position, end))
    return spans


def _limited(text: str, start: int, end: int) -> list[tuple[int, int, bool]]:
    """A long sentence in clauses (see SPLIT_WORDS); a clause longer than MAX_PIECE_WORDS is cut (marked)."""
    if _words(text, start, end) <= SPLIT_WORDS:
        return [(start, end, False)]
    spans, clause_start = [], start
    for match in _CLAUSE_RE.finditer(text, start, end):
        gap_start, gap_end = match.span(1)
        opened = text.count("(", clause_start, gap_start) - text.count(")", clause_start, gap_start)
        if (
            _words(text, clause_start, gap_start) >= MIN_CLAUSE_WORDS
            and _words(text, gap_end, end) >= MIN_CLAUSE_WORDS
            and opened <= 0
        ):
            spans.append((clause_start, gap_start))
            clause_start = gap_end
    spans.append((clause_start, end))
    out = []
    for begin, finish in spans:
        while finish > begin and text[finish - 1] in " ,;:–—-":
            finish -= 1
        # _words counts spaces (fast); runs of spaces make it more than the words, so the cut counts them again.
        found = list(_WORD_RE.finditer(text, begin, finish)) if _words(text, begin, finish) > MAX_PIECE_WORDS else []
        if len(found) > MAX_PIECE_WORDS:
            out.append((begin, found[MAX_PIECE_WORDS - 1].end(), True))
        else:
            out.append((begin, finish, False))
    return out


def _blank(match: re.Match) -> str:
    """The same number of characters, newlines kept: offsets into the message stay valid."""
    return re.sub(r"[^\n]", " ", match.group(0))


def pieces_of(index: int, content: str) -> list[Piece]:
    """The quotable pieces of one message, in order: sentences (outside code blocks) and shared captions."""
    # A code fence starts with ``` and a shared attachment with "[shared a": a message without them (most) is
    # not scanned for either.
    fenced = _FENCE_MARK in content
    shared = _SHARED_MARK in content
    masked = _FENCE_RE.sub(_blank, content) if fenced else content
    masked = _SHARED_RE.sub(_blank, masked) if shared else masked
    pieces: list[Piece] = []
    sentence = 0
    for begin, finish in _spans_of_sentences(masked):
        begin, finish = _trimmed(masked, begin, finish)
        if finish - begin < MIN_PIECE_CHARS:
            continue
        sentence += 1
        if masked.count(" ", begin, finish) < SPLIT_WORDS:  # _limited's one span, without its call (most sentences)
            text = content[begin:finish]
            if text[0].isalnum() or _ALNUM_RE.search(text):
                pieces.append(Piece(index, begin, finish, text, len(pieces), sentence=sentence))
            continue
        for start, end, cut in _limited(masked, begin, finish):
            text = content[start:end]
            if text[:1].isalnum() or _ALNUM_RE.search(text):
                pieces.append(Piece(index, start, end, text, len(pieces), cut=cut, sentence=sentence))
    for match in _CAPTION_RE.finditer(content) if shared else ():
        if match.group(1).strip():
            start, end = match.span(1)
            pieces.append(Piece(index, start, end, content[start:end], len(pieces), kind="caption"))
    return pieces


def content_words(text: str) -> frozenset[str]:
    return frozenset(lexicon.content_words(text))
