"""Text hidden in an encoding a model reads without being asked: hex, base64, URL escapes, HTML entities,
string escapes (\\x, \\u), leet.

A model decodes "49676e6f726520616c6c…", "SWdub3JlIGFsbC…", "ignore%20all%20…",
"&#105;&#103;…" or "1gn0r3 4ll" on sight, so an instruction written that way
still reaches it, while patterns and the learned model see only digits,
letters and signs. `views` returns the decoded text: of every long enough
run that decodes to readable text, and of the whole text when it holds
several escapes, entities or digits standing for letters inside words; the
checks read each view as they read the message. Ordinary text costs one
scan of its batch (`GATE_SCAN`).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import html
import re
from collections.abc import Iterable, Sequence
from urllib.parse import unquote

import re2

from compaction.safety.first_pass import byte_spans, scan

MIN_RUN = 16  # characters of a run worth decoding: shorter ones are ids and hashes, not sentences
READABLE_SHARE = 0.85  # of the decoded characters, at least this share printable, and a space among them
_RUN_RE = re.compile(rf"(?:[0-9A-Fa-f]{{2}}[ :]?){{{MIN_RUN // 2},}}|[A-Za-z0-9+/_-]{{{MIN_RUN},}}={{0,2}}")
# The same expression in RE2, for ASCII text: its classes are ASCII and it has no look-around, so RE2's leftmost-first
# matches are Python's, found in one pass instead of a retry of the long run at every letter of a word. Run over the
# text's bytes (an ASCII character is one byte), where the binding maps no offsets back to characters.
_RUN_RE2 = re2.compile(_RUN_RE.pattern.encode("ascii"))
MIN_SIGNS = 3  # URL escapes, entities or leet words a text needs before it is read decoded
_ESCAPE_RE = re.compile(r"%[0-9A-Fa-f]{2}")
_ENTITY_RE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
# A digit or sign standing for a letter between two letters of a word ("1gn0r3", "pr3v10u5", "$y$tem" aside).
_LEET_WORD_RE = re.compile(r"[^\W\d_][0-9@$|!]+[^\W\d_]")
_BYTE_ESCAPES_RE = re.compile(r"(?:\\x[0-9A-Fa-f]{2})+")
_CHAR_ESCAPE_RE = re.compile(r"\\u([0-9A-Fa-f]{4})")
_LEET = str.maketrans("01345789@$!|", "oieastbgasil")
# Whatever could make a view, in one linear RE2 scan of a batch: most texts have none, and stop there. Neither it
# nor LEET_SCAN matches a newline, so a batch may ask each text of a chunk they match in (`Joined.within_many`).
GATE_SCAN = scan(
    rf"[A-Za-z0-9+/_-]{{{MIN_RUN}}}|(?:[0-9A-Fa-f]{{2}}[ :]){{{MIN_RUN // 2}}}|%[0-9A-Fa-f]{{2}}|&#?[A-Za-z0-9]+;"
    r"|[A-Za-z][0-9@$|!][A-Za-z]|\\[xu][0-9A-Fa-f]{2}"
)
# Every text holding a run (`_RUN_RE`) that could decode to readable text, and more, in one scan of a batch: text
# read as readable has a space, and a space is the byte 0x20 in UTF-8 whatever surrounds it. Such a byte is the pair
# "20" of a hex run, and in base64 (read in groups of four from the run's start, "-" as "+" and "_" as "/", which
# are in no pair below) the group's first two characters "I" and one of A-P, its second and third one of "CSiy" and
# one of A-D, or its third one of "AEIMQUYcgkosw048" and its fourth "g"; a text's fold may read a run in lower case,
# so the last pair is asked in either case. The pair lies in a run's characters, at least MIN_RUN of them.
_SPACE_PAIRS = r"(?:20|I[A-P]|[CSiy][A-D]|[AEIMQUYCGKOSWcgkosw048][gG])"
_BASE64_CHAR, _HEX_RUN_CHAR = "[A-Za-z0-9+/_-]", "[0-9A-Fa-f :]"
DECODABLE_SCAN = scan(
    "|".join(
        f"{chars}{{{before}}}{pair}{chars}{{{MIN_RUN - 2 - before}}}"
        for chars, pair in ((_BASE64_CHAR, _SPACE_PAIRS), (_HEX_RUN_CHAR, "20"))
        for before in range(MIN_RUN - 1)
    )
)
# Every text in which _LEET_WORD_RE finds a word, and more (any character beyond ASCII read as a letter), in one scan
# of a batch: most texts with digits have none of them between two letters, and skip that search.
LEET_SCAN = scan(r"(?:[A-Za-z]|[^\x00-\x7f])[0-9@$|!]+(?:[A-Za-z]|[^\x00-\x7f])")


def _readable(data: bytes) -> str | None:
    text = data.decode("utf-8", errors="ignore")
    if " " not in text or not text:
        return None
    printable = sum(1 for c in text if c.isprintable())
    return text if printable >= READABLE_SHARE * len(text) else None


@functools.lru_cache(maxsize=4_096)  # the same paths, ids and hashes come back in message after message
def _decoded(run: str) -> str | None:
    compact = run.replace(" ", "").replace(":", "")
    if len(compact) % 2 == 0 and all(c in "0123456789abcdefABCDEF" for c in compact):
        try:
            return _readable(bytes.fromhex(compact))
        except ValueError:
            return None
    padded = run + "=" * (-len(run) % 4)
    try:
        return _readable(base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True))
    except (binascii.Error, ValueError):
        return None


def _unescaped(text: str) -> str:
    """`text` with its \\xNN runs read as UTF-8 bytes and its \\uNNNN escapes as characters."""
    text = _BYTE_ESCAPES_RE.sub(
        lambda run: bytes.fromhex(run.group(0).replace("\\x", "")).decode("utf-8", errors="replace"), text
    )
    return _CHAR_ESCAPE_RE.sub(lambda escape: chr(int(escape.group(1), 16)), text)


Span = tuple[int, int]


def runs(text: str) -> list[Span]:
    """Where the runs that could be encoded text are in `text` (`_RUN_RE`). Its classes are the same in either case,
    so they are where they are in the text's lower-case spelling too: a batch finds them once for `views` of a text
    and `without_runs` of its fold."""
    if len(text) < MIN_RUN:
        return []
    if text.isascii():
        return byte_spans(_RUN_RE2, text.encode("ascii"))
    return [match.span() for match in _RUN_RE.finditer(text)]


def runs_of(texts: Sequence[str], indices: Iterable[int]) -> dict[int, list[Span]]:
    """`runs` of each of `texts` at `indices`, the ASCII ones found by one scan of them joined by newlines: a run
    holds no newline and the expression reads no context around it, so each text's matches in the joined bytes are
    exactly its own (and a text shorter than a run has none)."""
    found: dict[int, list[Span]] = {}
    ascii_indices: list[int] = []
    for index in indices:
        text = texts[index]
        if len(text) >= MIN_RUN and text.isascii():
            ascii_indices.append(index)
        else:
            found[index] = runs(text)
    if not ascii_indices:
        return found
    starts, position = [], 0
    for index in ascii_indices:
        found[index] = []
        starts.append(position)
        position += len(texts[index]) + 1
    data = "\n".join(texts[index] for index in ascii_indices).encode("ascii")
    for start, end in byte_spans(_RUN_RE2, data):
        owner = bisect.bisect_right(starts, start) - 1
        offset = starts[owner]
        found[ascii_indices[owner]].append((start - offset, end - offset))
    return found


def without_runs(text: str, spans: list[Span] | None = None) -> str:
    """`text` with its encoded runs that decode to readable text (hex, base64, \\x escapes) made a space: what the
    learned model reads, since an encoded run says nothing in its letters (its decoded view is read instead).
    `spans`, when given, are `runs(text)`."""
    if len(text) < MIN_RUN:
        return text
    parts, last = [], 0
    for start, end in runs(text) if spans is None else spans:
        if _decoded(text[start:end].strip()) is not None:
            parts += [text[last:start], " "]
            last = end
    if parts:
        text = "".join(parts) + text[last:]
    return _BYTE_ESCAPES_RE.sub(" ", text) if "\\x" in text else text


def read_and_decoded(text: str, folded: str, spans: list[Span]) -> tuple[str, list[str]]:
    """(`without_runs(folded, spans)`, the readable texts `views` finds in the runs of `text`) in one pass over the
    runs, for a text whose fold changed nothing but the case of ASCII letters (`spans` are `runs(text)`, and where
    they are in `folded` too). A run already in lower case is decoded once for both; hex reads alike in either
    case, base64 does not, so any other run is decoded in each spelling."""
    if len(folded) < MIN_RUN:
        return folded, []
    parts: list[str] = []
    found_views: list[str] = []
    last = 0
    for start, end in spans:
        run = text[start:end].strip()
        view = _decoded(run)
        if view is not None:
            found_views.append(view)
        lowered = folded[start:end].strip()
        if (view if lowered == run else _decoded(lowered)) is not None:
            parts += [folded[last:start], " "]
            last = end
    read = "".join(parts) + folded[last:] if parts else folded
    return (_BYTE_ESCAPES_RE.sub(" ", read) if "\\x" in read else read), found_views


def _blanked(text: str, spans: list[Span]) -> str:
    """`text` with each of `spans` made one space."""
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], " "]
        last = end
    return "".join(parts) + text[last:]


def views(
    text: str, spans: list[Span] | None = None, *, leet: bool = True, decoded_runs: list[str] | None = None
) -> list[str]:
    """The readable texts hidden in `text` (see the module docstring); none for ordinary text. `spans`, when given,
    are `runs(text)`; `leet` False when a batch's LEET_SCAN already found no leet word in it; `decoded_runs`, when
    given, the readable texts of those runs (`read_and_decoded`), so that they are not decoded again."""
    spans = runs(text) if spans is None else spans
    if decoded_runs is not None:
        found_views = list(decoded_runs)
    else:
        found_views = [view for start, end in spans if (view := _decoded(text[start:end].strip())) is not None]
    if "%" in text and len(_ESCAPE_RE.findall(text)) >= MIN_SIGNS:
        found_views.append(unquote(text))
    if "&" in text and len(_ENTITY_RE.findall(text)) >= MIN_SIGNS:
        found_views.append(html.unescape(text))
    if "\\" in text and text.count("\\x") + text.count("\\u") >= MIN_SIGNS:
        found_views.append(_unescaped(text))
    # The digits of a hash, an id or an encoding are no leet: long runs are left out of the count.
    if not found_views and leet and len(_LEET_WORD_RE.findall(_blanked(text, spans))) >= MIN_SIGNS:
        found_views.append(text.translate(_LEET))
    return [view for view in found_views if view != text]
