"""Throughput: automatic compaction of many channels through real qcluster workers.

A database of its own (PostgreSQL when the project runs on it, else an
SQLite file) is migrated by `manage.py migrate` in a child process, then
filled with `channels` channels over their threshold (12 messages each,
written in bulk with the same running totals as the service writes). The
utility model points at the loopback server, which answers every call after
a fixed latency L. For each concurrency c, a fresh qcluster (c + 1 workers,
short poll) is started, one scan task is enqueued, and the clock runs until
the last summary is written. The scanner hands out at most c compactions at a
time and each finished compaction refills its slot, so the limit is c / L
compactions per second.
"""

import datetime
import os
import time
import uuid
from pathlib import Path

from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.db import connections
from django.db.models import Count, Max
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.conf import Conf
from django_q.models import OrmQ, Task
from django_q.tasks import async_task

from chatcore import conf as chatcore_conf
from chatcore.models import AuditEntry, Channel, Cursor, LLMModel, Message, ModelRole, Summary, UsageEntry
from chatcore.services import message_tree_fields
from chatcore.tokens import count_tokens
from compaction import conf
from compaction.models import CompactionLease, CompactionSettings
from devtools.benchmarks.databases import database_close, database_open
from devtools.loopback_llm import LoopbackLLM, Reply, loopback_env
from devtools.processes import QClusters, database_url

ALIAS = "compaction_bench_tp"
LATENCY = 1.0
CONCURRENCIES = (1, 2, 4)
MESSAGES = 12
SUMMARY = (
    "## Goal\n- Keep the decisions of this conversation.\n## Progress\n- The deployment was planned.\n"
    "## Next steps\n- Review the checklist."
)
TOPICS = [
    "We chose PostgreSQL 16 for the ledger because of row-level locking.",
    "The deploy failed with error E1042: connection refused on port 5433.",
    "Please read src/ledger/settlement.py and config/deploy.yaml before Friday.",
    "The pool size went to 40 connections; the timeout stayed at 30 seconds.",
]


class _Broker(ORM):
    """The ORM broker, on the benchmark's database."""

    def get_connection(self, list_key: str = None):
        return OrmQ.objects.using(ALIAS)


def _reset() -> None:
    for model in (Summary, Cursor, Message, CompactionLease, UsageEntry, AuditEntry, Channel, OrmQ, Task):
        model.objects.using(ALIAS).all().delete()


def _fill(*, channels: int, concurrency: int, base_url: str) -> list[int]:
    """Channels over the threshold, their 12-message paths and cursors, in bulk."""
    db = ALIAS
    owner, _ = get_user_model().objects.using(db).get_or_create(username="bench-owner")
    utility, _ = LLMModel.objects.using(db).update_or_create(
        name="bench-utility",
        defaults={"base_url": base_url, "context_window": 8_000, "api_key_env": "", "max_output_tokens": 1_000},
    )
    chat, _ = LLMModel.objects.using(db).update_or_create(name="bench-chat", defaults={"context_window": 2_400})
    ModelRole.objects.using(db).update_or_create(role=ModelRole.Role.UTILITY, defaults={"primary": utility})
    CompactionSettings.objects.using(db).update_or_create(
        pk=1,
        defaults={
            "enabled": True,
            "concurrency": concurrency,
            "cooldown_minutes": 0,
            "idle_minutes": 0,
            "min_messages": 10,
            "min_new_messages": 8,
            "batch_size": 50,
            "hourly_budget": 1_000_000,
            "threshold": 0.70,
        },
    )
    rows = Channel.objects.using(db).bulk_create(
        Channel(owner=owner, title=f"Bench {index}", model=chat, context_budget=chat.context_window)
        for index in range(channels)
    )
    parents: list[Message | None] = [None] * channels
    for depth in range(MESSAGES):
        role = "user" if depth % 2 == 0 else "assistant"
        content = f"Turn {depth}. {TOPICS[depth % len(TOPICS)]} " + " ".join(f"item{depth}-{w}" for w in range(30))
        tokens = count_tokens(content) + chatcore_conf.MESSAGE_OVERHEAD_TOKENS
        parents = Message.objects.using(db).bulk_create(
            Message(
                channel=channel,
                parent=parent,
                role=role,
                content=content,
                **message_tree_fields(parent=parent, tokens=tokens, chars=len(content)),
            )
            for channel, parent in zip(rows, parents, strict=True)
        )
    Cursor.objects.using(db).bulk_create(
        Cursor(user=owner, channel=channel, leaf=leaf) for channel, leaf in zip(rows, parents, strict=True)
    )
    for channel, leaf in zip(rows, parents, strict=True):
        channel.context_tokens, channel.context_messages = leaf.path_tokens, MESSAGES
        channel.context_ratio = leaf.path_tokens / channel.context_budget
        channel.last_activity_at = timezone.now() - datetime.timedelta(minutes=5)
    Channel.objects.using(db).bulk_update(
        rows, ["context_tokens", "context_messages", "context_ratio", "last_activity_at"]
    )
    return [channel.pk for channel in rows]


def _round(*, server: LoopbackLLM, config: dict, channels: int, concurrency: int, latency: float) -> dict:
    _reset()
    logs = Path(django_settings.VAR_DIR) / "bench"
    ids = _fill(channels=channels, concurrency=concurrency, base_url=server.url)
    environment = {"DATABASE_URL": database_url(config), "Q_POLL_SECONDS": "0.05", "LOG_LEVEL": "WARNING"}
    environment |= loopback_env(dict(os.environ))
    clusters = QClusters(log_dir=logs, env={**os.environ, **environment, "Q_CLUSTER_NAME": Conf.PREFIX})
    name = f"throughput-c{concurrency}"
    clusters.start(name, Q_WORKERS=str(concurrency + 1))
    try:
        clusters.wait_running(name)
        started = timezone.now()
        async_task(conf.SCAN_TASK, broker=_Broker(list_key=Conf.PREFIX), task_name=f"bench-{uuid.uuid4().hex[:8]}")
        summaries = Summary.objects.using(ALIAS)
        seen, progressed = 0, time.monotonic()
        while seen < channels and time.monotonic() - progressed < 30 * latency + 30:
            if not clusters.alive(name):
                raise RuntimeError(f"qcluster exited: {clusters.tail(name)}")
            time.sleep(0.1)
            count = summaries.count()
            if count > seen:
                seen, progressed = count, time.monotonic()
        time.sleep(2 * latency)  # anything more would be a duplicate
    finally:
        clusters.stop_all()
    done = summaries.filter(channel_id__in=ids)
    finished = done.aggregate(last=Max("created_at"))["last"]
    elapsed = (finished - started).total_seconds() if finished else float("nan")
    per_channel = set(done.values("channel_id").annotate(n=Count("id")).values_list("n", flat=True))
    compacted = done.count()
    rate = compacted / elapsed if finished else 0.0
    limit = concurrency / latency
    return {
        "concurrency": concurrency,
        "channels": channels,
        "compacted": compacted,
        "summaries_per_channel": sorted(per_channel),
        "seconds": round(elapsed, 2),
        "per_second": round(rate, 3),
        "limit_per_second": round(limit, 3),
        "share_of_limit": round(rate / limit, 3),
    }


def run(*, scale: float, stdout) -> dict:
    channels = max(8, int(200 * scale))
    stdout.write(
        f"throughput: automatic compaction of {channels} channels through qcluster, model latency "
        f"{LATENCY:g} s, {connections['default'].vendor}\n"
    )
    config = database_open(ALIAS)
    rows = []
    try:
        with LoopbackLLM(
            default=Reply(content=SUMMARY, delay=LATENCY, prompt_tokens=1_000, completion_tokens=40)
        ) as server:
            for concurrency in CONCURRENCIES:
                row = _round(server=server, config=config, channels=channels, concurrency=concurrency, latency=LATENCY)
                rows.append(row)
                stdout.write(f"  c={concurrency}: {row['compacted']}/{channels} in {row['seconds']} s\n")
    finally:
        database_close(ALIAS, config)
    stdout.write(
        f"\n  {'concurrency':>11}  {'compacted':>9}  {'seconds':>8}  {'per second':>10}  {'limit c/L':>9}  "
        f"{'share':>6}  {'per channel':>11}\n"
    )
    for row in rows:
        stdout.write(
            f"  {row['concurrency']:>11}  {row['compacted']:>9}  {row['seconds']:>8.2f}  "
            f"{row['per_second']:>10.3f}  {row['limit_per_second']:>9.3f}  {row['share_of_limit']:>6.1%}  "
            f"{str(row['summaries_per_channel']):>11}\n"
        )
    stdout.write("  (seconds: from enqueuing one scan task to the last summary written; goal: share >= 90%)\n")
    return {
        "latency": LATENCY,
        "rounds": rows,
        "goals": {
            "share_at_least_90": all(row["share_of_limit"] >= 0.9 for row in rows),
            "exactly_once": all(row["summaries_per_channel"] == [1] for row in rows),
        },
    }
