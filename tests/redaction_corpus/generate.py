"""Builds the labelled positive corpus of `manage.py redaction_eval`: secrets of more than 150 kinds
in realistic surroundings (prose, logs, configs, shell, JSON, YAML, .env), by family.

    .venv/bin/python -m tests.redaction_corpus.generate   # rewrites tests/redaction_corpus/positive.jsonl

Every value is generated here (seeded, so the file is stable); none is a real secret. One line per
sample: {"family", "kind", "text", "secrets": [exact substrings that must not survive]}.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.redaction_corpus.families import FAMILIES
from tests.redaction_corpus.providers import PROVIDERS
from tests.redaction_corpus.values import Values

SEED = 20261130
SAMPLES_PER_KIND = 3
OUTPUT = Path(__file__).with_name("positive.jsonl")

# Surroundings of a provider token; {s} the token, {name} the provider, {env} its variable.
PLAIN = [
    "here's the {name} one you asked for: {s}",
    "I pasted {s} into the settings page, is that right?",
    "2024-06-03T10:41:07Z WARN upstream rejected {s} (status 401), retrying in 5s",
    "Use {s} for the staging environment until Friday.",
    "> {s}\nthat's the one from the {name} dashboard",
    "ok so the value is {s} — rotate it after the demo",
    "[worker-3] loaded credentials from vault: {s}",
]
NAMED = [
    "{env}={s}",
    "export {env}='{s}'",
    '{{"{lower}": "{s}", "region": "eu-west-1", "timeout": 30}}',
    "  {lower}: {s}\n  retries: 3",
    "The {name} token is {s}, it expires in 90 days.",
    "curl -s https://api.example.com/v1/items -H 'X-Api-Key: {s}'",
    "os.environ['{env}'] = \"{s}\"",
    "docker run -e {env}={s} ghcr.io/acme/worker:1.4",
    "{name} key for prod: {s}",
]


def _provider_samples(values: Values) -> list[dict]:
    samples = []
    for kind, name, env, make, needs_keyword in PROVIDERS:
        pool = NAMED if needs_keyword else PLAIN + NAMED
        for template in values.rng.sample(pool, SAMPLES_PER_KIND):
            secret = make(values)
            text = template.format(s=secret, name=name, env=env, lower=env.lower())
            samples.append({"family": "provider_token", "kind": kind, "text": text, "secrets": [secret]})
    return samples


def build(seed: int = SEED) -> list[dict]:
    values = Values(seed)
    samples = _provider_samples(values)
    for family, kinds in FAMILIES.items():
        for kind, make in kinds:
            for _ in range(SAMPLES_PER_KIND):
                text, secrets = make(values)
                for secret in secrets:
                    assert secret in text, (kind, secret, text)
                samples.append({"family": family, "kind": kind, "text": text, "secrets": secrets})
    return samples


def main() -> None:
    samples = build()
    with OUTPUT.open("w", encoding="utf-8") as handle:
        for sample in samples:
            handle.write(json.dumps(sample, ensure_ascii=False) + "\n")
    kinds = {sample["kind"] for sample in samples}
    print(f"{len(samples)} samples, {len(kinds)} kinds -> {OUTPUT}")


if __name__ == "__main__":
    main()
