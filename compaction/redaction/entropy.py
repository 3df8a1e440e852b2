"""Layer 5 (last): random-looking tokens.

A token is "random" when it mixes character classes the way generated keys
do and reads like no language: high Shannon entropy, few vowels among its
letters (words and CamelCase identifiers have about 40 %, base62 about 19 %).
Hex strings are never random on their own here: commit hashes, digests and
UUIDs are what a summary must keep (a hex secret is found by the word before
it, in the keyword layer).

Near a secret-ish word (same line, up to 80 characters before) a token of 16
or more characters is enough; anywhere else it must be 24 or more and mix
upper case, lower case and digits, and not sit inside a URL.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter

from compaction.redaction.public import decodes_to_text, labelled_public
from compaction.redaction.spans import Scan, Spans
from compaction.redaction.wordness import wordlike

CONTEXT_CHARS = 80  # a secret-ish word counts on the token's line up to this far before it
MIN_TOKEN_CHARS = 16  # next to such a word, a token this long may be a key (shorter ones are ids and codes)
MIN_ALONE_CHARS = 24  # anywhere else it must be this long, and mix upper case, lower case and digits
MIN_OF_EACH_CASE = 2  # without digits, a key has at least this many of each case (one capital is a name)
VOWEL_CHECK_LETTERS = 8  # from this many letters on, the share of vowels tells words from keys ...
MAX_VOWEL_SHARE = 0.3  # ... words and CamelCase identifiers have about 40 %, base62 about 19 %
MAX_WORD_SHARE = 0.6  # a token with this share of its letters in word-like pieces is a name made of words
# A token shorter than a lone key with fewer digits or letters than this is a word with a number (utf8, v12).
MIN_MIXED = 2
ENTROPY_SHARE = 0.72  # the least Shannon entropy, as a share of the most a token of its length can have
BASE62 = 62  # letters and digits: the most distinct characters a token's body can have
NOT_SECRET_CHARS = 24  # an algorithm or an id's name is looked for this far before a token
_HEX_RE = re.compile(r"[0-9a-fA-F]+")
# Two to four letters, one of them no hex digit, then 32 or more hex digits: a provider's prefix on a 128-bit key.
_PREFIXED_HEX = re.compile(r"(?=[a-zA-Z]{0,3}[g-zG-Z])[a-zA-Z]{2,4}[0-9a-f]{32,}")
_VOWELS = frozenset("aeiouAEIOU")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")
_NOT_LETTERS = re.compile(r"[^A-Za-z]+")
_WORD_PIECE = re.compile(r"[A-Z]?[a-z]{3,}|(?<![A-Za-z])[A-Z]{4,}(?![a-z0-9])")


# A fingerprint or digest written with its algorithm (SHA256:nThbg6kX…), or a value named as an id,
# hash or revision just before it (server_uid 0dfuIz…, cookie hash : …), or a data URI's body, is not a secret.
_NOT_SECRET_BEFORE = re.compile(
    r"(?i)(?:(?:sha\d*|md5|blake2\w*)[:=-]|;base64,|(?<![A-Za-z])(?:uid|uuid|guid|hash|digest|checksum|revision|commit|sha\d*|etag|"
    r"fingerprint|(?:trace|span|request|correlation|cluster|node|instance)[ _-]?id|build|version|nonce)\b[\s:=#\"'(]*)$"
)


def shannon(text: str) -> float:
    counts = Counter(text)
    length = len(text)
    return -sum(count / length * math.log2(count / length) for count in counts.values())


def looks_random(token: str, *, strict: bool) -> bool:
    """True when `token` reads like a generated secret rather than a word, an identifier or a hash."""
    body = _NOT_ALNUM.sub("", token)
    length = len(body)
    if length < (MIN_ALONE_CHARS if strict else MIN_TOKEN_CHARS) or _HEX_RE.fullmatch(body):
        return False
    if _PREFIXED_HEX.fullmatch(body):
        return True  # a few letters glued to a hex key (cs3562…): a key's prefix, not a digest's
    digits = sum(map(str.isdigit, body))  # the body is ASCII letters and digits
    upper = sum(map(str.isupper, body))
    lower = length - digits - upper
    letters = upper + lower
    if strict and not (digits and upper and lower):
        return False
    if not digits and (upper < MIN_OF_EACH_CASE or lower < MIN_OF_EACH_CASE):
        return False
    if (
        letters >= VOWEL_CHECK_LETTERS
        and sum(map(_VOWELS.__contains__, body)) / letters > MAX_VOWEL_SHARE
        and wordlike(_NOT_LETTERS.sub("", body))
    ):
        return False  # a word's share of vowels, and its letters pair as words do
    if letters and sum(len(w) for w in _WORD_PIECE.findall(token) if set(w) & _VOWELS and wordlike(w)) >= (
        MAX_WORD_SHARE * letters
    ):
        return False  # mostly words: PBKDF2SHA1PasswordHasher, HTTP_101_SWITCHING_PROTOCOLS
    if letters and digits and min(digits, letters) < MIN_MIXED and length < MIN_ALONE_CHARS:
        return False
    return shannon(body) >= ENTROPY_SHARE * math.log2(min(length, BASE62))


# Words that make a random token nearby a credential, beyond the keyword layer's own words.
_CONTEXT_RE = re.compile(
    r"(?<![a-z])(?:api|access|login|account|signing|webhook|ssh|session|licen[cs]e|credential|vault|hmac|bearer|"
    r"secret|token|key|auth|pass|pwd|otp|seed|wallet|cookie|sid|client|private|cert|sign|encrypt)"
)


def _has_context(scan: Scan, start: int) -> bool:
    line_start = max(scan.text.rfind("\n", 0, start) + 1, start - CONTEXT_CHARS)
    hits = scan.keyword_hits
    index = bisect.bisect_left(hits, (line_start, 0))
    if index < len(hits) and hits[index][0] < start:
        return True
    return bool(_CONTEXT_RE.search(scan.lower, line_start, start))


_PART_BREAK = re.compile(r"[_\-]")
# A Subresource Integrity digest (lockfiles' "integrity": "sha512-…"): the algorithm is part of the token.
_SRI = re.compile(r"(?:sha(?:256|384|512)|md5|sha1)-")


def parts(token: str) -> list[str]:
    """The parts of a token between '_' and '-' (a prefix's words, a body's pieces)."""
    return _PART_BREAK.split(token)


def _longest_part(token: str) -> str:
    """On its own, a token is judged by its longest part: rabbitmq-cluster-id-yWcY… is a name and a short id."""
    return max(parts(token), key=len)


_PATH_WORD = re.compile(r"[a-z]{4,}|[a-z]+(?:_[a-z]+)+")


def _path_like(token: str) -> bool:
    """A path with a word in it (628WB79CIFDYO9LJI6DKMI09L/msg_store_transient), not base64."""
    return "/" in token and any(_PATH_WORD.fullmatch(part) for part in token.split("/"))


# Candidate tokens inside a run: base64/base62 bodies (a '/' or '+' belongs to base64; ':' and '.' split).
_TOKEN_RE = re.compile(r"[A-Za-z0-9+/_\-]{16,}={0,2}")


def find(scan: Scan, spans: Spans) -> None:
    """Random tokens left in the scan's runs after the other layers (the cheap tests first: most tokens
    are names, and what is before a token is read only for the random ones)."""
    text = scan.text
    for run_start, run_end in scan.runs:
        if run_end - run_start < MIN_TOKEN_CHARS or spans.within_one(run_start, run_end):
            continue
        run = text[run_start:run_end]
        candidates = list(_TOKEN_RE.finditer(run))
        if not candidates:
            continue
        in_url = "://" in run or text.endswith("://", 0, run_start)
        context = _has_context(scan, run_start)
        if in_url and not context:
            continue  # ids in URLs are what links are made of
        for match in candidates:
            start, end = run_start + match.start(), run_start + match.end()
            if spans.covered(start, end):
                continue
            token = match.group()
            if context or _has_context(scan, start):
                random = looks_random(token, strict=False)
            else:
                random = not in_url and not _path_like(token) and looks_random(_longest_part(token), strict=True)
            if (
                random
                and not _NOT_SECRET_BEFORE.search(text, max(0, start - NOT_SECRET_CHARS), start)
                and not _SRI.match(token)
                and not decodes_to_text(token)
                and not labelled_public(scan, start)
            ):
                spans.add(start, end, "high_entropy_secret")
