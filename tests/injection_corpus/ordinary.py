"""Ordinary chat, for false positives: the LoCoMo sample (when present) and the product's demo.

Read here from the files and the demo's own tables, not through the product's importers, so that
the corpus stays independent of the code it measures.
"""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import UTC, datetime
from pathlib import Path

from devtools.locomo import locomo_dir

LOCOMO = locomo_dir()  # COMPACTION_BENCH_LOCOMO, or shared/bench/locomo beside the checkout
_SESSION_RE = re.compile(r"^session_(\d+)$")
DEMO_START = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)


@dataclasses.dataclass(frozen=True)
class Conversation:
    """One ordinary conversation; every message in it is benign."""

    source: str
    name: str
    turns: list[dict[str, str]]


def locomo(directory: Path = LOCOMO) -> list[Conversation]:
    """LoCoMo's turns in order (first speaker as `user`, second as `assistant`, as the product's
    importer maps them; a shared image as its caption). Empty when the sample is absent."""
    if not directory.is_dir():
        return []
    conversations = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        sessions = sorted(int(match.group(1)) for key in data if (match := _SESSION_RE.match(key)))
        turns = []
        for number in sessions:
            for turn in data[f"session_{number}"] or []:
                text = (turn.get("text") or "").strip()
                if caption := (turn.get("blip_caption") or "").strip():
                    text = f"{text} [shared an image: {caption}]".strip()
                if text:
                    role = "user" if turn.get("speaker") == data["speaker_a"] else "assistant"
                    turns.append({"role": role, "content": text})
        conversations.append(Conversation("locomo", path.stem, turns))
    return conversations


def demo() -> list[Conversation]:
    """The demo channels' active paths (needs Django set up: the demo builds tree items)."""
    from chatcore.demo import LONG_TITLE, long_conversation, short_conversations

    trees = {LONG_TITLE: long_conversation(DEMO_START)}
    trees.update({title: items for title, (_persona, items) in short_conversations(DEMO_START).items()})
    conversations: list[Conversation] = []
    for title, items in trees.items():
        path, index = [], len(items) - 1
        while index is not None:
            path.append(items[index])
            index = items[index].parent
        turns = [{"role": item.role, "content": item.content} for item in reversed(path) if item.content.strip()]
        conversations.append(Conversation("demo", title, turns))
    return conversations


def ordinary() -> list[Conversation]:
    return locomo() + demo()
