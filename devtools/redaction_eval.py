"""How well redaction generalises, and how fast it is (`manage.py redaction_eval`).

Recall: a labelled positive corpus (JSON lines: family, kind, text, secrets). A secret counts as
caught when no piece of it survives: no 6-character window of it (the whole of a shorter one) is
in the redacted text unless that window was also in the text outside the secret.

Precision: ordinary text, message by message as a compaction redacts it: the LoCoMo
conversations (when present), the demo data, the corpus's own code, logs and chat, and the
project's source. The figure is the share of non-empty lines that redaction altered.

Speed: 1 MB of realistic chat (the ordinary messages with a labelled secret in about one
message in forty), redacted as a compaction does (`redact_many` over the messages) and as one
text; CPU time, best of several runs, with the machine's load beside it.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter, defaultdict
from pathlib import Path

from django.conf import settings

from compaction.redaction import redact, redact_many
from compaction.redaction.spans import PLACEHOLDER_RE
from devtools.locomo import locomo_files

FAMILIES = (
    "provider_token",
    "keyword_prose",
    "cli_headers",
    "structured_config",
    "env_file",
    "checksummed_id",
    "url_credentials",
    "private_key",
    "high_entropy",
)
WINDOW = 6
SPEED_BYTES = 1_000_000
SPEED_RUNS = 5
MESSAGE_SEPARATOR = "%%"


def default_corpus() -> Path:
    return Path(settings.BASE_DIR) / "tests" / "redaction_corpus"


def default_locomo() -> list[Path]:
    return locomo_files()  # beside the checkout, or above a git worktree; empty when absent


def default_code() -> list[Path]:
    base = Path(settings.BASE_DIR)
    files = []
    for package in ("chatcore", "compaction", "devtools", "project"):
        files += [p for p in sorted((base / package).rglob("*.py")) if "redaction" not in p.parts]
    return [p for p in files if "migrations" not in p.parts]


def load_positive(paths: list[Path]) -> list[dict]:
    samples = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                sample = json.loads(line)
                missing = [s for s in sample["secrets"] if s not in sample["text"]]
                if missing:
                    raise ValueError(f"{path}:{number}: secret not in its text: {missing[0][:20]}…")
                samples.append(sample)
    return samples


def locomo_messages(paths: list[Path]) -> list[str]:
    messages = []
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        conversation = data.get("conversation", data)
        for key, turns in conversation.items():
            if key.startswith("session_") and isinstance(turns, list):
                messages += [turn.get("text", "") for turn in turns if isinstance(turn, dict)]
    return messages


def demo_messages() -> list[str]:
    from datetime import datetime

    from chatcore import demo

    items = list(demo.long_conversation(datetime(2026, 1, 5, 9, 0)))
    for _, conversation in demo.short_conversations(datetime(2026, 1, 6, 9, 0)).values():
        items += conversation
    texts = []
    for item in items:
        texts.append(item.content or "")
        for call in (item.metadata or {}).get("tool_calls") or []:
            texts.append(call.get("function", {}).get("arguments", ""))
    return texts


def file_messages(paths: list[Path], *, whole: bool = False) -> list[str]:
    """Messages of corpus text files (separated by lines holding only %%), or each file as one message."""
    messages = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if whole:
            messages.append(text)
        else:
            messages += [part.strip("\n") for part in text.split(f"\n{MESSAGE_SEPARATOR}\n") if part.strip()]
    return messages


def leaked(secret: str, original: str, redacted: str) -> bool:
    redacted = PLACEHOLDER_RE.sub("\x00", redacted)  # "[REDACTED:github_token]" holds no piece of a secret
    outside = original.replace(secret, "\x00")
    size = min(WINDOW, len(secret))
    return any(
        secret[i : i + size] in redacted and secret[i : i + size] not in outside for i in range(len(secret) - size + 1)
    )


def recall(samples: list[dict]) -> dict:
    results = redact_many([sample["text"] for sample in samples])
    found: dict[str, Counter] = defaultdict(Counter)
    misses = []
    kinds: dict[str, set] = defaultdict(set)
    for sample, result in zip(samples, results, strict=True):
        family = sample["family"]
        kinds[family].add(sample["kind"])
        for secret in sample["secrets"]:
            caught = not leaked(secret, sample["text"], result.text)
            found[family]["caught" if caught else "missed"] += 1
            if not caught:
                misses.append({"family": family, "kind": sample["kind"], "text": sample["text"], "out": result.text})
    families = {}
    for family in sorted(found, key=lambda f: (FAMILIES.index(f) if f in FAMILIES else 99, f)):
        total = found[family]["caught"] + found[family]["missed"]
        families[family] = {
            "kinds": len(kinds[family]),
            "secrets": total,
            "recall": found[family]["caught"] / total,
        }
    caught = sum(c["caught"] for c in found.values())
    total = caught + sum(c["missed"] for c in found.values())
    return {
        "kinds": len({sample["kind"] for sample in samples}),
        "samples": len(samples),
        "secrets": total,
        "recall": caught / total if total else 0.0,
        "families": families,
        "misses": misses,
    }


def altered(sources: dict[str, list[str]]) -> dict:
    per_source = {}
    examples = []
    for name, messages in sources.items():
        lines = changed = 0
        for original, result in zip(messages, redact_many(messages), strict=True):
            before = [line for line in original.splitlines() if line.strip()]
            lines += len(before)
            if result.text == original:
                continue
            after = [line for line in result.text.splitlines() if line.strip()]
            if len(after) != len(before):
                changed += len(before)
                continue
            for old, new in zip(before, after, strict=True):
                if old != new:
                    changed += 1
                    examples.append({"source": name, "line": old, "redacted": new})
        per_source[name] = {"messages": len(messages), "lines": lines, "altered": changed}
    lines = sum(s["lines"] for s in per_source.values())
    changed = sum(s["altered"] for s in per_source.values())
    return {
        "lines": lines,
        "altered": changed,
        "share": changed / lines if lines else 0.0,
        "sources": per_source,
        "examples": examples,
    }


def speed_messages(ordinary: list[str], samples: list[dict], *, size: int = SPEED_BYTES) -> list[str]:
    """About `size` bytes of chat: ordinary messages in order, a labelled secret's text in one message in forty."""
    messages: list[str] = []
    total = 0
    index = 0
    while total < size and ordinary:
        message = ordinary[index % len(ordinary)]
        if samples and index % 40 == 39:
            message = samples[(index // 40) % len(samples)]["text"]
        messages.append(message)
        total += len(message.encode("utf-8")) + 1
        index += 1
    return messages


def speed(messages: list[str]) -> dict:
    """CPU milliseconds to redact `messages` as a batch and as one text, scaled to 1 MB (best of runs)."""
    redact("warm up: password=Warm3rUp! 4111 1111 1111 1111")
    megabytes = sum(len(m.encode("utf-8")) + 1 for m in messages) / 1_000_000
    joined = "\n".join(messages)

    def best(function) -> float:
        timings = []
        for _ in range(SPEED_RUNS):
            start = time.process_time()
            function()
            timings.append(time.process_time() - start)
        return min(timings) * 1000

    batch = best(lambda: redact_many(messages))
    single = best(lambda: redact(joined))
    return {
        "megabytes": round(megabytes, 3),
        "messages": len(messages),
        "batch_ms_per_mb": batch / megabytes,
        "single_text_ms_per_mb": single / megabytes,
        "load_average": os.getloadavg()[0],
    }


# The held-out corpus (tests/redaction_corpus/heldout/): secrets and ordinary look-alikes, split by kind into a
# development part (tuned on) and a test part (never looked at case by case: only its figures are printed).
HELDOUT_FOLDER = "heldout"
HELDOUT_PARTS = ("dev", "test")
# The goals on the test part: recall on kinds never seen, look-alikes altered, ordinary chat altered.
GOAL_RECALL = 0.98
GOAL_LOOKALIKES_ALTERED = 0.02
GOAL_CHAT_ALTERED = 0.002


def load_lookalikes(path: Path) -> list[dict]:
    """Ordinary look-alike entries (JSON lines: family, kind, text); each must come out of redaction unaltered."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def lookalikes_altered(entries: list[dict]) -> dict:
    """How many look-alike entries redaction altered (an entry is one line or one block, such as a PEM key)."""
    results = redact_many([entry["text"] for entry in entries])
    examples = [
        {"kind": entry["kind"], "text": entry["text"], "redacted": result.text}
        for entry, result in zip(entries, results, strict=True)
        if result.text != entry["text"]
    ]
    return {
        "kinds": len({entry["kind"] for entry in entries}),
        "entries": len(entries),
        "altered": len(examples),
        "share": len(examples) / len(entries) if entries else 0.0,
        "examples": examples,
    }


def heldout(folder: Path) -> dict | None:
    """Recall and look-alikes altered on each part of the held-out corpus in `folder` (None when it is absent).

    The test part's kinds must not appear in the development part; the test part carries no cases, only figures."""
    parts: dict[str, dict] = {}
    kinds: dict[str, set[str]] = {}
    for part in HELDOUT_PARTS:
        secrets_path, lookalikes_path = folder / f"secrets_{part}.jsonl", folder / f"lookalikes_{part}.jsonl"
        if not (secrets_path.is_file() and lookalikes_path.is_file()):
            return None
        samples = load_positive([secrets_path])
        entries = load_lookalikes(lookalikes_path)
        kinds[part] = {sample["kind"] for sample in samples} | {entry["kind"] for entry in entries}
        found, kept = recall(samples), lookalikes_altered(entries)
        parts[part] = {
            "secret_kinds": found["kinds"],
            "secrets": found["secrets"],
            "recall": found["recall"],
            "families": found["families"],
            "lookalike_kinds": kept["kinds"],
            "lookalikes": kept["entries"],
            "lookalikes_altered": kept["altered"],
            "lookalikes_altered_share": kept["share"],
        }
        if part == "dev":
            parts[part]["misses"] = found["misses"]
            parts[part]["altered_examples"] = kept["examples"]
    shared = kinds["dev"] & kinds["test"]
    if shared:
        raise ValueError(f"held-out kinds in both parts: {sorted(shared)[:5]}")
    return parts


def heldout_goals(test: dict, chat: dict) -> dict:
    """Each goal on the test part and on ordinary chat, with its figure and whether it is met."""
    return {
        "recall_unseen_kinds": {"goal": GOAL_RECALL, "figure": test["recall"], "met": test["recall"] >= GOAL_RECALL},
        "lookalikes_altered": {
            "goal": GOAL_LOOKALIKES_ALTERED,
            "figure": test["lookalikes_altered_share"],
            "met": test["lookalikes_altered_share"] <= GOAL_LOOKALIKES_ALTERED,
        },
        "ordinary_chat_altered": {
            "goal": GOAL_CHAT_ALTERED,
            "figure": chat["share"],
            "met": chat["share"] <= GOAL_CHAT_ALTERED,
        },
    }


def chat_altered(ordinary: dict) -> dict:
    """Ordinary chat (LoCoMo and the demo) out of the figures of `altered`: lines and the share altered."""
    rows = [row for name, row in ordinary["sources"].items() if name in ("locomo", "demo")]
    lines = sum(row["lines"] for row in rows)
    changed = sum(row["altered"] for row in rows)
    return {"lines": lines, "altered": changed, "share": changed / lines if lines else 0.0}
