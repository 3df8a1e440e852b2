"""The offline summarizer's sample hand-overs on the docs site: the demo channel (`run.sh`'s long
conversation) summarized by each built-in profile, made when the docs are built, so the samples are
what the summarizer writes today. No database: the demo's messages and unsaved profiles."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

from chatcore.demo import long_conversation
from compaction.builtins import BUILTIN_BY_SLUG
from compaction.models import CompactionProfile
from compaction.summarizers.offline import summarize_offline
from compaction.summarizers.offline.profiles import offline_layout
from compaction.transcript import TranscriptItem, transcript_items

# A fixed start, so that the samples (their dates) change only when the summarizer or the demo does.
DEMO_START = dt.datetime(2026, 11, 29, 9, 0, tzinfo=dt.UTC)
SLUGS = ("structured", "brief", "detailed", "actionable")


def demo_items(keep: int, start: dt.datetime = DEMO_START) -> list[TranscriptItem]:
    """The demo channel's active path, as the summarizer sees it, without the `keep` newest messages."""
    tree = long_conversation(start)
    path: list[int] = []
    index: int | None = len(tree) - 1
    while index is not None:
        path.append(index)
        index = tree[index].parent
    messages = [
        SimpleNamespace(
            pk=i, role=tree[i].role, content=tree[i].content, metadata=tree[i].metadata, created_at=tree[i].created_at
        )
        for i in reversed(path)
    ]
    return transcript_items(messages[:-keep] if keep else messages)


def builtin_profile(slug: str) -> CompactionProfile:
    """A shipped profile as an unsaved row (its text and options as shipped)."""
    shipped = BUILTIN_BY_SLUG[slug]
    return CompactionProfile(**{key: value for key, value in shipped.items() if key != "is_default"}, is_builtin=True)


def offline_samples_markdown() -> str:
    parts = []
    for slug in SLUGS:
        profile = builtin_profile(slug)
        summary = summarize_offline(
            items=demo_items(profile.keep_recent),
            previous_summary=None,
            focus="",
            max_tokens=profile.max_summary_tokens,
            layout=offline_layout(profile),
        )
        parts.append(
            f"<details><summary>{profile.name} ({profile.max_summary_tokens:,} tokens)</summary>\n\n"
            f"````markdown\n{summary.strip()}\n````\n\n</details>\n"
        )
    return "\n".join(parts)
