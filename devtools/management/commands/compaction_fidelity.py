"""python manage.py compaction_fidelity FILE... [--ratio 5] [--keep-recent 10] [--profile SLUG] [--dump DIR] [--json]

For each LoCoMo conversation: import it as a channel, compact it once
through the compaction service (the summary limited to the conversation's
tokens ÷ ratio, the newest `keep_recent` turns kept), and measure the
supported-answer rate (devtools.fidelity) of three contexts, each as the
model would receive it (context_assemble): the whole conversation (the
ceiling), the compacted context (summary + kept turns) and a truncation
baseline that keeps only the newest turns fitting the compacted context's
token count. Retention is a rate divided by the ceiling.

A compacted context can support a question that the whole conversation
does not: the conversation's dates are in the messages' metadata, not in
their text, while a summary writes them out ("7 May 2023"). So the table
also gives "of ceiling": the share of the questions the whole conversation
supports that the compacted context supports too, the part of retention
that is kept content rather than added dates.

The ratio is the one measured: when the summarizing model's window cannot
take the whole stretch in one request, the service summarizes what fits and
leaves the rest as messages; the command then compacts again (an iterative
update, as the product does) until only the `keep_recent` turns are left,
and reports the number of passes.

With `--recall K`, each of the ceiling's questions also gets the compacted
context plus the top K results of the channel's search for the question's
text (`compaction.recall.recall_search`, the service behind `GET
/api/channels/{id}/search/?q=…&limit=K`; each result's `content`, the hit
with its neighbouring turns, is one line): the share of the ceiling's
questions supported with recall is printed beside the summary-only figure,
and so is the share the results support alone.

Everything runs inside a transaction rolled back at the end, so the
database is left as it was (`--keep` keeps the channels instead).
The model is whatever the utility role resolves to: the offline summarizer
on a fresh install, or a configured model.
"""

from __future__ import annotations

import json
import pathlib
import time

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from chatcore.context import context_assemble
from chatcore.errors import ServiceError, Unprocessable
from chatcore.throttling import expensive_calls_exempt
from compaction.imports import conversation_import
from compaction.recall import recall_search
from devtools import fidelity

BENCH_USERNAME = "fidelity-bench"
MAX_PASSES = 50


class _Rollback(Exception):
    pass


def _lines(assembled) -> list[str]:
    messages = []
    summary_index = None
    if assembled.summary is not None:
        summary_index = next(i for i, m in enumerate(assembled.messages) if m["role"] == "user")
    for index, message in enumerate(assembled.messages):
        if message["role"] == "system":
            continue
        messages.append({**message, "summary": index == summary_index})
    return fidelity.context_lines(messages)


def _supported(questions: list[fidelity.Question], lines: list[str], names: frozenset[str]) -> set[int]:
    """Which questions (by position) a context supports."""
    words = [fidelity.metric_words(line, names) for line in lines if line.strip()]
    return {index for index, question in enumerate(questions) if fidelity.is_supported(question, words)}


def _recall(
    channel, owner, questions: list[fidelity.Question], names: frozenset[str], summary_lines, full_lines, k: int
) -> dict:
    """The summary (and kept turns) plus the top `k` results of the channel's search for each question's text.

    The results come from `compaction.recall.recall_search` with the API's defaults, the same as
    `GET /api/channels/{id}/search/?q=<question>&limit=<k>`: each result's `content` is one line
    (the hit with its neighbouring turns, as a model would read it).
    """
    if not k:
        return {}
    ceiling = _supported(questions, full_lines, names)
    summary_words = [fidelity.metric_words(line, names) for line in summary_lines if line.strip()]
    with_summary, alone = set(), set()
    for index, question in enumerate(questions):
        if index not in ceiling:
            continue  # only the ceiling's questions are counted here
        try:
            found = recall_search(channel=channel, user=owner, query=question.question, limit=k)
        except ValidationError:
            continue  # nothing searchable in the question (only common words)
        lines = fidelity.context_lines([{"content": result.content} for result in found.results])
        words = [fidelity.metric_words(line, names) for line in lines]
        if fidelity.is_supported(question, words):
            alone.add(index)
        if index in alone or fidelity.is_supported(question, summary_words):
            with_summary.add(index)
    return {
        "k": k,
        "questions": len(ceiling),
        "with_summary": len(with_summary),
        "alone": len(alone),
        "of_ceiling": round(len(with_summary) / len(ceiling), 4) if ceiling else 0.0,
        "alone_of_ceiling": round(len(alone) / len(ceiling), 4) if ceiling else 0.0,
    }


def _truncation_lines(assembled, budget: int) -> tuple[list[str], int]:
    """The newest messages whose tokens fit `budget`, as the model would see them."""
    kept, used = [], 0
    for message in reversed(assembled.path):
        cost = message.tokens
        if used + cost > budget:
            break
        kept.append(message)
        used += cost
    kept.reverse()
    return fidelity.context_lines([{"content": m.content} for m in kept]), used


class Command(BaseCommand):
    help = "Measure how much of LoCoMo conversations a compacted context still supports (see devtools.fidelity)."

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+")
        parser.add_argument("--ratio", type=float, default=5.0, help="Summary budget = conversation tokens ÷ ratio.")
        parser.add_argument("--keep-recent", type=int, default=10)
        parser.add_argument("--profile", default=None, help="Compaction profile slug.")
        parser.add_argument("--dump", default=None, help="Directory for each compacted context as plain lines.")
        parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
        parser.add_argument("--keep", action="store_true", help="Keep the imported channels (default: roll back).")
        parser.add_argument(
            "--recall",
            type=int,
            default=0,
            metavar="K",
            help="Also measure the summary plus the top K results of the channel's search for each question.",
        )

    def handle(self, *args, **options):
        from compaction.services import channel_compact

        if options["ratio"] <= 1:
            raise CommandError("--ratio must be greater than 1.")
        if not 0 <= options["recall"] <= 50:
            raise CommandError("--recall must be between 0 and 50.")
        dump = pathlib.Path(options["dump"]) if options["dump"] else None
        if dump:
            dump.mkdir(parents=True, exist_ok=True)
        rows = []
        for path in options["files"]:
            try:
                data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
            except (OSError, ValueError) as error:
                raise CommandError(f"Cannot read {path}: {error}") from None
            row = {}
            try:
                # Pass after pass of compaction on purpose: not a person's calls, so not under their limit.
                with transaction.atomic(), expensive_calls_exempt():
                    row = self._measure(path, data, options, channel_compact, dump)
                    if not options["keep"]:
                        raise _Rollback
            except _Rollback:
                pass
            except (ValidationError, ServiceError) as error:
                message = getattr(error, "message", None) or "; ".join(getattr(error, "messages", [str(error)]))
                raise CommandError(f"{path}: {message}") from None
            rows.append(row)
        total = self._total(rows)
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "ratio": options["ratio"],
                        "keep_recent": options["keep_recent"],
                        "recall": options["recall"],
                        "conversations": rows,
                        "total": total,
                    },
                    indent=2,
                )
            )
        else:
            self._table(rows, total, options)

    def _measure(self, path: str, data: dict, options: dict, channel_compact, dump) -> dict:
        owner, _ = get_user_model().objects.get_or_create(username=BENCH_USERNAME)
        name = pathlib.Path(path).name
        channel = conversation_import(owner=owner, data=data, format="locomo", title=f"LoCoMo {name}")
        questions = fidelity.locomo_questions(data)
        names = fidelity.speaker_words(data["speaker_a"], data["speaker_b"])

        full = context_assemble(channel=channel, user=owner)
        budget = max(50, min(32_000, int(full.tokens // options["ratio"])))
        started = time.monotonic()
        summarized, passes = 0, 0
        while passes < MAX_PASSES:
            try:
                result = channel_compact(
                    channel=channel,
                    actor=owner,
                    trigger="manual",
                    profile_slug=options["profile"],
                    keep_recent=options["keep_recent"],
                    max_summary_tokens=budget,
                )
            except Unprocessable:
                if passes:
                    break  # what is left is the kept turns (a tool result never parts from its call)
                raise
            summarized += result.summarized_count
            passes += 1
            compacted = context_assemble(channel=channel, user=owner)
            if len(compacted.path) <= options["keep_recent"]:
                break
        seconds = time.monotonic() - started
        compacted_lines = _lines(compacted)
        truncated_lines, _ = _truncation_lines(full, compacted.tokens)

        full_lines = _lines(full)
        ceiling = fidelity.supported_rate(questions, full_lines, names)
        compact = fidelity.supported_rate(questions, compacted_lines, names)
        both = len(_supported(questions, full_lines, names) & _supported(questions, compacted_lines, names))
        truncation = fidelity.supported_rate(questions, truncated_lines, names)
        recall = _recall(channel, owner, questions, names, compacted_lines, full_lines, options["recall"])
        if dump:
            (dump / f"{pathlib.Path(path).stem}.txt").write_text("\n".join(compacted_lines) + "\n", encoding="utf-8")
        return {
            "conversation": name,
            "messages": len(full.path),
            "questions": len(questions),
            "measured": ceiling.measured,
            "tokens_before": full.tokens,
            "tokens_after": compacted.tokens,
            "summary_budget": budget,
            "summary_tokens": compacted.tokens - sum(m.tokens for m in compacted.path),
            "summarized": summarized,
            "passes": passes,
            "model": result.model,
            "seconds": round(seconds, 3),
            "supported": {
                "ceiling": ceiling.supported,
                "compacted": compact.supported,
                "truncation": truncation.supported,
                "compacted_and_ceiling": both,
            },
            "rate": {
                "ceiling": round(ceiling.rate, 4),
                "compacted": round(compact.rate, 4),
                "truncation": round(truncation.rate, 4),
            },
            "retention": {
                "compacted": round(compact.rate / ceiling.rate, 4) if ceiling.rate else 0.0,
                "truncation": round(truncation.rate / ceiling.rate, 4) if ceiling.rate else 0.0,
                "of_ceiling": round(both / ceiling.supported, 4) if ceiling.supported else 0.0,
            },
            **({"recall": recall} if recall else {}),
        }

    @staticmethod
    def _total(rows: list[dict]) -> dict:
        measured = sum(r["measured"] for r in rows)
        supported = {
            key: sum(r["supported"][key] for r in rows)
            for key in ("ceiling", "compacted", "truncation", "compacted_and_ceiling")
        }
        rate = {
            key: round(supported[key] / measured, 4) if measured else 0.0
            for key in ("ceiling", "compacted", "truncation")
        }
        return {
            "messages": sum(r["messages"] for r in rows),
            "questions": sum(r["questions"] for r in rows),
            "measured": measured,
            "tokens_before": sum(r["tokens_before"] for r in rows),
            "tokens_after": sum(r["tokens_after"] for r in rows),
            "supported": supported,
            "rate": rate,
            "retention": {
                key: round(supported[source] / supported["ceiling"], 4) if supported["ceiling"] else 0.0
                for key, source in (
                    ("compacted", "compacted"),
                    ("truncation", "truncation"),
                    ("of_ceiling", "compacted_and_ceiling"),
                )
            },
        }

    @staticmethod
    def _recall_total(rows: list[dict]) -> dict | None:
        if not rows or "recall" not in rows[0]:
            return None
        ceiling = sum(r["supported"]["ceiling"] for r in rows)
        sums = {key: sum(r["recall"][key] for r in rows) for key in ("with_summary", "alone", "questions")}
        return {
            "k": rows[0]["recall"]["k"],
            **sums,
            "of_ceiling": round(sums["with_summary"] / ceiling, 4) if ceiling else 0.0,
            "alone_of_ceiling": round(sums["alone"] / ceiling, 4) if ceiling else 0.0,
        }

    def _table(self, rows: list[dict], total: dict, options: dict) -> None:
        write = self.stdout.write
        write(
            f"LoCoMo fidelity — ratio {options['ratio']:g}×, keep recent {options['keep_recent']}, "
            f"model {rows[0]['model'] if rows else '-'}"
        )
        header = (
            f"{'conversation':<14}{'questions':>10}{'tokens before → after':>26}{'ceiling':>9}"
            f"{'compacted':>11}{'truncation':>12}{'retention':>11}{'trunc. ret.':>13}{'of ceiling':>12}"
        )
        write(header)
        write("-" * len(header))
        recall_total = self._recall_total(rows)
        if recall_total:
            total = {**total, "recall": recall_total}
        for row in [*rows, {**total, "conversation": "TOTAL"}]:
            tokens = f"{row['tokens_before']:,} → {row['tokens_after']:,}"
            write(
                f"{row['conversation']:<14}{row['measured']:>10}{tokens:>26}{row['rate']['ceiling']:>9.3f}"
                f"{row['rate']['compacted']:>11.3f}{row['rate']['truncation']:>12.3f}"
                f"{row['retention']['compacted']:>11.3f}{row['retention']['truncation']:>13.3f}"
                f"{row['retention']['of_ceiling']:>12.3f}"
                + (
                    f"   + recall {row['recall']['k']}: of ceiling {row['recall']['of_ceiling']:.3f}"
                    f" (recall alone {row['recall']['alone_of_ceiling']:.3f})"
                    if "recall" in row
                    else ""
                )
            )
        write(
            "Supported: one line of the context holds every content word of the answer and one of the question "
            "(categories 1-4; questions without a content word in the answer are not measured)."
        )
        write(
            "Of ceiling: the share of the questions the whole conversation supports that the compacted context "
            "supports too (a summary can also support questions the whole conversation does not, by writing "
            "out dates)."
        )
