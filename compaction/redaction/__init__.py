"""Secrets out before any text reaches a summarizer (invariant 7).

Redaction is a set of layers, each a detector that reports spans of the text
(start, end, kind); the spans are merged and each is replaced once by a typed
placeholder (`[REDACTED:aws_access_key]`), so a reader of the summary knows a
credential existed without seeing it. The layers, strongest first:

1. structure (`structure.py`): private-key blocks, URL userinfo, Kubernetes
   Secret `data`/`stringData` values, Docker `auths`;
2. known token formats (`tokens.py`): a catalogue of providers' formats
   (prefix + body shape), plus any "prefix_" + random body token;
3. keyword-anchored values (`keywords/`): a secret-ish word (password,
   token, secret, Passwort, contraseña, 密码, ...) in an identifier, a header,
   a CLI flag or a sentence, followed by a value: the whole value is hidden,
   quoted or not, symbols included;
4. checksummed identifiers (`identifiers.py`): card numbers, IBANs and
   national ids validated with python-stdnum, so ordinary numbers stay;
5. high entropy (`entropy.py`): random-looking tokens near a secret-ish
   word, or long enough to be random on their own.

Speed: the text is scanned by a few cheap expressions (secret-ish words and
the token catalogue as RE2 automata, runs of token characters, digit and id
groups); the layers only look at what those found, so the many lines with
nothing suspicious cost one pass (`redact_many` scans a whole batch of
messages as one text).
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from chatcore.collector import collector_paused
from compaction.redaction import context, entropy, identifiers, keywords, phrases, public, shapes, structure, tokens
from compaction.redaction.spans import PLACEHOLDER, PLACEHOLDER_RE, Scan, Spans

__all__ = ["PLACEHOLDER", "Redacted", "redact", "redact_many"]


class Redacted(NamedTuple):
    """A text with its secrets replaced, and how many of each kind (a tuple: a batch makes one a text)."""

    text: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _spans(scan: Scan) -> Spans:
    spans = Spans(scan.text)
    if "[REDACTED:" in scan.text:
        for placeholder in PLACEHOLDER_RE.finditer(scan.text):
            spans.protect(placeholder.start(), placeholder.end())
    public.find(scan, spans)
    structure.find(scan, spans)
    tokens.find(scan, spans)
    shapes.find(scan, spans)
    keywords.find(scan, spans)
    phrases.find(scan, spans)
    context.find(scan, spans)
    identifiers.find(scan, spans)
    entropy.find(scan, spans)
    return spans


def redact(text: str) -> Redacted:
    """Replace every secret found in `text` by a typed placeholder; count them by kind."""
    return redact_many([text])[0]


# Between the texts of a batch: no layer matches across a line holding only NUL.
_SEPARATOR = "\n\x00\n"


def redact_many(texts: Sequence[str]) -> list[Redacted]:
    """`redact` of each text, all scanned as one: one pass over the batch, then only its hits are looked at.
    A result a text and the scan's hits are many small objects without cycles: the collector waits (see
    compaction.collector: collecting them would cost CPU and free nothing)."""
    with collector_paused():
        return _redact_many(texts)


def _redact_many(texts: Sequence[str]) -> list[Redacted]:
    texts = [text or "" for text in texts]
    joined = _SEPARATOR.join(texts)
    if len(texts) > 1 and joined.count("\x00") != len(texts) - 1:
        return [redact(text) for text in texts]  # a text holds NUL: the separator would not separate
    results = [Redacted(text, {}) for text in texts]
    # Lower-cased text by text: most are ASCII, which lowers fast, while one non-ASCII character makes the
    # whole batch slow to lower. Equal to lowering the batch unless some text changed length (then Scan folds).
    lowered = _SEPARATOR.join([text.lower() for text in texts])
    scan = Scan(joined, lowered if len(lowered) == len(joined) else None)
    if not joined or not (scan.suspicious() or shapes.suspicious(scan) or context.suspicious(scan)):
        return results
    starts = list(itertools.accumulate((len(text) + len(_SEPARATOR) for text in texts), initial=0))
    by_text: dict[int, list[tuple[int, int, str]]] = {}
    for item in _spans(scan).items:
        by_text.setdefault(bisect.bisect_right(starts, item[0]) - 1, []).append(item)
    for index, items in by_text.items():
        position, end = starts[index], starts[index] + len(texts[index])
        parts: list[str] = []
        counts: Counter = Counter()
        for start, stop, kind in items:
            if start < end:  # not in the separator
                parts += [joined[position:start], PLACEHOLDER.format(kind=kind)]
                counts[kind] += 1
                position = min(stop, end)
        if parts:
            parts.append(joined[position:end])
            results[index] = Redacted("".join(parts), dict(sorted(counts.items())))
    return results


def merge_counts(*counts: dict[str, int] | Counter) -> dict[str, int]:
    """Counts by kind added up, sorted by kind (the shape audit rows and API bodies show)."""
    total: Counter = Counter()
    for each in counts:
        total.update(each)
    return dict(sorted((kind, count) for kind, count in total.items() if count))
