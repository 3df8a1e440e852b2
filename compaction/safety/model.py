"""A learned second opinion on whether a text addresses a model: hashed character n-grams and a linear model.

The phrase patterns (`injection.py`) are exact where they match and blind
where they were not written: a language without a word table, a paraphrase,
an instruction cut in two turns. This model reads what the patterns cannot
enumerate. Each text is folded (`normalize.fold`: NFKC, hidden characters
removed, look-alike letters made Latin, lower case), technical tokens (ids,
paths, URLs, versions, handles) are left out, a run of digits, of spaces or
of one punctuation mark is read as one, and every character n-gram of
ORDERS (words padded by spaces, so
short n-grams at a word's edge are word features too) is hashed into one of
2**BITS weights. The score of a text is the bias plus the sum of its
n-grams' weights divided by the square root of their count: a linear model
on length-normalised counts, trained by `manage.py injection_train` on the
development part of the injection corpus and shipped as `injection_model.npz`
beside this file.

It is made for batches: the texts of a compaction are folded, joined and
hashed in a handful of numpy operations over one array, so its cost is a few
passes over the characters whatever their number. Because the score is
linear, two neighbouring messages are judged together from their sums and
counts alone (`pair_logits`): an instruction split across two turns is one
text to a model that reads both.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from compaction.safety.normalize import fold

ORDERS = (1, 2, 3, 4, 5)  # character n-gram lengths
BITS = 18  # 2**BITS hashed weights
_PRIME = np.uint32(0x01000193)  # FNV's 32-bit prime: a cheap, well-mixing multiplier
_MIX = {order: np.uint32((0x9E3779B1 * (order + 1)) & 0xFFFFFFFF) for order in ORDERS}
_SEPARATOR = 0  # code point between two texts (an n-gram starting at one is not counted)
_SPACE, _DIGIT, _NEWLINE = ord(" "), ord("0"), ord("\n")
WEIGHTS_FILE = "injection_model.npz"
# A text read with a flagged neighbour pair is flagged when its own logit is at least this share of the way from
# the bias to the threshold: the half of a split instruction, not the ordinary message beside one.
SUSPICIOUS_SHARE = 0.75


@dataclasses.dataclass(frozen=True)
class Model:
    weights: np.ndarray  # float32, 2**BITS
    bias: float
    threshold: float  # a text's logit at or above this is flagged
    pair_threshold: float  # two neighbours' joint logit at or above this flags the suspicious one of them


# A token with a digit, a slash, an underscore, an @ or an inner dot or colon: an id, a path, a URL, a version, a
# handle. What it names is never the intent of the text around it (the references an injection plants are such
# tokens, and so is every line of a developers' chat), so the model does not read it at all. Read as one mark, the
# mark itself was learned: every injection plants a reference, and a line of a developers' chat made of paths,
# flags, tickets and URLs between a few words scored like one.
# Anchored at a token's start (where every match begins anyway), so that no other position of a token is tried.
_TECHNICAL_RE = re.compile(r"(?<!\S)\S*(?:\d|[/_@]|[.:](?=[^\s.:]))\S*")


def prepare(folded: str) -> str:
    """A folded text as the model reads it: technical tokens left out, padded with a space at each end (its first
    and last words' edges)."""
    return f" {_TECHNICAL_RE.sub('', folded)} "


# A technical token left out still counts in the text's length, as this many characters of text that weighs nothing
# at most: a line made of paths, flags and tickets around a few words is about those, and its few words must not
# be read as if they were all it says (a developers' detail-heavy line was otherwise scored as an instruction). The
# cap keeps a long URL or hash from diluting the instruction beside it.
NEUTRAL_CHARS = 16


def neutral_counts(folded: Sequence[str]) -> np.ndarray:
    """Per text, the n-grams its technical tokens stand for (see NEUTRAL_CHARS): added to its count, never to its
    sum. Text by text, as `prepare` reads it; a batch is read by `_read`, which finds the same."""
    counts = np.zeros(len(folded), dtype=np.float64)
    for index, text in enumerate(folded):
        if _TECHNICAL_HINT_RE.search(text):
            counts[index] = sum(min(len(token), NEUTRAL_CHARS) for token in _TECHNICAL_RE.findall(text))
    return counts * len(ORDERS)


_TECHNICAL_HINT_RE = re.compile(r"[\d/_@]|[.:](?=[^\s.:])")  # what every technical token has


# Between two texts: enough separators that no n-gram starting in a text reaches the next one.
_GAP = "\x00" * (max(ORDERS) - 1)
# The code points whose runs are read as one (the space and ASCII punctuation; never the separator, whose run keeps
# texts apart, nor "#", whose run is a Markdown heading's level). Indexed by code point, with one last entry (False)
# that every code point past ASCII reads.
_RUN_MARKS = np.array(
    [chr(point) == " " or (32 < point < 127 and not chr(point).isalnum() and chr(point) != "#") for point in range(129)]
)
_RUN_MARKS[128] = False


def _codes(joined: str) -> np.ndarray:
    """The code points of `joined` as uint32."""
    if joined.isascii():  # one byte a character: four times less to copy than UTF-32
        return np.frombuffer(joined.encode("ascii"), dtype=np.uint8).astype(np.uint32)
    return np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).copy()


def _starts(lengths: Sequence[int]) -> np.ndarray:
    """Where each of texts of these lengths starts once they are joined by _GAP."""
    sizes = np.fromiter(lengths, dtype=np.int64, count=len(lengths))
    starts = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1] + len(_GAP), out=starts[1:])
    return starts


def _points(prepared: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(code points of the texts joined by _GAP, each newline a space and each digit "0"; each text's start)."""
    return _squeezed(_codes(_GAP.join(prepared) + _GAP), _starts([len(text) for text in prepared]))


def _squeezed(points: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`points` (texts joined by _GAP, each starting with a space, at `starts`) with each newline a space, each digit
    "0" and the runs below read as one; and each text's start in the result."""
    return _squeezed_dropping(points, starts)[:2]


def _squeezed_dropping(points: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_squeezed`, and the positions (in `points`) of the characters a run dropped."""
    digits = (points - np.uint32(_DIGIT)) < np.uint32(10)  # unsigned: below "0" wraps to a large number
    points[digits] = _DIGIT
    points[points == _NEWLINE] = _SPACE
    # A run of digits is read as one: how long a number is says nothing of intent (an order number, a ticket, the
    # reference an injection plants), and counting its digits taught the model that long numbers instruct. So is a
    # run of one ASCII punctuation mark or of spaces: a test runner's line of dots, a table's padding, a ruler of
    # dashes (a line of dots in a test log was flagged as an instruction).
    repeated = np.zeros(len(points), dtype=bool)
    repeated[1:] = digits[1:] & digits[:-1]
    marks = _RUN_MARKS[np.minimum(points, np.uint32(len(_RUN_MARKS) - 1))]
    repeated[1:] |= marks[1:] & (points[1:] == points[:-1])
    dropped = np.flatnonzero(repeated)
    if len(dropped):
        kept = ~repeated
        position = np.cumsum(kept) - 1
        points, starts = points[kept], position[starts]  # a text starts with a space: its start is always kept
    return points, starts, dropped


# Python's \s and \d (str.isspace, str.isdecimal) on ASCII, by code point; other code points are asked one by one.
_ASCII_SPACES = np.array([chr(point).isspace() for point in range(128)])
_ASCII_DIGITS = np.array([chr(point).isdecimal() for point in range(128)])
_TECHNICAL_MARKS = np.array([chr(point) in "/_@" for point in range(128)])  # a technical token's mark on its own
_INNER_MARKS = np.array([chr(point) in ".:" for point in range(128)])  # one when a character other than these follows
# The three at once for ASCII text: 1 a space, 2 a digit or a mark of its own, 4 a dot or a colon.
_ASCII_CLASSES = (_ASCII_SPACES * 1 + (_ASCII_DIGITS | _TECHNICAL_MARKS) * 2 + _INNER_MARKS * 4).astype(np.uint8)


def _classified(points: np.ndarray, ascii_table: np.ndarray, test) -> np.ndarray:
    """`ascii_table[point]` for ASCII points, `test(chr(point))` for the others (each distinct one asked once)."""
    high = points >= 128
    found = ascii_table[np.minimum(points, 127)] & ~high
    if high.any():
        distinct, inverse = np.unique(points[high], return_inverse=True)
        found[high] = np.array([test(chr(point)) for point in distinct.tolist()], dtype=bool)[inverse]
    return found


# For an ASCII batch, by byte: the character `_squeezed` reads (each digit "0", a newline a space), and whether a run
# of it is read as one (`_RUN_MARKS`).
_SQUEEZED_BYTES = bytes(
    _DIGIT if _DIGIT <= byte < _DIGIT + 10 else _SPACE if byte == _NEWLINE else byte for byte in range(256)
)
_RUN_MARK_BYTES = np.append(_RUN_MARKS[:128], np.zeros(128, dtype=bool))


def _bool_table(flags: np.ndarray) -> bytes:
    """A translation table of bytes to a bool's byte (1 where `flags`, indexed by byte, is true; 0 past its end):
    a look-up of a whole batch in one `bytes.translate`, without the index array numpy makes for a look-up."""
    return bytes(int(byte < len(flags) and bool(flags[byte])) for byte in range(256))


_RUN_MARK_TABLE = _bool_table(_RUN_MARK_BYTES)
_SPACE_TABLE, _MARKED_TABLE, _INNER_TABLE = (_bool_table(_ASCII_CLASSES & bit) for bit in (1, 2, 4))


def _squeezed_ascii(points: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_squeezed` of an ASCII batch whose bytes `_SQUEEZED_BYTES` already made what it reads (uint8, so that the
    look-ups and comparisons move a quarter of the memory): the same points (uint32) and starts, and the positions
    (in `points`) of the characters a run dropped."""
    digits = points == _DIGIT  # a digit is "0" now, and "0" is the only character that became "0"
    repeated = np.zeros(len(points), dtype=bool)
    repeated[1:] = digits[1:] & digits[:-1]
    marks = np.frombuffer(points.tobytes().translate(_RUN_MARK_TABLE), dtype=bool)
    repeated[1:] |= marks[1:] & (points[1:] == points[:-1])
    dropped = np.flatnonzero(repeated)
    if len(dropped):
        points, starts = points[~repeated], starts - np.searchsorted(dropped, starts)
    return points.astype(np.uint32), starts, dropped


@dataclasses.dataclass(frozen=True)
class _Layout:
    """Where the characters of a batch went in `_read` (the texts padded and joined by _GAP): enough to find
    a span of a text among the points and the technical tokens it holds."""

    left_out: np.ndarray  # positions of the technical tokens' characters, rising
    squeezed: np.ndarray  # positions, once those are left out, of the characters a run dropped, rising
    token_firsts: np.ndarray  # each technical token's first position, rising
    token_neutral: np.ndarray  # the running total of the tokens' NEUTRAL_CHARS-capped lengths, from 0 (one more)

    def kept_before(self, positions: np.ndarray) -> np.ndarray:
        """How many characters before each of `positions` are among the points."""
        kept = positions - np.searchsorted(self.left_out, positions)
        return kept - np.searchsorted(self.squeezed, kept)

    def neutral_between(self, after: np.ndarray, before: np.ndarray) -> np.ndarray:
        """The capped lengths of the technical tokens that start after `after` and before `before` (spaces)."""
        running = self.token_neutral
        return running[np.searchsorted(self.token_firsts, before)] - running[np.searchsorted(self.token_firsts, after)]


def _read(folded: Sequence[str], *, ascii_bytes: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """See `_read_laid_out`."""
    return _read_laid_out(folded, ascii_bytes=ascii_bytes)[:3]


def _read_laid_out(
    folded: Sequence[str], *, ascii_bytes: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, _Layout]:
    """(`_points` of the texts as `prepare` makes them, their starts, `neutral_counts`), for the whole batch in a few
    array operations: `prepare` and `neutral_counts` read each text with a regular expression, several times the
    cost of everything else the model does. Exactly the tokens `_TECHNICAL_RE` finds are left out: runs of
    characters that are not spaces (str.isspace, as the expression reads \\s) holding a digit (str.isdecimal, its
    \\d), a slash, an underscore, an @, or a dot or colon followed by another character of the token than a dot or
    a colon."""
    padded = [f" {text} " for text in folded]
    joined = _GAP.join(padded) + _GAP
    starts = _starts([len(text) for text in padded])
    ascii_batch = ascii_bytes and joined.isascii()
    if ascii_batch:  # bytes all along, each class a translation of them
        data = joined.encode("ascii")
        space = np.frombuffer(data.translate(_SPACE_TABLE), dtype=bool)
        marked = np.frombuffer(bytearray(data.translate(_MARKED_TABLE)), dtype=bool)  # a copy: written to below
        inner = np.frombuffer(data.translate(_INNER_TABLE), dtype=bool)
        points = np.frombuffer(data.translate(_SQUEEZED_BYTES), dtype=np.uint8)
    elif joined.isascii():
        points = _codes(joined)
        classes = _ASCII_CLASSES[points]
        space, marked, inner = (classes & 1).astype(bool), (classes & 2).astype(bool), (classes & 4).astype(bool)
    else:
        points = _codes(joined)
        space = _classified(points, _ASCII_SPACES, str.isspace)
        small = np.minimum(points, 127)
        inner = _INNER_MARKS[small] & (points < 128)
        marked = _classified(points, _ASCII_DIGITS, str.isdecimal) | (_TECHNICAL_MARKS[small] & (points < 128))
    marked[:-1] |= inner[:-1] & ~space[1:] & ~inner[1:]  # the joined text ends with _GAP: nothing is lost at its end
    opens = ~space
    opens[1:] &= space[:-1]  # the first character of a token (the joined text starts with a space)
    first = np.flatnonzero(opens)  # there is one at least: _GAP is no space
    # A token is technical when a character of it is marked (the spaces up to the next token never are).
    technical = np.logical_or.reduceat(marked, first)
    neutral = np.zeros(len(folded), dtype=np.float64)
    left_out = token_firsts = np.zeros(0, dtype=np.int64)
    capped = np.zeros(0, dtype=np.int64)
    if technical.any():
        closes = ~space
        closes[:-1] &= space[1:]  # the last character of a token (the joined text ends with one, _GAP)
        last = np.flatnonzero(closes)
        lengths = last - first + 1
        token_firsts = first[technical]
        capped = np.minimum(lengths[technical], NEUTRAL_CHARS)
        owners = np.searchsorted(starts, token_firsts, side="right") - 1
        neutral = np.bincount(owners, weights=capped, minlength=len(folded)).astype(np.float64)
        # The characters of the technical tokens, from each one's first to its last: each token's answer repeated
        # from its first character to the next token's, the spaces after it then taken off (a token is a run of
        # characters that are not spaces, and only spaces lie between one and the next). One copy of the answers,
        # where a running sum over every character cost several times as much.
        kept = np.zeros(len(space), dtype=bool)
        kept[first[0] :] = np.repeat(technical, np.diff(first, append=len(space)))
        kept &= ~space
        # A text starts with a space: its start is always kept.
        left_out = np.flatnonzero(kept)
        np.logical_not(kept, out=kept)
        if ascii_batch:
            points, starts = points[kept], starts - np.searchsorted(left_out, starts)
        else:
            points, starts = points[kept], (np.cumsum(kept, dtype=np.int32) - 1)[starts].astype(np.int64)
    squeeze = _squeezed_ascii if ascii_batch else _squeezed_dropping
    points, starts, squeezed = squeeze(points, starts)
    running = np.zeros(len(capped) + 1, dtype=np.int64)
    np.cumsum(capped, out=running[1:])
    layout = _Layout(left_out=left_out, squeezed=squeezed, token_firsts=token_firsts, token_neutral=running)
    return points, starts, neutral * len(ORDERS), layout


def position_buckets(points: np.ndarray):
    """For each n-gram order, the hashed bucket of the n-gram starting at each position (the last n - 1
    positions have none), as array indices (intp: a gather with them converts nothing)."""
    hashed = np.zeros(len(points), dtype=np.uint32)
    shift = np.uint32(32 - BITS)
    # Each step adds a point and one: added once to every point here (uint32 arithmetic wraps, so the sum is the
    # same in either order).
    points = points.astype(np.uint32) + np.uint32(1)
    mixed = np.empty(len(points), dtype=np.uint32)
    for order in range(1, max(ORDERS) + 1):
        hashed = hashed[: len(points) - order + 1]
        np.multiply(hashed, _PRIME, out=hashed)
        np.add(hashed, points[order - 1 :], out=hashed)
        if order in ORDERS:
            part = mixed[: len(hashed)]
            np.multiply(hashed, _MIX[order], out=part)
            buckets = np.empty(len(hashed), dtype=np.intp)
            np.right_shift(part, shift, out=buckets, casting="unsafe")  # below 2**BITS: every value fits
            yield order, buckets


def entries(folded: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(text index, bucket) of every n-gram the model counts, for training: what `sums_and_counts` adds up (its
    counts are these n-grams' and `neutral_counts`)."""
    points, starts, _ = _read(folded)
    rows, buckets = [], []
    for _, found in position_buckets(points):
        keep = np.flatnonzero(points[: len(found)] != _SEPARATOR)
        rows.append(np.searchsorted(starts, keep, side="right") - 1)
        buckets.append(found[keep].astype(np.int64))
    return np.concatenate(rows), np.concatenate(buckets)


def sums_and_counts(model: Model, folded: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per text (already folded): the sum of its n-grams' weights and how many n-grams it has. An n-gram is
    counted for the text it starts in; those that run into the gap after it read the text's end."""
    if not folded:
        return np.zeros(0), np.zeros(0)
    points, starts, neutral = _read(folded)
    return _sums(_totals(model, points), points, starts, neutral)


def _totals(model: Model, points: np.ndarray) -> np.ndarray:
    """The weights of the n-grams starting at each position, added up order by order (float32), gaps zero."""
    total = np.zeros(len(points), dtype=np.float32)
    for _, buckets in position_buckets(points):
        total[: len(buckets)] += model.weights[buckets]
    total[points == _SEPARATOR] = 0.0  # n-grams starting in a gap belong to no text
    return total


def _sums(
    total: np.ndarray, points: np.ndarray, starts: np.ndarray, neutral: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    sums = np.add.reduceat(total.astype(np.float64), starts)
    ends = np.append(starts[1:], len(points))  # each text's n-grams start between its start and the next one's
    counts = (ends - starts - len(_GAP)).astype(np.float64) * len(ORDERS) + neutral
    return sums, counts


# A message is also read piece by piece (its lines and sentences, each at least PIECE_MIN_CHARS long): an
# instruction after a long ordinary preface, or inside a document or a tool's output, is diluted in the whole.
PIECE_MIN_CHARS = 24
# A piece ends at a line break, at the spaces after a sentence's end mark, and right after a CJK end mark. Since each
# piece is stripped, it is enough to put a line break where the spaces after an end mark (or the empty span after a
# CJK one) are, and split at line breaks: the same stripped pieces as a split on
# r"\n+|(?<=[.!?;。！？])\s+|(?<=[。！？])". An expression that begins with its end mark lets the scan jump from
# one candidate character to the next instead of trying two look-behinds at every character.
_PIECE_END_RE = re.compile(r"([.!?;。！？])(?:\s+|(?<=[。！？]))")


def pieces(folded: str) -> list[str]:
    """The lines and sentences of a folded text worth reading alone (none when it is a single one)."""
    if len(folded) < 2 * PIECE_MIN_CHARS:
        return []
    # The split keeps each end mark (the expression's group) between the texts around it: each text with the mark
    # after it is what a substitution of mark and spaces by the mark and a line break would leave before the break,
    # without the substitution's template expanded at every mark.
    parts = _PIECE_END_RE.split(folded)
    parts.append("")
    found = [
        piece.strip() for index in range(0, len(parts), 2) for piece in (parts[index] + parts[index + 1]).split("\n")
    ]
    found = [piece for piece in found if len(piece) >= PIECE_MIN_CHARS]
    return found if len(found) > 1 or (found and found[0] != folded.strip()) else []


def own_logits(model: Model, folded: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(each text's logit: the higher of the whole's and of its pieces', the wholes' sums, their counts)."""
    if not folded:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    found = _pieces_found(folded)
    points, starts, neutral, layout = _read_laid_out(folded)
    total = _totals(model, points)
    sums, counts = _sums(total, points, starts, neutral)
    own = logits(model, sums, counts)
    if len(found.owners):
        piece_sums, piece_counts = _piece_sums(model, folded, found, total, points, layout)
        np.maximum.at(own, found.owners, logits(model, piece_sums, piece_counts))
    return own, sums, counts


# The end marks of a sentence: ASCII ones end a piece when a space follows, CJK ones wherever they are.
_ASCII_END_MARKS = tuple(ord(mark) for mark in ".!?;")
_CJK_END_MARKS = tuple(ord(mark) for mark in "。！？")
_EDGE_POINTS = (ord(" "), ord("\n"))  # the code points of _SPAN_EDGES
_END_MARK_TABLE = _bool_table(np.array([point in _ASCII_END_MARKS for point in range(128)]))


class _Pieces(NamedTuple):
    """The pieces of a batch (`piece_spans`), and the batch joined by line breaks that they were found in."""

    owners: np.ndarray  # each piece's text
    starts: np.ndarray  # where it starts in its text
    ends: np.ndarray  # and ends
    points: np.ndarray  # the code points of the texts joined by line breaks
    offsets: np.ndarray  # where each text starts among them
    lengths: np.ndarray  # each text's length


def piece_spans(folded: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(owner text, start, end) of every piece of `folded` (each text's `pieces`, in order, as offsets in its text),
    for the whole batch in a few array operations over the texts joined by line breaks, instead of a split of each
    text: a piece is a stretch between two ends (a line break; the spaces after an ASCII end mark; a CJK end mark),
    without the spaces at its edges (str.isspace, as the split's \\s and str.strip read them), at least
    PIECE_MIN_CHARS long, of a text at least twice that long; a text's only piece is none when it is the whole
    text. A line break between two texts is an end like any other, so no piece runs from one text into the next."""
    found = _pieces_found(folded)
    return found.owners, found.starts, found.ends


def _pieces_found(folded: Sequence[str]) -> _Pieces:
    lengths = np.fromiter((len(text) for text in folded), dtype=np.int64, count=len(folded))
    offsets = np.zeros(len(folded), dtype=np.int64)
    np.cumsum(lengths[:-1] + 1, out=offsets[1:])
    joined = "\n".join(folded)
    if joined.isascii():  # bytes, each class a translation of them (no CJK mark among them)
        data = joined.encode("ascii")
        points = np.frombuffer(data, dtype=np.uint8)
        space = np.frombuffer(data.translate(_SPACE_TABLE), dtype=bool)
        cut = np.zeros(len(points), dtype=bool)
        cut[:-1] = np.frombuffer(data.translate(_END_MARK_TABLE), dtype=bool)[:-1] & space[1:]
    else:
        points = _codes(joined)
        space = _classified(points, _ASCII_SPACES, str.isspace)
        cut = np.isin(points, _CJK_END_MARKS)
        cut[:-1] |= np.isin(points[:-1], _ASCII_END_MARKS) & space[1:]
    # Each end as (where the stretch before it stops, where the next one starts), sorted: an end mark stays with
    # the stretch it ends, a line break belongs to neither.
    breaks = np.concatenate([(np.flatnonzero(cut) + 1) * 2, np.flatnonzero(points == _NEWLINE) * 2 + 1])
    breaks.sort()
    stops = np.append(breaks >> 1, len(points))
    opens = np.zeros(len(stops), dtype=np.int64)
    opens[1:] = (breaks >> 1) + (breaks & 1)
    letters = np.flatnonzero(~space)
    if not len(letters):
        empty = np.zeros(0, dtype=np.int64)
        return _Pieces(empty, empty, empty, points, offsets, lengths)
    firsts = np.searchsorted(letters, opens)
    lasts = np.searchsorted(letters, stops) - 1
    held = firsts <= lasts  # the stretch holds a character other than a space
    firsts, lasts = letters[np.minimum(firsts[held], len(letters) - 1)], letters[lasts[held]]
    ends = lasts + 1
    long = ends - firsts >= PIECE_MIN_CHARS
    firsts, ends = firsts[long], ends[long]
    owners = np.searchsorted(offsets, firsts, side="right") - 1
    keep = lengths[owners] >= 2 * PIECE_MIN_CHARS
    firsts, ends, owners = firsts[keep], ends[keep], owners[keep]
    # A text's only piece is none when it is the whole text, spaces at its edges aside.
    alone = np.bincount(owners, minlength=len(folded))[owners] == 1
    if alone.any():
        text_first = letters[np.searchsorted(letters, offsets[owners[alone]])]
        text_end = letters[np.searchsorted(letters, offsets[owners[alone]] + lengths[owners[alone]]) - 1] + 1
        whole = np.zeros(len(owners), dtype=bool)
        whole[alone] = (firsts[alone] == text_first) & (ends[alone] == text_end)
        firsts, ends, owners = firsts[~whole], ends[~whole], owners[~whole]
    return _Pieces(owners, firsts - offsets[owners], ends - offsets[owners], points, offsets, lengths)


# A piece ends this many positions before its n-grams stop reading only its own characters (the longest order).
_TAIL = max(ORDERS) - 1
_SPAN_EDGES = (" ", "\n")  # what must be around a piece for its points to be those of its text


def _piece_sums(
    model: Model,
    folded: Sequence[str],
    found: _Pieces,
    total: np.ndarray,
    points: np.ndarray,
    layout: _Layout,
) -> tuple[np.ndarray, np.ndarray]:
    """`sums_and_counts` of the pieces (`found`: those of `folded`), most of them read off their texts'
    (`total` and `points` of `folded`, `layout` of their batch): a piece with a space or a line break (or its text's
    edge) on each side is read by `_read` as the same points as the span of its text between those two characters,
    a space each, so the n-grams it has there are its text's, and only those that run into the gap after it are
    hashed again. Every position's total and every sum is then added up in the same order and float type as
    `sums_and_counts` adds them: the same figures, bit for bit. The other pieces (and those of a text holding the
    gap's character) are read as texts of their own."""
    owners, starts, ends, joined, offsets, lengths = found
    # Where each text's padding space is in the texts padded and joined by _GAP (`_read`).
    padded = np.zeros(len(folded), dtype=np.int64)
    np.cumsum(lengths[:-1] + 2 + len(_GAP), out=padded[1:])
    edge_before = np.isin(joined[np.maximum(offsets[owners] + starts - 1, 0)], _EDGE_POINTS) | (starts == 0)
    edge_after = np.isin(joined[np.minimum(offsets[owners] + ends, len(joined) - 1)], _EDGE_POINTS)
    derived = edge_before & (edge_after | (ends == lengths[owners]))
    gaps = np.flatnonzero(joined == _SEPARATOR)  # _GAP's character inside a text
    if len(gaps):
        derived &= np.searchsorted(gaps, offsets[owners] + lengths[owners]) == np.searchsorted(gaps, offsets[owners])
    sums = np.zeros(len(owners), dtype=np.float64)
    counts = np.zeros(len(owners), dtype=np.float64)
    if derived.any():
        base = padded[owners[derived]]
        before, after = base + starts[derived], base + 1 + ends[derived]
        sums[derived], counts[derived] = _spans_summed(model, total, points, layout, before, after)
    if not derived.all():
        alone = np.flatnonzero(~derived)
        extra = [folded[owners[i]][starts[i] : ends[i]] for i in alone.tolist()]
        sums[alone], counts[alone] = sums_and_counts(model, extra)
    return sums, counts


def _spans_summed(
    model: Model, total: np.ndarray, points: np.ndarray, layout: _Layout, before: np.ndarray, after: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(sums, counts) of the texts between the spaces at `before` and `after` (positions in the joined padded
    texts), each read as `sums_and_counts` reads a text: its points are those from the one kept at or before
    `before` to the one kept at or before `after`."""
    first = layout.kept_before(before + 1) - 1
    lengths = layout.kept_before(after + 1) - first
    neutral = layout.neutral_between(before, after).astype(np.float64) * len(ORDERS)
    gap = len(_GAP)
    sizes = lengths + gap
    out_starts = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=out_starts[1:])
    out = np.zeros(int(sizes.sum()), dtype=np.float32)  # the gaps' totals stay zero
    # Positions whose every n-gram is inside the span: their totals are the text's.
    copied = np.maximum(lengths - _TAIL, 0)
    if copied.sum():
        offsets = np.arange(int(copied.sum()), dtype=np.int64) - np.repeat(np.cumsum(copied) - copied, copied)
        out[np.repeat(out_starts, copied) + offsets] = total[np.repeat(first, copied) + offsets]
    # The last positions read the gap after the span: hashed again, their orders added in the same order.
    tail = lengths - copied
    offsets = (
        np.arange(int(tail.sum()), dtype=np.int64) - np.repeat(np.cumsum(tail) - tail, tail) + np.repeat(copied, tail)
    )
    where = np.repeat(first, tail) + offsets  # positions in `points`
    ends = np.repeat(first + lengths, tail)
    read = where[:, None] + np.arange(max(ORDERS), dtype=np.int64)[None, :]
    values = np.where(read < ends[:, None], points[np.minimum(read, len(points) - 1)], _SEPARATOR).astype(np.uint32)
    values += np.uint32(1)
    hashed = np.zeros(len(where), dtype=np.uint32)
    tails = np.zeros(len(where), dtype=np.float32)
    shift = np.uint32(32 - BITS)
    for order in range(1, max(ORDERS) + 1):
        hashed = hashed * _PRIME + values[:, order - 1]
        if order in ORDERS:
            buckets = ((hashed * _MIX[order]) >> shift).astype(np.intp)
            tails += model.weights[buckets]
    out[np.repeat(out_starts, tail) + offsets] = tails
    sums = np.add.reduceat(out.astype(np.float64), out_starts)
    counts = lengths.astype(np.float64) * len(ORDERS) + neutral
    return sums, counts


def logits(model: Model, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    return model.bias + sums / np.sqrt(np.maximum(counts, 1.0))


def pair_logits(model: Model, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The logit of each text read together with the next one (one fewer than the texts)."""
    if len(sums) < 2:
        return np.zeros(0)
    return logits(model, sums[:-1] + sums[1:], counts[:-1] + counts[1:])


def flags(model: Model, texts: Sequence[str], *, neighbours: bool = True) -> np.ndarray:
    return flags_folded(model, [fold(text) for text in texts], neighbours=neighbours)


def flags_folded(model: Model, folded: Sequence[str], *, neighbours: bool = True) -> np.ndarray:
    """Which of `texts` (consecutive messages when `neighbours`) the model flags.

    A text is flagged on its own logit, or, when it and a neighbour read together pass `pair_threshold`, if its
    own logit is at least SUSPICIOUS_SHARE of the way from the bias to the threshold: the half of a split
    instruction that carries it, not the innocent message beside a flagged one.
    """
    if not folded:
        return np.zeros(0, dtype=bool)
    own, sums, counts = own_logits(model, folded)
    flagged = own >= model.threshold
    if neighbours and len(folded) > 1:
        joint = pair_logits(model, sums, counts) >= model.pair_threshold
        suspicious = own >= model.bias + SUSPICIOUS_SHARE * (model.threshold - model.bias)
        flagged[:-1] |= joint & suspicious[:-1]
        flagged[1:] |= joint & suspicious[1:]
    return flagged


def weights_path() -> Path:
    """The weights file the package ships (beside this module)."""
    return Path(__file__).with_name(WEIGHTS_FILE)


def load(path: Path | None = None) -> Model:
    with np.load(path or weights_path()) as data:
        weights = data["weights"].astype(np.float32)
        bias, threshold, pair = (float(value) for value in data["scalars"])
    if weights.shape != (1 << BITS,):
        raise ValueError(f"{WEIGHTS_FILE}: {weights.shape[0]} weights, expected {1 << BITS}")
    return Model(weights=weights, bias=bias, threshold=threshold, pair_threshold=pair)


def save(model: Model, path) -> None:
    scalars = np.array([model.bias, model.threshold, model.pair_threshold], dtype=np.float64)
    np.savez_compressed(path, weights=model.weights.astype(np.float16), scalars=scalars)


@functools.cache
def shipped() -> Model | None:
    """The model shipped with the package, or None when no weights were trained yet."""
    if not weights_path().is_file():
        return None
    return load()
