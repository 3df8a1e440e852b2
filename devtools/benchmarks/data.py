"""Throwaway conversations for benchmarks, built fast and removed afterwards.

A benchmark channel belongs to a user made for the run; its messages go in
through the bulk importer with token counts precomputed once per text (so a
hundred thousand messages take seconds, not minutes), and everything is
deleted with plain DELETE statements at the end, even on failure.
"""

import contextlib
import statistics
import time
import uuid
from collections.abc import Callable, Iterator

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Q

from chatcore import services
from chatcore.bulk import NewMessage, messages_bulk_import
from chatcore.models import AuditEntry, Channel, Cursor, Message, Summary
from chatcore.search.schema import FTS_TABLE

TEXTS = [
    (
        "user",
        "The deploy of build {n} failed on step 4 with 'connection refused' from the database. "
        "What should I check first?",
    ),
    (
        "assistant",
        "Check that the database host in RELAY_DB_URL resolves from the pod, then whether the pool "
        "limit (currently 20) was reached during the migration that ran at step {n}.",
    ),
    ("user", "It resolves. The pool was at 20 of 20 for about 90 seconds."),
    (
        "assistant",
        "Then the migration held connections while the new pods started. Run migrations as a job "
        "before the rollout, and set the pool's max overflow to 5 so that readiness checks still pass.",
    ),
]


# From this many messages removed by a run, SQLite's full-text index is rewritten afterwards (`_fulltext_compacted`).
SQLITE_COMPACT_FROM_MESSAGES = 1_000


def _fulltext_compacted() -> None:
    """SQLite: the full-text index rewritten as one segment (FTS5's 'optimize'), without the words of the
    messages a run removed. Their deletion leaves FTS5 a segment of markers per removed row that stays
    until a merge reaches the segments that hold those words, and the next run's large import reached
    them in its first chunks' settling (chatcore.search.schema): the same import on a database an
    earlier run had used settled several times slower in its first chunks, so its time and its growth
    depended on the runs before it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [FTS_TABLE])
        if cursor.fetchone() is not None:
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')")


class BenchData:
    """Owner of the throwaway rows of one benchmark run."""

    def __init__(self, label: str) -> None:
        User = get_user_model()
        self.user = User.objects.create(username=f"bench-{label}-{uuid.uuid4().hex[:8]}", is_active=False)
        self.channels: list[Channel] = []
        self._sizes = [services.message_size(content=text, metadata=None) for _, text in TEXTS]

    def channel(self, *, title: str = "benchmark") -> Channel:
        """An empty channel of the run's user, removed with the rest."""
        channel = services.channel_create(owner=self.user, title=title)
        self.channels.append(channel)
        return channel

    def chain(self, count: int, *, title: str = "benchmark") -> tuple[Channel, list[Message]]:
        """One channel whose active path is a chain of `count` messages."""
        channel = self.channel(title=title)
        items = []
        for index in range(count):
            role, text = TEXTS[index % len(TEXTS)]
            content = text.format(n=index)
            tokens = self._sizes[index % len(TEXTS)][0]
            items.append(NewMessage(role=role, content=content, parent=index - 1 if index else None, tokens=tokens))
        messages = messages_bulk_import(channel=channel, user=self.user, items=items)
        channel.refresh_from_db()
        # Fresh statistics, as autovacuum would have gathered on a live table.
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {Message._meta.db_table}")
        return channel, messages

    @transaction.atomic
    def cleanup(self) -> None:
        ids = [channel.pk for channel in self.channels]
        Cursor.objects.filter(channel_id__in=ids).delete()
        Channel.objects.filter(pk__in=ids).update(branched_from_summary=None)
        Summary.objects.filter(channel_id__in=ids).update(previous=None)
        Summary.objects.filter(channel_id__in=ids)._raw_delete(connection.alias)
        removed = Message.objects.filter(channel_id__in=ids)._raw_delete(connection.alias)
        AuditEntry.objects.filter(Q(resource__in=[f"channel:{pk}" for pk in ids]) | Q(actor=self.user)).delete()
        Channel.objects.filter(pk__in=ids).delete()
        self.user.delete()
        if connection.vendor == "sqlite" and removed >= SQLITE_COMPACT_FROM_MESSAGES:
            _fulltext_compacted()


@contextlib.contextmanager
def bench_data(label: str) -> Iterator[BenchData]:
    data = BenchData(label)
    try:
        yield data
    finally:
        data.cleanup()


def time_budget(scale: float) -> float:
    """Seconds of repeated runs per figure: short for the tiny scales tests use."""
    return 0.5 if scale >= 0.1 else 0.02


def measure(
    action: Callable[[], object],
    *,
    budget_seconds: float = 0.5,
    min_runs: int = 5,
    max_runs: int = 200,
    warmups: int = 1,
) -> tuple[float, int]:
    """Median milliseconds of `action` after warming up, and the queries one call runs."""
    for _ in range(warmups):
        action()
    executed = []

    def count(execute, sql, params, many, context):
        executed.append(1)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):  # no cap, unlike the debug query log
        action()
    timings = []
    started = time.perf_counter()
    while len(timings) < max_runs and (len(timings) < min_runs or time.perf_counter() - started < budget_seconds):
        begin = time.perf_counter()
        action()
        timings.append((time.perf_counter() - begin) * 1000)
    return statistics.median(timings), len(executed)


def measure_rounds(actions: dict, *, rounds: int, **kwargs) -> dict:
    """Measure each action in turn, `rounds` times over, keeping each one's best median.

    Interleaving spreads any drift in the machine's load over every action
    alike, so that the ratios between them stay meaningful on a busy machine.
    """
    best: dict = {}
    for _ in range(rounds):
        for key, action in actions.items():
            milliseconds, queries = measure(action, **kwargs)
            if key not in best or milliseconds < best[key][0]:
                best[key] = (milliseconds, queries)
    return best
