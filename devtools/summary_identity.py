"""Byte-identity harness for the offline summarizer (a tool for refactors, not a test).

Runs the offline summarizer on each LoCoMo conversation and the demo channels at several cut points, with each
built-in profile's layout (with and without verbatim instructions), a custom template's layout, focus and an
iterative update, and the compaction benchmark's 5,000-message transcript; writes each summary to a file of
OUT, and with --compare BASE says which differ from a run saved before the change.

    python -m devtools.summary_identity OUT [--compare BASE] [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace


def _cases(quick: bool):
    from chatcore.demo import short_conversations
    from compaction.imports import locomo_turns
    from compaction.summarizers.offline import BUILTIN_LAYOUTS
    from compaction.summarizers.offline.layout import custom_layout
    from compaction.transcript import TranscriptItem, transcript_items
    from devtools.benchmarks.compaction import _text
    from devtools.docs.samples import DEMO_START, demo_items
    from devtools.locomo import locomo_files

    custom = custom_layout(
        "## Risks\n\n## Next steps\n\n## Background\n\n## Pets and hobbies\n\n## Decisions taken\n\n## Open issues\n"
    )
    assert custom is not None  # the template has headings
    layouts = {
        f"{name}-{keep}": layout.with_instructions(keep)
        for name, layout in BUILTIN_LAYOUTS.items()
        for keep in (False, True)
    }
    layouts["custom"] = custom
    limits = (400, 1500) if quick else (150, 400, 1000, 3000)
    for path in locomo_files():
        turns = locomo_turns(json.loads(path.read_text(encoding="utf-8")))
        items = [TranscriptItem(i, t.role, t.speaker, t.text, t.created_at) for i, t in enumerate(turns)]
        cuts = (len(items) // 2, len(items) - 10) if quick else (60, len(items) // 3, len(items) // 2, len(items) - 10)
        for cut in cuts:
            for name, layout in layouts.items():
                for limit in limits:
                    yield (
                        f"locomo-{path.stem}-{cut}-{name}-{limit}",
                        dict(items=items[:cut], previous_summary=None, focus="", max_tokens=limit, layout=layout),
                    )
        yield (
            f"locomo-{path.stem}-focus",
            dict(
                items=items[: len(items) // 2], previous_summary=None, focus="painting dog", max_tokens=500, layout=None
            ),
        )
        third = len(items) // 3
        yield (
            f"locomo-{path.stem}-iterative",
            dict(items=items[third : 2 * third], previous_summary=items[:third], focus="", max_tokens=800, layout=None),
        )
    for keep in (0, 4, 6, 30):
        items = demo_items(keep)
        for name, layout in layouts.items():
            for limit in limits:
                yield (
                    f"demo-{keep}-{name}-{limit}",
                    dict(items=items, previous_summary=None, focus="", max_tokens=limit, layout=layout),
                )
    yield "demo-focus", dict(items=demo_items(6), previous_summary=None, focus="migration", max_tokens=600, layout=None)
    for title, (_, tree) in short_conversations(DEMO_START).items():
        messages = [
            SimpleNamespace(pk=i, role=m.role, content=m.content, metadata=m.metadata, created_at=m.created_at)
            for i, m in enumerate(tree)
        ]
        for limit in limits:
            yield (
                f"short-{title[:10]}-{limit}",
                dict(items=transcript_items(messages), previous_summary=None, focus="", max_tokens=limit, layout=None),
            )
    for size in (500, 5000) if not quick else (5000,):
        messages = [
            SimpleNamespace(pk=i, role=("user", "assistant")[i % 2], content=_text(i), metadata={}, created_at=None)
            for i in range(size)
        ]
        items = transcript_items(messages)
        for limit in (1000, 800):
            yield (
                f"bench-{size}-{limit}",
                dict(items=items, previous_summary=None, focus="", max_tokens=limit, layout=None),
            )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--compare")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()
    from compaction.safety.injection import injection_cache_clear
    from compaction.summarizers.offline import summarize_offline

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    differ, count, cpu = [], 0, 0.0
    for name, kwargs in _cases(args.quick):
        if isinstance(kwargs["previous_summary"], list):  # an iterative update: first summarize the earlier part
            injection_cache_clear()
            earlier = summarize_offline(**{**kwargs, "items": kwargs["previous_summary"], "previous_summary": None})
            (out / f"{name}-previous.md").write_text(earlier, encoding="utf-8")
            kwargs = {**kwargs, "previous_summary": earlier}
        injection_cache_clear()
        started = time.process_time()
        text = summarize_offline(**kwargs)
        cpu += time.process_time() - started
        count += 1
        (out / f"{name}.md").write_text(text, encoding="utf-8")
        if args.compare:
            base = Path(args.compare) / f"{name}.md"
            if not base.exists() or base.read_text(encoding="utf-8") != text:
                differ.append(name)
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(out.glob("*.md")))).hexdigest()[:16]
    print(f"{count} summaries, summarizer CPU {cpu:.2f} s, digest {digest}")
    if args.compare:
        print(f"{len(differ)} differ" + (": " + ", ".join(differ[:20]) if differ else ""))
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
