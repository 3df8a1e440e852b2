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


@functools.lru_cache(maxsize=50_000)
def _stem(word: str, vendor: str, language: str) -> str:
    stemmer = _stemmer(vendor, language)
    return stemmer.stemWord(word) if stemmer else word


def stems(words) -> frozenset[str]:
    vendor, language = connection.vendor, conf.SEARCH_LANGUAGE
    return frozenset(_stem(w.lower(), vendor, language) for w in words)


def snippet(text: str, units: tuple[str, ...], *, words: int = SNIPPET_WORDS) -> str:
    """About `words` words of `text` around its densest stretch of matches, as escaped HTML with <mark>s."""
    vendor, language = connection.vendor, conf.SEARCH_LANGUAGE
    wanted = stems(w for unit in units for w in _TOKEN_RE.findall(unit))
    tokens = list(_TOKEN_RE.finditer(text))
    if not tokens:
        return html.escape(text[:PLAIN_SNIPPET_CHARS])
    hits = [i for i, t in enumerate(tokens) if _stem(t.group(0).lower(), vendor, language) in wanted]
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
