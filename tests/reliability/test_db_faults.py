"""A database connection lost in the middle of a compaction or a scan: the
transaction rolls back, nothing half-written remains, the lease expires and
the next attempt succeeds.

On PostgreSQL the backend is terminated from another connection with
pg_terminate_backend (what a restart or a failover does to a session); on
SQLite the connection is closed under Django's feet.
"""

import hashlib

import psycopg
import pytest
from django.db import InterfaceError, OperationalError, ProgrammingError, connection
from django.db.models.signals import post_save
from django.utils import timezone
from django_q.models import OrmQ

from chatcore.errors import Conflict
from chatcore.models import Message, Summary
from compaction import conf
from compaction.leases import lease_acquire, lease_release
from compaction.models import CompactionLease
from compaction.scanner.services import scan_run
from compaction.services import channel_compact
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory
from tests.compaction.factories import converse
from tests.compaction.scanning import auto_settings, pressured_channel

LOST = (OperationalError, InterfaceError, ProgrammingError)


def _terminate(db: dict, pid: int) -> None:
    """End the PostgreSQL session `pid` from a connection of our own, as an administrator would."""
    with psycopg.connect(
        dbname=db["NAME"],
        user=db["USER"],
        password=db["PASSWORD"] or None,
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        autocommit=True,
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def lose_connection() -> None:
    """Kill this thread's database session the way the outside world would."""
    if connection.vendor == "postgresql":
        _terminate(connection.settings_dict, connection.connection.info.backend_pid)
    else:
        connection.connection.close()


class OneShot:
    """Lose the connection the first time a row of `model` is saved (inside the writing transaction)."""

    def __init__(self, model):
        self.model, self.fired = model, False

    def __call__(self, sender, **kwargs):
        if not self.fired:
            self.fired = True
            lose_connection()

    def __enter__(self):
        post_save.connect(self, sender=self.model, weak=False)
        return self

    def __exit__(self, *exc):
        post_save.disconnect(self, sender=self.model)


def reconnect() -> None:
    connection.close()  # what Django does at the end of a request whose connection broke


def fingerprint(channel) -> list[str]:
    return [
        hashlib.sha256(f"{m.pk}|{m.parent_id}|{m.content}|{m.path_tokens}".encode()).hexdigest()
        for m in Message.objects.filter(channel=channel).order_by("pk")
    ]


@pytest.fixture
def short_lease(settings):
    settings.COMPACTION_LEASE_SECONDS = 60


def let_lease_expire(channel) -> None:
    """The lease's time runs out (without waiting a minute for it)."""
    CompactionLease.objects.filter(channel=channel).update(expires_at=timezone.now())


def test_connection_lost_while_writing_the_summary(transactional_db, utility_model, llm_server, user, short_lease):
    channel = ChannelFactory(owner=user)
    converse(channel, 14)
    before = fingerprint(channel)
    channel.refresh_from_db()
    pressure = (channel.context_tokens, channel.context_messages)
    llm_server.default = Reply(content="The ledger moved to PostgreSQL 16; deploy error E1042 is tracked.")

    with OneShot(Summary) as hook, pytest.raises(LOST):
        channel_compact(channel=channel, actor=user)
    assert hook.fired
    reconnect()

    # The summary row was never committed and the messages are as they were.
    assert not Summary.objects.filter(channel=channel).exists()
    assert fingerprint(channel) == before
    channel.refresh_from_db()
    assert (channel.context_tokens, channel.context_messages) == pressure
    # Django dropped the broken connection; the lease was given back on a fresh
    # one, with the cause, so the next attempt does not even wait for the expiry.
    lease = CompactionLease.objects.get(channel=channel)
    assert (lease.holder, lease.expires_at, lease.last_outcome, lease.failure_count) == ("", None, "failed", 1)
    assert any(word in lease.last_error for word in ("terminat", "closed", "connection")), lease.last_error
    result = channel_compact(channel=channel, actor=user)
    assert Summary.objects.filter(channel=channel).count() == 1 and result.summary is not None
    lease.refresh_from_db()
    assert (lease.holder, lease.expires_at, lease.last_outcome) == ("", None, "done")
    assert fingerprint(channel) == before


def test_a_dead_holders_lease_expires_and_the_work_is_retried(
    transactional_db, utility_model, llm_server, user, short_lease
):
    """A worker killed while holding the lease never gives it back: others are
    refused until it expires, then one of them compacts, once."""
    channel = ChannelFactory(owner=user)
    converse(channel, 14)
    llm_server.default = Reply(content="A short summary of the ledger discussion.")
    assert lease_acquire(channel_id=channel.pk, holder="dead-worker:1", seconds=conf.LEASE_SECONDS)

    with pytest.raises(Conflict) as busy:
        channel_compact(channel=channel, actor=user)
    assert busy.value.code == "in_progress"
    assert not Summary.objects.filter(channel=channel).exists()
    assert CompactionLease.objects.filter(channel=channel).exists()
    let_lease_expire(channel)
    channel_compact(channel=channel, actor=user)
    assert Summary.objects.filter(channel=channel).count() == 1
    # The dead holder, had it woken up, could no longer release or write.
    assert lease_release(channel_id=channel.pk, holder="dead-worker:1", outcome="done") is False


def test_connection_lost_while_the_model_is_answering(transactional_db, utility_model, llm_server, user, short_lease):
    """The connection dies while no transaction is open (during the model call):
    the write finds it gone, nothing is written, and since the release finds it
    gone too, the lease is freed by its expiry."""
    channel = ChannelFactory(owner=user)
    converse(channel, 14)
    before = fingerprint(channel)
    pid_holder = {}

    def responder(request):
        pid_holder["done"] = True
        return Reply(content="A short summary of the ledger discussion.")

    if connection.vendor == "postgresql":
        connection.ensure_connection()
        pid = connection.connection.info.backend_pid
        db = connection.settings_dict

        def responder(request):  # noqa: F811  (runs in the server's thread: kill the worker's session)
            _terminate(db, pid)
            pid_holder["done"] = True
            return Reply(content="A short summary of the ledger discussion.")
    else:
        original = connection.connection

        def responder(request):  # noqa: F811
            original.close()
            pid_holder["done"] = True
            return Reply(content="A short summary of the ledger discussion.")

    llm_server.responder = responder
    with pytest.raises(LOST):
        channel_compact(channel=channel, actor=user)
    assert pid_holder.get("done")
    reconnect()
    llm_server.responder = None
    llm_server.default = Reply(content="A short summary of the ledger discussion.")

    assert not Summary.objects.filter(channel=channel).exists()
    assert fingerprint(channel) == before
    # The release ran on the dead connection too: the lease stays held until it expires...
    lease = CompactionLease.objects.get(channel=channel)
    assert lease.holder and lease.expires_at is not None
    with pytest.raises(Conflict) as busy:
        channel_compact(channel=channel, actor=user)
    assert busy.value.code == "in_progress"
    # ...then the next attempt takes it over and writes exactly one summary.
    let_lease_expire(channel)
    channel_compact(channel=channel, actor=user)
    assert Summary.objects.filter(channel=channel).count() == 1
    assert fingerprint(channel) == before


def test_connection_lost_during_a_scan(transactional_db):
    auto_settings(concurrency=10)
    channels = [pressured_channel() for _ in range(3)]
    assert not CompactionLease.objects.exists()

    with OneShot(CompactionLease) as hook, pytest.raises(LOST):
        scan_run()
    assert hook.fired
    reconnect()

    # The scan's transaction rolled back: no reservation, no task enqueued.
    assert not CompactionLease.objects.exists()
    assert not OrmQ.objects.exists()
    report = scan_run()
    assert sorted(report.enqueued) == sorted(c.pk for c in channels)
    assert CompactionLease.objects.filter(last_auto_at__isnull=False).count() == 3
    assert OrmQ.objects.count() == 3
