"""Secrets out before any text reaches a summarizer (invariant 7).

Redaction is a set of layers, each a detector that reports spans of the text
(start, end, kind); the spans are merged and each is replaced once by a typed
placeholder (`[REDACTED:aws_access_key]`), so a reader of the summary knows a
credential existed without seeing it. The layers, strongest first:

1. structure (`structure.py`): private-key blocks, URL userinfo, Kubernetes
   Secret `data`/`stringData` values, Docker `auths`;
2. known token formats (`tokens.py`): a catalogue of providers' formats
   (prefix + body shape), plus any "prefix_" + random body token;
3. keyword-anchored values (`keywords.py`): a secret-ish word (password,
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

import dataclasses
from collections import Counter
from collections.abc import Sequence

from compaction.redaction import entropy, identifiers, keywords, structure, tokens
from compaction.redaction.spans import PLACEHOLDER, PLACEHOLDER_RE, Scan, Spans

__all__ = ["PLACEHOLDER", "Redacted", "redact", "redact_many"]


@dataclasses.dataclass(frozen=True)
class Redacted:
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
    structure.find(scan, spans)
    tokens.find(scan, spans)
    keywords.find(scan, spans)
    identifiers.find(scan, spans)
    entropy.find(scan, spans)
    return spans


def redact(text: str) -> Redacted:
    """Replace every secret found in `text` by a typed placeholder; count them by kind."""
    return redact_many([text])[0]


# Between the texts of a batch: no layer matches across a line holding only NUL.
_SEPARATOR = "\n\x00\n"


def redact_many(texts: Sequence[str]) -> list[Redacted]:
    """`redact` of each text, all scanned as one: one pass over the batch, then only its hits are looked at."""
    texts = [text or "" for text in texts]
    if len(texts) > 1 and any("\x00" in text for text in texts):
        return [redact(text) for text in texts]
    joined = _SEPARATOR.join(texts)
    scan = Scan(joined)
    if not joined or not scan.suspicious():
        return [Redacted(text, {}) for text in texts]
    items = sorted(_spans(scan).items)
    results = []
    offset = 0
    index = 0
    for text in texts:
        end = offset + len(text)
        if index >= len(items) or items[index][0] >= end:
            results.append(Redacted(text, {}))
            offset = end + len(_SEPARATOR)
            continue
        parts: list[str] = []
        counts: Counter = Counter()
        position = offset
        while index < len(items) and items[index][0] < end:
            start, stop, kind = items[index]
            parts += [joined[position:start], PLACEHOLDER.format(kind=kind)]
            counts[kind] += 1
            position = min(stop, end)
            index += 1
        if not parts:
            results.append(Redacted(text, {}))
        else:
            parts.append(joined[position:end])
            results.append(Redacted("".join(parts), dict(sorted(counts.items()))))
        offset = end + len(_SEPARATOR)
        while index < len(items) and items[index][0] < offset:
            index += 1
    return results


def merge_counts(*counts: dict[str, int] | Counter) -> dict[str, int]:
    """Counts by kind added up, sorted by kind (the shape audit rows and API bodies show)."""
    total: Counter = Counter()
    for each in counts:
        total.update(each)
    return dict(sorted((kind, count) for kind, count in total.items() if count))
