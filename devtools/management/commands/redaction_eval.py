"""python manage.py redaction_eval [--json] [--corpus DIR] [--positive FILE...] [--negative FILE...]
                                  [--locomo FILE...] [--no-code] [--misses N]

Recall per family on a labelled corpus of secrets, the share of ordinary lines that redaction
alters, and the time to redact 1 MB of chat (devtools.redaction_eval says how each is measured).
The default corpus is tests/redaction_corpus/ (positive*.jsonl, negative/*.txt, and the held-out
corpus in heldout/: its development and test parts, split by kind, the test part shown only as
figures and measured against the goals); the LoCoMo
conversations are read from ../shared/bench/locomo/ when present (or from --locomo); the output
names every source it used, the yardstick of devtools.calibration (`calibration_ms`, the load
average before the run) and each timing also in calibration units (`<name>_cal`).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from devtools import redaction_eval as evaluation
from devtools.calibration import calibration


class Command(BaseCommand):
    help = "Recall per family, ordinary lines altered and speed of secret redaction."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="print the figures as JSON")
        parser.add_argument("--corpus", type=Path, default=None, help="corpus folder (default tests/redaction_corpus)")
        parser.add_argument("--positive", type=Path, nargs="*", default=[], help="more labelled JSON-lines files")
        parser.add_argument("--negative", type=Path, nargs="*", default=[], help="more ordinary-text files")
        parser.add_argument("--locomo", type=Path, nargs="*", default=None, help="LoCoMo conversation files")
        parser.add_argument("--no-code", action="store_true", help="leave the project's source out of the negatives")
        parser.add_argument("--misses", type=int, default=10, help="how many missed secrets and altered lines to show")
        parser.add_argument(
            "--speed-bytes", type=int, default=evaluation.SPEED_BYTES, help="size of the chat text timed (default 1 MB)"
        )

    def handle(self, *args, **options) -> None:
        corpus = options["corpus"] or evaluation.default_corpus()
        positive = sorted(corpus.glob("positive*.jsonl")) + options["positive"]
        negative = sorted((corpus / "negative").glob("*.txt")) + options["negative"]
        locomo = options["locomo"] if options["locomo"] is not None else evaluation.default_locomo()
        code = [] if options["no_code"] else evaluation.default_code()
        for path in positive + negative + locomo:
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
        if not positive:
            raise CommandError(f"no positive*.jsonl in {corpus}")
        with calibration() as yardstick:
            figures = self._measure(positive, negative, locomo, code, options["speed_bytes"])
            figures["heldout"] = self._heldout(corpus / evaluation.HELDOUT_FOLDER, figures["ordinary"])
        figures = yardstick.apply(figures)
        if options["json"]:
            self.stdout.write(json.dumps(figures, indent=2, ensure_ascii=False))
            return
        self._report(figures, options["misses"])
        self.stdout.write(yardstick.summary())

    def _measure(
        self, positive: list[Path], negative: list[Path], locomo: list[Path], code: list[Path], speed_bytes: int
    ) -> dict:
        samples = evaluation.load_positive(positive)
        sources = {"demo": evaluation.demo_messages()}
        if locomo:
            sources["locomo"] = evaluation.locomo_messages(locomo)
        for path in negative:
            sources[f"corpus:{path.stem}"] = evaluation.file_messages([path])
        if code:
            sources["project source"] = evaluation.file_messages(code, whole=True)
        figures = {
            "sources": {
                "positive": [str(p) for p in positive],
                "negative": [str(p) for p in negative],
                "locomo": [str(p) for p in locomo],
                "project_source_files": len(code),
            },
            "recall": evaluation.recall(samples),
            "ordinary": evaluation.altered(sources),
        }
        chat = sources.get("locomo", []) + sources["demo"] + sources.get("corpus:chat", [])
        figures["speed"] = evaluation.speed(evaluation.speed_messages(chat, samples, size=speed_bytes))
        # Developers' chat: the demo conversation and the corpus's code and logs, far denser in tokens and names.
        technical = sources["demo"] + sources.get("corpus:code", []) + sources.get("corpus:logs", [])
        figures["speed_technical"] = evaluation.speed(evaluation.speed_messages(technical, samples, size=speed_bytes))
        return figures

    def _heldout(self, folder: Path, ordinary: dict) -> dict | None:
        parts = evaluation.heldout(folder)
        if parts is None:
            return None
        chat = evaluation.chat_altered(ordinary)
        return {
            "folder": str(folder),
            **parts,
            "ordinary_chat": chat,
            "goals": evaluation.heldout_goals(parts["test"], chat),
        }

    def _report_heldout(self, heldout: dict | None, shown: int) -> None:
        write = self.stdout.write
        if heldout is None:
            write("\nheld-out corpus: not found")
            return
        write(f"\nheld-out corpus ({heldout['folder']}), split by kind; the test part's cases are never shown:")
        for part in evaluation.HELDOUT_PARTS:
            row = heldout[part]
            write(
                f"  {part:<5} recall {row['recall']:.4f} ({row['secrets']} secrets, {row['secret_kinds']} kinds); "
                f"look-alikes altered {row['lookalikes_altered']} of {row['lookalikes']} "
                f"({row['lookalikes_altered_share']:.2%}, {row['lookalike_kinds']} kinds)"
            )
        chat = heldout["ordinary_chat"]
        write(
            f"  ordinary chat (LoCoMo, demo): {chat['altered']} of {chat['lines']} lines altered ({chat['share']:.3%})"
        )
        for name, goal in heldout["goals"].items():
            write(f"  goal {name}: {goal['figure']:.4f} against {goal['goal']} — {'met' if goal['met'] else 'NOT met'}")
        for miss in heldout["dev"]["misses"][:shown]:
            write(f"  dev missed {miss['family']}/{miss['kind']}: {miss['out'][:160]!r}")
        for example in heldout["dev"]["altered_examples"][:shown]:
            write(f"  dev altered {example['kind']}: {example['redacted'][:160]!r}")

    def _report(self, figures: dict, shown: int) -> None:
        write = self.stdout.write
        sources = figures["sources"]
        write(f"positive corpus: {', '.join(sources['positive'])}")
        locomo = (
            f"{len(sources['locomo'])} file(s) ({', '.join(sources['locomo'])})" if sources["locomo"] else "not found"
        )
        write(
            f"negative corpus: {', '.join(sources['negative']) or '-'}; demo data; LoCoMo: {locomo}; "
            f"project source: {sources['project_source_files']} file(s)"
        )
        recall = figures["recall"]
        write(f"\nrecall: {recall['recall']:.4f} overall — {recall['secrets']} secrets, {recall['kinds']} kinds")
        write(f"  {'family':<20}{'kinds':>7}{'secrets':>9}{'recall':>9}")
        for family, row in recall["families"].items():
            write(f"  {family:<20}{row['kinds']:>7}{row['secrets']:>9}{row['recall']:>9.4f}")
        for miss in recall["misses"][:shown]:
            write(f"  missed {miss['family']}/{miss['kind']}: {miss['out'][:160]!r}")
        ordinary = figures["ordinary"]
        write(f"\nordinary lines altered: {ordinary['altered']} of {ordinary['lines']} ({ordinary['share']:.3%})")
        for name, row in ordinary["sources"].items():
            write(f"  {name:<22}{row['messages']:>7} messages{row['lines']:>8} lines{row['altered']:>6} altered")
        for example in ordinary["examples"][:shown]:
            write(f"  altered ({example['source']}): {example['redacted'][:160]!r}")
        self._report_heldout(figures.get("heldout"), shown)
        for label, speed in (("chat", figures["speed"]), ("developers' chat", figures["speed_technical"])):
            write(
                f"\nspeed ({label}): {speed['batch_ms_per_mb']:.1f} ms per MB as a compaction redacts "
                f"({speed['messages']} messages, {speed['megabytes']} MB, redact_many); "
                f"{speed['single_text_ms_per_mb']:.1f} ms per MB as one text; "
                f"CPU time, best of {evaluation.SPEED_RUNS}; load average {speed['load_average']:.2f}"
            )
            write(
                f"  in calibration units: {speed['batch_ms_per_mb_cal']:.3f} cal per MB as a compaction redacts, "
                f"{speed['single_text_ms_per_mb_cal']:.3f} cal per MB as one text"
            )
