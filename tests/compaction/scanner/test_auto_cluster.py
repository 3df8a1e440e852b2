"""Automatic compaction through real `qcluster` processes, the ORM broker and the loopback model server.

The test database is shared with the worker processes (data committed by
`transactional_db`); they find it through DATABASE_URL.
"""

import os
import time

import pytest
from django.db import connection
from django_q.tasks import async_task

from chatcore.models import Message, Summary
from compaction import conf
from compaction.models import CompactionLease
from compaction.scanner.services import scan_run
from devtools.loopback_llm import Reply, loopback_env
from devtools.processes import QClusters, database_url
from tests.compaction.scanning import auto_settings, pressured_channel

pytestmark = [pytest.mark.slow]

SUMMARY = "## Goal\n- Keep the decisions of this conversation.\n## Progress\n- Many messages exchanged."


@pytest.fixture
def clusters(transactional_db, tmp_path):
    environment = {"DATABASE_URL": database_url(connection.settings_dict), "Q_WORKERS": "2", "Q_POLL_SECONDS": "0.1"}
    environment |= loopback_env(dict(os.environ))  # the loopback model, allowed by name whatever DEBUG says
    running = QClusters(log_dir=tmp_path, env={**os.environ, **environment, "LOG_LEVEL": "INFO"})
    yield running
    running.stop_all(grace=10)


@pytest.fixture
def auto_model(transactional_db, llm_server, utility_model):
    llm_server.default = Reply(content=SUMMARY, delay=0.3)
    return utility_model


def wait_for(condition, *, timeout: float, every: float = 0.25, action=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if action is not None:
            action()
        time.sleep(every)
    return condition()


def test_two_clusters_compact_every_channel_exactly_once(clusters, auto_model, llm_server):
    auto_settings(concurrency=3, cooldown_minutes=0, idle_minutes=0)
    channels = [pressured_channel(messages=12 + index % 3) for index in range(8)]
    messages = list(Message.objects.order_by("id").values_list("id", "channel_id", "content"))
    clusters.start("a")
    clusters.start("b")

    def scan_burst():
        for _ in range(3):
            async_task(conf.SCAN_TASK)
        scan_run(source="test")

    done = wait_for(lambda: Summary.objects.count() >= len(channels), timeout=60, every=0.5, action=scan_burst)
    assert done, clusters.logs()
    wait_for(lambda: False, timeout=2, every=0.5, action=scan_burst)  # keep scanning: nothing more may happen
    clusters.stop_all()

    per_channel = sorted(Summary.objects.values_list("channel_id", flat=True))
    assert per_channel == sorted(c.pk for c in channels), clusters.logs()
    assert set(Summary.objects.values_list("trigger", flat=True)) == {"auto"}
    assert list(Message.objects.order_by("id").values_list("id", "channel_id", "content")) == messages
    leases = CompactionLease.objects.filter(channel__in=channels)
    assert sorted(leases.values_list("last_outcome", "failure_count", "holder")) == [("done", 0, "")] * len(channels)
    assert len(llm_server.requests) == len(channels)


def test_a_worker_killed_mid_compaction_leaves_the_work_to_the_other_after_the_lease_expires(
    clusters, auto_model, llm_server, settings
):
    # Short but nested timeouts: model call 3 s x 2 models < task 8 s < retry 10 s < lease 12 s.
    short = {
        "COMPACTION_LEASE_SECONDS": "12",
        "Q_RETRY_SECONDS": "10",
        "Q_TASK_TIMEOUT_SECONDS": "8",
        "LLM_TIMEOUT_SECONDS": "3",
        "LLM_MAX_RETRIES": "0",
    }
    settings.COMPACTION_LEASE_SECONDS = 12
    auto_settings(concurrency=1, cooldown_minutes=0, idle_minutes=0)
    channel = pressured_channel()
    messages = list(Message.objects.order_by("id").values_list("id", "content"))
    llm_server.script(Reply(content=SUMMARY, delay=2.5))  # the first call is slow: the worker dies in it

    clusters.start("doomed", **short)
    async_task(conf.SCAN_TASK)
    assert wait_for(lambda: len(llm_server.requests) == 1, timeout=30), clusters.logs()
    held = CompactionLease.objects.get(pk=channel.pk)
    assert held.holder and held.expires_at is not None
    clusters.kill("doomed")

    clusters.start("survivor", **short)
    done = wait_for(lambda: Summary.objects.exists(), timeout=45, every=1.0, action=lambda: async_task(conf.SCAN_TASK))
    assert done, clusters.logs()
    wait_for(lambda: False, timeout=2, every=0.5, action=lambda: async_task(conf.SCAN_TASK))
    clusters.stop_all()

    summary = Summary.objects.get()
    assert summary.channel_id == channel.pk and summary.trigger == "auto"
    assert summary.created_at >= held.expires_at
    assert len(llm_server.requests) == 2
    lease = CompactionLease.objects.get(pk=channel.pk)
    assert (lease.last_outcome, lease.holder) == ("done", "")
    assert list(Message.objects.order_by("id").values_list("id", "content")) == messages
