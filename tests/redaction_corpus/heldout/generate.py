"""Builds the held-out redaction corpus: secrets of a few hundred kinds and ordinary look-alike lines, each
split by KIND into a development part and a test part (a test kind never appears in development).

    .venv/bin/python -m tests.redaction_corpus.heldout.generate   # rewrites the four .jsonl files beside it

Which part a kind belongs to is decided by a hash of its name alone (TEST_SHARE of the kinds go to test),
before and regardless of what the detector finds. The detector is tuned on the development part only;
`manage.py redaction_eval` prints nothing but aggregate figures for the test part.

Secrets: {"family", "kind", "text", "secrets"}; look-alikes: {"family", "kind", "text"} (must stay unaltered).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.redaction_corpus.heldout.public_kinds import PUBLIC
from tests.redaction_corpus.heldout.secret_kinds import NAMED, PLAIN, PREFIXED, STRUCTURED
from tests.redaction_corpus.values import Values

SEED = 20261205
TEST_SHARE = 0.4  # the share of kinds held out for the test part
SAMPLES_PER_KIND = 3
MIN_PLAIN_PREFIX = 3  # a token is also shown without a naming word when its prefix is at least this long
FOLDER = Path(__file__).parent


def part(kind: str) -> str:
    """'test' or 'dev', from the kind's name alone."""
    digest = hashlib.sha256(kind.encode()).digest()
    return "test" if digest[0] < 256 * TEST_SHARE else "dev"


def _prefix(maker, values: Values) -> str:
    sample = maker(values)
    for index, char in enumerate(sample):
        if not (char.islower() or char in "_-:."):
            return sample[:index]
    return sample


def secrets(values: Values) -> list[dict]:
    rows = []
    for kind, name, env, make in PREFIXED:
        plain_ok = len(_prefix(make, values)) >= MIN_PLAIN_PREFIX
        pool = NAMED + PLAIN if plain_ok else NAMED
        for template in values.rng.sample(pool, SAMPLES_PER_KIND):
            secret = make(values)
            text = template.format(s=secret, name=name, env=env, lower=env.lower())
            rows.append({"family": "provider_token", "kind": kind, "text": text, "secrets": [secret]})
    for kind, family, make in STRUCTURED:
        for _ in range(SAMPLES_PER_KIND):
            text, found = make(values)
            for secret in found:
                assert secret in text, (kind, secret, text)
            rows.append({"family": family, "kind": kind, "text": text, "secrets": found})
    return rows


def lookalikes(values: Values) -> list[dict]:
    rows = []
    for kind, family, make in PUBLIC:
        texts: list[str] = []
        for _ in range(SAMPLES_PER_KIND * 4):  # placeholders and fixed phrases repeat: keep distinct lines
            text = make(values)
            if text not in texts:
                texts.append(text)
            if len(texts) == SAMPLES_PER_KIND:
                break
        rows += [{"family": family, "kind": kind, "text": text} for text in texts]
    return rows


def main() -> None:
    values = Values(SEED)
    for name, rows in (("secrets", secrets(values)), ("lookalikes", lookalikes(values))):
        for which in ("dev", "test"):
            chosen = [row for row in rows if part(row["kind"]) == which]
            path = FOLDER / f"{name}_{which}.jsonl"
            with path.open("w", encoding="utf-8") as handle:
                for row in chosen:
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            kinds = {row["kind"] for row in chosen}
            print(f"{path.name}: {len(chosen)} rows, {len(kinds)} kinds")


if __name__ == "__main__":
    main()
