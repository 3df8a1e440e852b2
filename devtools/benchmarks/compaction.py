"""The overhead of one compaction, apart from the model call.

One compaction of 50, 500 and 5,000 messages (times the scale) through
`channel_compact`, exactly as the API and the scanner call it: resolve the
profile, take the lease, load the path after the boundary, redact, build
the transcript, summarize, validate, pin facts, write the summary, usage
and audit rows, move the pressure, release the lease.

Two ways of summarizing, each reported with and without the summarizer:
- offline: the built-in extractive summarizer (what a fresh install runs).
  Its own time is measured apart, on the same transcript, and subtracted:
  it is the stand-in for the model, not overhead.
- loopback: the utility role pointed at the OpenAI-compatible loopback
  server answering at once with a summary of the same size; the call's
  time as the gateway records it (UsageEntry.duration_ms: HTTP, JSON of the
  whole transcript, the server) is subtracted.

The query count must not depend on the number of messages: the path is one
recursive query, the writes are a fixed handful.
"""

import statistics
import time
import uuid
from contextlib import contextmanager

from django.contrib.auth import get_user_model
from django.db import connection, transaction

from chatcore import services as chatcore_services
from chatcore.bulk import NewMessage, messages_bulk_import
from chatcore.collector import collector_paused
from chatcore.models import AuditEntry, Channel, Cursor, LLMModel, Message, ModelRole, Summary, UsageEntry
from compaction.safety.injection import injection_cache_clear
from compaction.services import channel_compact
from compaction.summarizers.offline import summarize_offline
from compaction.transcript import transcript_items
from devtools import redaction_eval
from devtools.calibration import calibration_ms
from devtools.loopback_llm import LoopbackLLM, Reply

SIZES = (50, 500, 5_000)
# The goals: one compaction of GOAL_MESSAGES messages (about 1 MB) in at most this much CPU, in calibration units
# (devtools.calibration): with the offline summarizer, and with a model (the loopback server, its call included).
GOAL_OFFLINE_CAL = 5.0
GOAL_LOOPBACK_CAL = 2.0
GOAL_MESSAGES = 5_000
KEEP_RECENT = 10
MAX_SUMMARY_TOKENS = 1_000
REPEATS = 3
# Larger than any path here, so the whole stretch fits one request and the
# compaction covers every message asked for.
UTILITY_WINDOW = 10_000_000

_TOPICS = (
    "the release plan",
    "the flaky login test",
    "the invoice export",
    "database migrations",
    "the onboarding flow",
    "rate limits",
    "the search index",
    "caching headers",
)


def _text(index: int) -> str:
    """Varied, realistic turns with the kinds of facts the pinning step looks for."""
    topic = _TOPICS[index % len(_TOPICS)]
    if index % 2 == 0:
        return (
            f"About {topic}: could you check src/app/module_{index % 37}.py and tell me why "
            f"job {1000 + index} failed on 2024-05-{index % 28 + 1:02d}? The log said "
            f"'TimeoutError after {index % 90 + 10} s' and ticket PRJ-{index} is still open."
        )
    return (
        f"I looked at {topic}. The failure in job {1000 + index - 1} comes from the retry loop in "
        f"src/app/module_{(index - 1) % 37}.py; we decided to raise the limit to {index % 50 + 5} "
        f"and to document it at https://example.com/docs/{index}. Next step: rerun the suite."
    )


def _path_build(*, channel: Channel, user, count: int) -> list[Message]:
    """A straight path of `count` messages, stored as the services store them (the bulk import: the same
    totals and hashes as appending one by one), and the owner's cursor on it."""
    roles = (Message.Role.USER, Message.Role.ASSISTANT)
    items = [
        NewMessage(role=roles[index % 2], content=_text(index), parent=index - 1 if index else None)
        for index in range(count)
    ]
    return messages_bulk_import(channel=channel, user=user, items=items)


@contextmanager
def _utility_role(model: LLMModel):
    """Point the utility role at `model` for the run, then put back what was there."""
    role = ModelRole.objects.filter(role=ModelRole.Role.UTILITY).first()
    saved = (role.primary_id, role.fallback_id) if role else None
    if role is None:
        role = ModelRole.objects.create(role=ModelRole.Role.UTILITY, primary=model)
    else:
        role.primary, role.fallback = model, None
        role.save(update_fields=["primary", "fallback"])
    try:
        yield
    finally:
        if saved is None:
            role.delete()
        else:
            role.primary_id, role.fallback_id = saved
            role.save(update_fields=["primary", "fallback"])


def _compact_once(*, channel: Channel, user, expected: int) -> tuple[float, int, Summary, float, float]:
    """(seconds, queries, summary, model call seconds, CPU seconds of this process) of one compaction."""
    started_usage = UsageEntry.objects.filter(channel=channel).values_list("pk", flat=True).order_by("-pk").first()
    executed: list[str] = []

    def count(execute, sql, params, many, context):
        executed.append(sql)
        return execute(sql, params, many, context)

    # Counted by a wrapper: the debug query log is capped and may be full already.
    injection_cache_clear()  # a compaction's messages are new to the worker: nothing checked before
    with connection.execute_wrapper(count):
        started, cpu_started = time.perf_counter(), time.process_time()
        result = channel_compact(
            channel=channel, actor=user, keep_recent=KEEP_RECENT, max_summary_tokens=MAX_SUMMARY_TOKENS
        )
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    if result.summarized_count != expected:
        raise RuntimeError(f"compaction covered {result.summarized_count} messages, expected {expected}")
    call_ms = sum(
        UsageEntry.objects.filter(channel=channel, pk__gt=started_usage or 0).values_list("duration_ms", flat=True)
    )
    return elapsed, len(executed), result.summary, call_ms / 1000, cpu


def _measure(*, channel: Channel, user, expected: int, repeats: int) -> dict:
    """Median of `repeats` compactions of the same stretch; each is reverted (not timed) before the next."""
    times, calls, counts, cpus = [], [], [], []
    for _ in range(repeats):
        elapsed, queries, summary, call, cpu = _compact_once(channel=channel, user=user, expected=expected)
        cpus.append(cpu)
        times.append(elapsed)
        calls.append(call)
        counts.append(queries)
        chatcore_services.summary_revert(summary=summary, actor=user)
    return {
        "seconds": statistics.median(times),
        "cpu_seconds": statistics.median(cpus),
        "call_seconds": statistics.median(calls),
        "queries": max(counts),
        "summary_tokens": summary.tokens,
    }


def _summarizer_seconds(messages: list[Message], repeats: int) -> tuple[float, str]:
    """The offline summarizer alone on the same transcript: the part that stands in for the model. Timed with the
    collector paused, as a compaction runs it (compaction.services.summarize): left on, its full collections walk
    every object of the process and would count in the summarizer what a compaction never spends."""
    items = transcript_items(messages)
    times = []
    text = ""
    for _ in range(repeats):
        injection_cache_clear()
        with collector_paused():
            started = time.perf_counter()
            text = summarize_offline(items=items, previous_summary=None, focus="", max_tokens=MAX_SUMMARY_TOKENS)
            times.append(time.perf_counter() - started)
    return statistics.median(times), text


def _cleanup(*, user, models: list[LLMModel]) -> None:
    channels = list(Channel.objects.filter(owner=user).values_list("pk", flat=True))
    with transaction.atomic():
        UsageEntry.objects.filter(channel_id__in=channels).delete()
        AuditEntry.objects.filter(actor=user).delete()
        Cursor.objects.filter(channel_id__in=channels).delete()
        Summary.objects.filter(channel_id__in=channels).delete()
        Message.objects.filter(channel_id__in=channels).update(parent=None)
        Message.objects.filter(channel_id__in=channels).delete()
        Channel.objects.filter(pk__in=channels).delete()
        user.delete()
        for model in models:
            model.delete()


def run(*, scale: float, stdout) -> dict:
    sizes = sorted({max(6, round(size * scale)) for size in SIZES})
    repeats = REPEATS if scale >= 0.1 else 1
    tag = uuid.uuid4().hex[:8]
    user = get_user_model().objects.create(username=f"bench-compaction-{tag}")
    offline = LLMModel.objects.create(
        name=f"bench-offline-{tag}",
        provider=LLMModel.Provider.OFFLINE,
        api_key_env="",
        context_window=UTILITY_WINDOW,
        max_output_tokens=4_096,
    )
    rows = []
    server = LoopbackLLM()
    server.start()
    loopback = LLMModel.objects.create(
        name=f"bench-loopback-{tag}",
        provider=LLMModel.Provider.OPENAI,
        base_url=server.url,
        api_key_env="",  # the loopback server takes any key
        context_window=UTILITY_WINDOW,
        max_output_tokens=4_096,
    )
    try:
        for size in sizes:
            channel = chatcore_services.channel_create(owner=user, title=f"compaction bench {size}")
            messages = _path_build(channel=channel, user=user, count=size + KEEP_RECENT)
            summarizer, summary_text = _summarizer_seconds(messages[:size], repeats)
            if size == sizes[0]:
                # Untimed: the first call imports the model client and the secret detectors.
                for model in (offline, loopback):
                    with _utility_role(model):
                        _measure(channel=channel, user=user, expected=size, repeats=1)
            with _utility_role(offline):
                offline_run = _measure(channel=channel, user=user, expected=size, repeats=repeats)
            # The loopback model answers at once with a summary as long as the offline one.
            server.default = Reply(content=summary_text)
            with _utility_role(loopback):
                loopback_run = _measure(channel=channel, user=user, expected=size, repeats=repeats)
            rows.append(
                {
                    "messages": size,
                    "offline_total_ms": offline_run["seconds"] * 1000,
                    "offline_summarizer_ms": summarizer * 1000,
                    "offline_overhead_ms": max(offline_run["seconds"] - summarizer, 0) * 1000,
                    "offline_queries": offline_run["queries"],
                    "loopback_total_ms": loopback_run["seconds"] * 1000,
                    "loopback_call_ms": loopback_run["call_seconds"] * 1000,
                    "loopback_overhead_ms": max(loopback_run["seconds"] - loopback_run["call_seconds"], 0) * 1000,
                    "loopback_queries": loopback_run["queries"],
                    "summary_tokens": offline_run["summary_tokens"],
                    "offline_cpu_ms": offline_run["cpu_seconds"] * 1000,
                    "loopback_cpu_ms": loopback_run["cpu_seconds"] * 1000,
                }
            )
    finally:
        server.stop()
        _cleanup(user=user, models=[offline, loopback])

    queries = {row["offline_queries"] for row in rows} | {row["loopback_queries"] for row in rows}
    figures = {
        "keep_recent": KEEP_RECENT,
        "max_summary_tokens": MAX_SUMMARY_TOKENS,
        "repeats": repeats,
        "rows": rows,
        "queries_flat": len({row["offline_queries"] for row in rows}) == 1
        and len({row["loopback_queries"] for row in rows}) == 1,
        "queries_min": min(queries),
        "queries_max": max(queries),
    }
    stdout.write(
        f"compaction: one compaction of N messages (+{KEEP_RECENT} kept), median of {repeats}; "
        f"overhead = total minus the summarizer (offline) or minus the model call (loopback, no latency)\n"
    )
    header = (
        f"  {'N':>6}{'offline total':>16}{'summarizer':>14}{'overhead':>14}{'queries':>9}"
        f"{'loopback total':>16}{'model call':>14}{'overhead':>14}{'queries':>9}\n"
    )
    stdout.write(header)

    def ms(value: float, width: int) -> str:
        return f"{value:,.1f} ms".rjust(width)

    for row in rows:
        stdout.write(
            f"  {row['messages']:>6,}{ms(row['offline_total_ms'], 16)}{ms(row['offline_summarizer_ms'], 14)}"
            f"{ms(row['offline_overhead_ms'], 14)}{row['offline_queries']:>9}"
            f"{ms(row['loopback_total_ms'], 16)}{ms(row['loopback_call_ms'], 14)}"
            f"{ms(row['loopback_overhead_ms'], 14)}{row['loopback_queries']:>9}\n"
        )
    stdout.write(
        f"  query count {'flat' if figures['queries_flat'] else 'NOT flat'} across sizes "
        f"({figures['queries_min']}–{figures['queries_max']})\n"
    )
    figures["redaction"] = _redaction_speed(scale)
    speed = figures["redaction"]
    stdout.write(
        f"  redaction: {speed['batch_ms_per_mb']:.1f} ms per MB of this chat text as a compaction redacts it "
        f"({speed['messages']:,} messages, {speed['megabytes']} MB, redact_many; "
        f"{speed['single_text_ms_per_mb']:.1f} ms per MB as one text), CPU time, best of {REDACTION_RUNS}\n"
    )
    _cpu_table(rows, stdout)
    return figures


REDACTION_RUNS = redaction_eval.SPEED_RUNS


def _redaction_speed(scale: float) -> dict:
    """Redaction of about 1 MB (times the scale) of the benchmark's own chat text, the messages `_text` writes."""
    size = max(20_000, int(redaction_eval.SPEED_BYTES * min(scale, 1.0)))
    texts: list[str] = []
    total = 0
    while total < size:
        texts.append(_text(len(texts)))
        total += len(texts[-1]) + 1
    return redaction_eval.speed(texts)


def _cpu_table(rows: list[dict], stdout) -> None:
    """CPU time of this process (Python, the ORM, SQLite in process; the PostgreSQL server's work apart), with the
    goal beside it (earlier runs' figures are on the scenario's docs page, compared in calibration units)."""
    stdout.write(f"  {'N':>6}{'offline CPU':>16}{'loopback CPU':>16}   (CPU of one compaction, model call included)\n")
    for row in rows:
        stdout.write(f"  {row['messages']:>6,}{row['offline_cpu_ms']:>13,.1f} ms{row['loopback_cpu_ms']:>13,.1f} ms\n")
    row = next((row for row in rows if row["messages"] == GOAL_MESSAGES), None)
    if row is not None:
        unit = calibration_ms()
        for label, key, goal in (
            ("offline summarizer", "offline_cpu_ms", GOAL_OFFLINE_CAL),
            ("a model (loopback)", "loopback_cpu_ms", GOAL_LOOPBACK_CAL),
        ):
            cal = row[key] / unit
            stdout.write(
                f"  goal: <= {goal:g} cal of CPU at {GOAL_MESSAGES:,} messages with {label}: {row[key]:,.1f} ms = "
                f"{cal:.1f} cal at {unit:.1f} ms ({'met' if cal <= goal else 'NOT met'})\n"
            )
