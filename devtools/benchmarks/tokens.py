"""Token counting: the speed of the tokenizer in use and of the estimate, and
how far the estimate strays from the tokenizer on real conversational text.

Every message is counted once, at insert (`Message.tokens`), and budgets are
sums of those counts; so the figures that matter are the per-message speed
and the estimate's error per message and summed over a whole conversation.
The text is the LoCoMo sample (five long two-person conversations), read
where it lies: `../shared/bench/locomo` beside the project, or the directory
named by COMPACTION_BENCH_LOCOMO (or the command's --data option); from a
git worktree the nearest ancestor with shared/bench/locomo is used. It is
never copied into the project.
"""

import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from django.core.management.base import CommandError

from chatcore.tokens import count_tokens, estimate_tokens, tokenizer_name
from devtools.locomo import ENV_VAR, locomo_dir

# Bytes pushed through each counter at scale 1: enough for a stable figure
# (about two seconds for the tokenizer on a small machine).
TARGET_BYTES = 8_000_000


@dataclass
class Conversation:
    name: str
    messages: list[str]


def _turn_text(turn: dict) -> str:
    text = turn.get("text") or ""
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def locomo_load(directory: Path) -> list[Conversation]:
    files = sorted(directory.glob("*.json"))
    if not files:
        raise CommandError(
            f"No LoCoMo files (*.json) in {directory}. Point {ENV_VAR} or --data at the directory "
            f"that holds them (the sample lives in ../shared/bench/locomo beside the project)."
        )
    conversations = []
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        sessions = sorted(
            (int(key.removeprefix("session_")), value)
            for key, value in data.items()
            if key.startswith("session_") and key.removeprefix("session_").isdigit() and isinstance(value, list)
        )
        messages = [_turn_text(turn) for _, turn_list in sessions for turn in turn_list]
        conversations.append(Conversation(name=path.stem, messages=[m for m in messages if m]))
    return conversations


def _speed(counter, messages: list[str], repeats: int) -> tuple[float, int]:
    """Best-of-three MB/s counting each message on its own, as inserts do."""
    size = sum(len(m.encode("utf-8")) for m in messages) * repeats
    best = float("inf")
    total = 0
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(repeats):
            total = 0
            for message in messages:
                total += counter(message)
        best = min(best, time.perf_counter() - started)
    return size / best / 1e6, total


def _relative(estimate: int, exact: int) -> float:
    return (estimate - exact) / exact


def run(*, scale: float, stdout, data: str | None = None) -> dict:
    conversations = locomo_load(locomo_dir(data))
    if scale < 1:
        conversations = [
            Conversation(c.name, c.messages[: max(10, int(len(c.messages) * scale))]) for c in conversations
        ]
    messages = [m for c in conversations for m in c.messages]
    corpus_bytes = sum(len(m.encode("utf-8")) for m in messages)
    repeats = max(1, round(TARGET_BYTES * scale / corpus_bytes))

    count_tokens("warm up")  # loads the tokenizer's tables outside the timing
    tokenizer_mbps, _ = _speed(count_tokens, messages, repeats)
    estimate_mbps, _ = _speed(estimate_tokens, messages, repeats)

    per_message = []
    signed = []
    for message in messages:
        exact = count_tokens(message)
        if exact:
            error = _relative(estimate_tokens(message), exact)
            per_message.append(abs(error))
            signed.append(error)

    per_conversation = []
    for conversation in conversations:
        exact = sum(count_tokens(m) for m in conversation.messages)
        estimate = sum(estimate_tokens(m) for m in conversation.messages)
        per_conversation.append(
            {
                "conversation": conversation.name,
                "messages": len(conversation.messages),
                "tokens": exact,
                "estimate": estimate,
                "error": _relative(estimate, exact),
            }
        )

    figures = {
        "tokenizer": tokenizer_name(),
        "messages": len(messages),
        "bytes": corpus_bytes,
        "repeats": repeats,
        "tokenizer_mb_per_s": tokenizer_mbps,
        "estimate_mb_per_s": estimate_mbps,
        "speed_ratio": estimate_mbps / tokenizer_mbps,
        "message_error_mean": statistics.fmean(per_message),
        "message_error_median": statistics.median(per_message),
        "message_error_p95": statistics.quantiles(per_message, n=20)[-1] if len(per_message) > 1 else per_message[0],
        "message_error_max": max(per_message),
        "message_bias": statistics.fmean(signed),
        "conversation_error_mean": statistics.fmean(abs(c["error"]) for c in per_conversation),
        "conversation_error_max": max(abs(c["error"]) for c in per_conversation),
        "conversations": per_conversation,
    }

    stdout.write(
        f"tokens: LoCoMo text, {len(messages):,} messages, {corpus_bytes / 1e6:.2f} MB, "
        f"counted {repeats}× per timing (best of 3), one call per message\n"
    )
    stdout.write(f"  {'counter':<28}{'MB/s':>10}\n")
    stdout.write(f"  {'tokenizer (' + figures['tokenizer'] + ')':<28}{tokenizer_mbps:>10.2f}\n")
    stdout.write(f"  {'estimate (4 bytes/token)':<28}{estimate_mbps:>10.2f}\n")
    stdout.write(f"  {'ratio estimate/tokenizer':<28}{figures['speed_ratio']:>9.1f}×\n")
    stdout.write(
        "  estimate's relative error against the tokenizer, per message: "
        f"mean {figures['message_error_mean']:.1%}, median {figures['message_error_median']:.1%}, "
        f"p95 {figures['message_error_p95']:.1%}, max {figures['message_error_max']:.1%}, "
        f"bias {figures['message_bias']:+.1%}\n"
    )
    stdout.write(f"  {'conversation':<14}{'messages':>10}{'tokens':>10}{'estimate':>10}{'error':>9}\n")
    for row in per_conversation:
        stdout.write(
            f"  {row['conversation']:<14}{row['messages']:>10,}{row['tokens']:>10,}"
            f"{row['estimate']:>10,}{row['error']:>+9.1%}\n"
        )
    stdout.write(
        f"  whole conversations: mean |error| {figures['conversation_error_mean']:.1%}, "
        f"max {figures['conversation_error_max']:.1%}\n"
    )
    return figures
