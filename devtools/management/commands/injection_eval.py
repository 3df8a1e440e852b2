"""python manage.py injection_eval [--split test|dev] [--json] [--no-end-to-end] [--end-to-end-cases N] [--misses N]
                                   [--model | --no-model]

Recall and false positives of the injection detector on a part of the injection corpus (the test part by
default: the part nobody tunes on), per language and per family; false positives on ordinary chat (LoCoMo and
the demo); the CPU time to judge 5,000 messages, in ms and calibration units; and, end to end, how many payloads
reach an offline summary (devtools.injection_eval says how each is measured). Cases are shown (--misses) for
the development part only.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError
from django.test import override_settings

from compaction import conf
from compaction.safety import model as injection_model
from devtools import injection_data
from devtools import injection_eval as evaluation


class Command(BaseCommand):
    help = "Recall and false positives of the injection detector on the held-out corpus, its speed, end to end."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--split", choices=injection_data.SPLITS, default="test", help="corpus part (default test)")
        parser.add_argument("--json", action="store_true", help="print the figures as JSON")
        parser.add_argument("--no-end-to-end", action="store_true", help="skip the compactions (the slow part)")
        parser.add_argument(
            "--end-to-end-cases",
            type=int,
            default=evaluation.E2E_CASES,
            help=f"injections compacted end to end, spread over the part (default {evaluation.E2E_CASES}; 0: all)",
        )
        parser.add_argument("--misses", type=int, default=0, help="show this many misses and alarms (dev part only)")
        switch = parser.add_mutually_exclusive_group()
        switch.add_argument(
            "--model", action="store_true", help="judge with the learned model on (COMPACTION_INJECTION_MODEL)"
        )
        switch.add_argument("--no-model", action="store_true", help="judge with the phrase patterns alone")

    def handle(self, *args, **options) -> None:
        if options["model"] or options["no_model"]:
            with override_settings(COMPACTION_INJECTION_MODEL=options["model"]):
                return self._evaluate(options)
        return self._evaluate(options)

    def _evaluate(self, options) -> None:
        cases, source = injection_data.cases(options["split"])
        if not cases:
            raise CommandError(f"no cases in the {options['split']} part ({source})")
        if options["misses"] and options["split"] == "test":
            raise CommandError("the test part's cases are never shown: use --split dev to read misses")
        conversations, ordinary_source = injection_data.ordinary()
        shipped = injection_model.shipped() if conf.INJECTION_MODEL else None
        figures: dict = {
            "split": options["split"],
            "sources": {"cases": source, "ordinary": ordinary_source},
            "model": _model_figures(shipped),
            "detector": evaluation.detector(cases),
            "ordinary": evaluation.ordinary(conversations),
        }
        messages = [text for conversation in conversations for _, text in conversation]
        messages += [text for case in cases for text in case.texts]
        figures["speed"] = evaluation.speed(messages)
        if not options["no_end_to_end"]:
            progress = None if options["json"] else self.stderr.write
            figures["end_to_end"] = evaluation.end_to_end(
                cases, conversations, size=options["end_to_end_cases"], progress=progress
            )
        figures["goals"] = evaluation.goals(figures)
        misses = figures["detector"].pop("_misses"), figures["detector"].pop("_alarms")
        examples = figures["ordinary"].pop("_examples")
        if options["json"]:
            self.stdout.write(json.dumps(figures, indent=2, ensure_ascii=False))
            return
        self._report(figures)
        if options["misses"]:
            self._cases(misses, examples, options["misses"])

    def _report(self, figures: dict) -> None:
        write = self.stdout.write
        sources = figures["sources"]
        write(f"cases: {sources['cases']} ({figures['split']} part); ordinary: {sources['ordinary']}")
        write(f"model: {figures['model']['summary']}")
        detector = figures["detector"]
        write(
            f"\ndetector: recall {detector['recall']:.4f} on {detector['injections']} injections; "
            f"benign look-alikes flagged {detector['benign_false_positive_rate']:.2%} of {detector['benign']}"
        )
        for axis in ("per_language", "per_family"):
            write(f"  {axis.replace('_', ' '):<22}{'injections':>11}{'recall':>9}{'benign':>8}{'flagged':>9}")
            for key, row in detector[axis].items():
                write(
                    f"  {key:<22}{row['injections']:>11}{row['recall']:>9.3f}{row['benign']:>8}"
                    f"{row['false_positive_rate']:>9.2%}"
                )
        ordinary = figures["ordinary"]
        share = f"{ordinary['rate']:.3%}"
        write(f"\nordinary chat: {ordinary['flagged']} of {ordinary['messages']} messages flagged ({share})")
        speed = figures["speed"]
        write(
            f"speed: {speed['messages']:,} messages in {speed['cpu_ms']:.1f} ms of CPU = {speed['cal']:.2f} cal "
            f"(1 cal = {speed['calibration_ms']:.1f} ms here; load average {speed['load_average']:.2f})"
        )
        if "end_to_end" in figures:
            e2e = figures["end_to_end"]
            write(
                f"end to end (offline summary, {e2e['injections']} injections): payloads in the summary's own voice "
                f"{e2e['reached_alone']} alone ({e2e['reached_alone_rate']:.2%}) and {e2e['reached_mixed']} in "
                f"{e2e['mixed_conversations']} mixed conversations ({e2e['reached_mixed_rate']:.2%}); only inside "
                f"attributed quotations (arrived as data) {e2e['quoted_alone']} alone, {e2e['quoted_mixed']} mixed"
            )
        write(
            "\ngoals: " + "; ".join(f"{name}: {'met' if met else 'NOT met'}" for name, met in figures["goals"].items())
        )

    def _cases(self, misses, examples: list[str], shown: int) -> None:
        missed, alarms = misses
        for case in missed[:shown]:
            self.stdout.write(f"  missed {case.id} ({case.language}/{case.family}): {case.texts!r:.300}")
        for case in alarms[:shown]:
            self.stdout.write(f"  flagged {case.id} ({case.language}/{case.family}): {case.texts!r:.300}")
        for text in examples[:shown]:
            self.stdout.write(f"  ordinary flagged: {text[:200]!r}")


def _model_figures(model) -> dict:
    if model is None:
        return {"summary": "patterns only (the learned model is off: COMPACTION_INJECTION_MODEL, --no-model)"}
    path = injection_model.weights_path()
    size = path.stat().st_size
    return {
        "summary": (
            f"hashed character {injection_model.ORDERS[0]}-{injection_model.ORDERS[-1]}-grams, "
            f"{1 << injection_model.BITS:,} weights, linear; {path.name} {size / 1024:.0f} KiB"
        ),
        "file_bytes": size,
        "weights": 1 << injection_model.BITS,
        "threshold": model.threshold,
        "pair_threshold": model.pair_threshold,
    }
