"""Usage dashboard: the staff page's queries over 1,000,000 usage rows.

In a database of its own (created, migrated and dropped here; PostgreSQL or
SQLite, whichever DATABASE_URL names), SQL generates in bulk a year of
activity: `scale` × 1,000,000 usage rows (three quarters of them the
summarizing role's, about 6% failed, durations spread over 0.3 to 5.3 s,
triggers manual/auto/gateway) and one summary per ten usage rows, over
2,000 channels. Then `usage_dashboard()` runs for the last 30 days, the last
year, and the last year filtered by persona and model; each figure is the
median of 5 runs after a warm-up, with the number of queries it took (the
same whatever the range: a test asserts it too).
"""

import statistics
import time
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chatcore.models import Channel, Message, Persona, Summary, UsageEntry
from chatcore.services import message_tree_fields
from compaction.dashboard import Filters, usage_dashboard
from compaction.models import CompactionSettings
from devtools.benchmarks.databases import database_close, database_open

ALIAS = "dashboard_bench"
USAGE_ROWS = 1_000_000
CHANNELS = 2_000
DAYS = 365
RUNS = 5

USAGE_COLUMNS = {
    "user_id": "NULL",
    "channel_id": "{channel}",
    "role": "CASE WHEN i % 4 = 0 THEN 'chat' ELSE 'utility' END",
    "model": "CASE WHEN i % 3 = 0 THEN 'gpt-4o-mini' ELSE 'offline' END",
    "input_tokens": "9000",
    "output_tokens": "900",
    "cost": "0.0004",
    "trigger": "CASE i % 3 WHEN 0 THEN 'manual' WHEN 1 THEN 'auto' ELSE 'gateway' END",
    "success": "{success}",
    "error": "CASE WHEN i % 17 = 0 THEN 'timeout: the model did not answer in time' ELSE '' END",
    "duration_ms": "300 + ((i % 5000) * 7919) % 5000",
    "created_at": "{when}",
}
SUMMARY_COLUMNS = {
    "channel_id": "{channel}",
    "through_message_id": "{message}",
    "previous_id": "NULL",
    "content": "'Earlier: the plan.'",
    "tokens": "120",
    "trigger": "CASE i % 3 WHEN 0 THEN 'manual' WHEN 1 THEN 'auto' ELSE 'gateway' END",
    "profile_slug": "'structured'",
    "model": "CASE WHEN i % 3 = 0 THEN 'gpt-4o-mini' ELSE 'offline' END",
    "used_fallback": "{false}",
    "input_tokens": "9000",
    "output_tokens": "900",
    "tokens_before": "9000 + i % 1000",
    "tokens_after": "1200",
    "messages_covered": "40",
    "extracts": "'{{}}'",
    "purged_quotes": "'{{}}'",
    "edited": "{false}",
    "reverted_at": "CASE WHEN i % 20 = 0 THEN {when} ELSE NULL END",
    "created_by_id": "NULL",
    "created_at": "{when}",
}


def _series_sql(vendor: str, table: str, columns: dict[str, str], *, rows: int, base: dict[str, int]) -> str:
    """INSERT ... SELECT over i = 1..rows (generate_series, or a recursive CTE on SQLite)."""
    minutes = DAYS * 1440
    if vendor == "postgresql":
        when = f"now() - (i % {minutes}) * interval '1 minute'"
        values = {"success": "(i % 17 <> 0)", "false": "false"}
        source = f"FROM generate_series(1, {rows}) AS s(i)"
        prefix = ""
    else:
        when = f"strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || (i % {minutes}) || ' minutes')"
        values = {"success": "(i % 17 <> 0)", "false": "0"}
        source = "FROM s"
        prefix = f"WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {rows}) "
    values.update(
        when=when,
        channel=f"{base['channel']} + i % {CHANNELS}",
        message=f"{base['message']} + i % {CHANNELS}",
    )
    names = ", ".join(columns)
    expressions = ", ".join(expression.format(**values) for expression in columns.values())
    if vendor == "postgresql":
        return f"INSERT INTO {table} ({names}) SELECT {expressions} {source}"
    return f"INSERT INTO {table} ({names}) {prefix}SELECT {expressions} {source}"


def _generate(*, rows: int) -> tuple[int, str]:
    """Channels with one message each (ORM, in bulk), then the usage rows and summaries (SQL)."""
    owner = User.objects.db_manager(ALIAS).create_user(username="bench", password=None)
    persona = Persona.objects.using(ALIAS).create(name="Bench", slug="bench")
    channels = Channel.objects.using(ALIAS).bulk_create(
        Channel(
            owner=owner,
            title=f"Bench {i}",
            persona=persona if i % 2 else None,
            context_tokens=i % 100 * 80,
            context_budget=8_000,
            context_ratio=(i % 100) / 100,
        )
        for i in range(CHANNELS)
    )
    now = timezone.now()
    messages = Message.objects.using(ALIAS).bulk_create(
        Message(
            channel=channel,
            role="user",
            content="x",
            created_at=now,
            **message_tree_fields(parent=None, tokens=5, chars=1),
        )
        for channel in channels
    )
    base = {"channel": min(c.pk for c in channels), "message": min(m.pk for m in messages)}
    vendor = connections[ALIAS].vendor
    with connections[ALIAS].cursor() as cursor:
        cursor.execute(_series_sql(vendor, UsageEntry._meta.db_table, USAGE_COLUMNS, rows=rows, base=base))
        cursor.execute(_series_sql(vendor, Summary._meta.db_table, SUMMARY_COLUMNS, rows=rows // 10, base=base))
        cursor.execute("ANALYZE")
    return persona.pk, vendor


def _measure(filters: Filters, settings: CompactionSettings) -> tuple[float, int]:
    """Median milliseconds of RUNS calls after a warm-up, and the queries one call made."""
    usage_dashboard(filters=filters, settings=settings)
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        usage_dashboard(filters=filters, settings=settings)
        times.append((time.perf_counter() - started) * 1000)
    with CaptureQueriesContext(connections[ALIAS]) as queries:
        usage_dashboard(filters=filters, settings=settings)
    return statistics.median(times), len(queries)


def run(*, scale: float, stdout) -> dict:
    rows = max(1_000, int(USAGE_ROWS * scale))
    config = database_open(ALIAS)
    try:
        started = time.perf_counter()
        persona_id, vendor = _generate(rows=rows)
        generated_s = time.perf_counter() - started
        settings = CompactionSettings(threshold=0.7)
        today = timezone.now().date()
        cases = {
            "last 30 days": Filters(start=today - timedelta(days=29), end=today, using=ALIAS),
            "last 365 days": Filters(start=today - timedelta(days=364), end=today, using=ALIAS),
            "365 days, persona + model": Filters(
                start=today - timedelta(days=364), end=today, persona_id=persona_id, model="offline", using=ALIAS
            ),
        }
        figures: dict = {"usage_rows": rows, "summaries": rows // 10, "database": vendor, "generate_s": generated_s}
        stdout.write(
            f"dashboard: {rows:,} usage rows, {rows // 10:,} summaries, {CHANNELS:,} channels on {vendor} "
            f"(generated in {generated_s:.1f} s)\n"
        )
        stdout.write(f"  {'range':<28} {'median ms':>10} {'queries':>8}\n")
        for name, filters in cases.items():
            ms, queries = _measure(filters, settings)
            figures[name] = {"ms": round(ms, 1), "queries": queries}
            stdout.write(f"  {name:<28} {ms:>10.1f} {queries:>8}\n")
        return figures
    finally:
        database_close(ALIAS, config)
