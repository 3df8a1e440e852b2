"""Highlighted snippets, made from the text a reader will see (already redacted).

Words are compared by their stems, with the stemmer that matches the index:
Snowball's original Porter for SQLite's `porter` tokenizer, Snowball's
algorithm of the configured language for PostgreSQL (`english` is
PostgreSQL's `english_stem`), no stemming where none applies. The snippet is
HTML: the text escaped, the matched words in `<mark>`.
"""

from __future__ import annotations

import bisect
import functools
import html
import re
from collections.abc import Sequence

import snowballstemmer
from django.db import connection

from chatcore import conf

SNIPPET_WORDS = 32
PLAIN_SNIPPET_CHARS = 400  # a text without words is shown this far
LEAD_PART = 4  # the snippet opens this part of its words (a quarter) before the densest stretch of matches
_TOKEN_RE = re.compile(r"[^\W_]+")


@functools.lru_cache(maxsize=8)
def _stemmer(vendor: str, language: str):
    name = "porter" if vendor == "sqlite" and language == "english" else language
    if vendor == "sqlite" and language != "english":
        return None
    return snowballstemmer.stemmer(name) if name in snowballstemmer.algorithms() else None


STEMS_KEPT = 50_000  # stems remembered per stemmer (a word's stem never changes); forgotten all at once beyond
_STEMS: dict[tuple[str, str], dict[str, str]] = {}


def _known_stems(vendor: str, language: str, words) -> dict[str, str]:
    """{word: stem} for this index, holding at least `words` (lower-cased): a word's stem is a function of
    the word alone, remembered in a plain dict per stemmer (a snippet looks up every word of its text; a
    cache keyed on the word, the vendor and the language cost more than the stemming it spared)."""
    known = _STEMS.setdefault((vendor, language), {})
    missing = set(words).difference(known)
    if missing:
        if len(known) + len(missing) > STEMS_KEPT:
            known.clear()
            missing = set(words)
        stemmer = _stemmer(vendor, language)
        known.update((word, stemmer.stemWord(word) if stemmer else word) for word in missing)
    return known


def stems(words) -> frozenset[str]:
    lowered = [w.lower() for w in words]
    known = _known_stems(connection.vendor, conf.SEARCH_LANGUAGE, lowered)
    return frozenset(map(known.__getitem__, lowered))


def snippet(text: str, units: tuple[str, ...], *, words: int = SNIPPET_WORDS) -> str:
    """About `words` words of `text` around its densest stretch of matches, as escaped HTML with <mark>s."""
    return snippets([text], units, words=words)[0]


def snippets(texts: Sequence[str], units: tuple[str, ...], *, words: int = SNIPPET_WORDS) -> list[str]:
    """`snippet` of each text: the query's stems and the index's stemmer worked out once for all of them
    (a search shows several hits, each snippet of the same query)."""
    wanted = stems(w for unit in units for w in _TOKEN_RE.findall(unit))
    vendor, language = connection.vendor, conf.SEARCH_LANGUAGE
    return [_snippet(text, wanted, vendor, language, words) for text in texts]


def _snippet(text: str, wanted: frozenset[str], vendor: str, language: str, words: int) -> str:
    tokens = list(_TOKEN_RE.finditer(text))
    if not tokens:
        return html.escape(text[:PLAIN_SNIPPET_CHARS])
    lowered = [t.group(0).lower() for t in tokens]
    known = _known_stems(vendor, language, lowered)
    hits = [i for i, stem in enumerate(map(known.__getitem__, lowered)) if stem in wanted]
    start = 0
    if hits and len(tokens) > words:
        best = max(hits, key=lambda i: bisect.bisect_left(hits, i + words) - bisect.bisect_left(hits, i))
        start = max(0, min(best - words // LEAD_PART, len(tokens) - words))
    end = min(len(tokens), start + words)
    begin_at = tokens[start].start() if start else 0
    end_at = tokens[end - 1].end() if end < len(tokens) else len(text)
    pieces = ["… " if start else ""]
    cursor = begin_at
    for i in hits:
        if start <= i < end:
            token = tokens[i]
            pieces.append(html.escape(text[cursor : token.start()]))
            pieces.append(f"<mark>{html.escape(token.group(0))}</mark>")
            cursor = token.end()
    pieces.append(html.escape(text[cursor:end_at]))
    pieces.append(" …" if end < len(tokens) else "")
    return "".join(pieces)
