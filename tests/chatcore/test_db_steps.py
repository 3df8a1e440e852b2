"""`db_step`: a request's thread gives its pooled connection back when a step returns, so that a streamed
reply waiting on its model holds none (the serving benchmark's pool ran dry at its size in streams)."""

from collections.abc import Iterator

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import connection, connections, transaction

from chatcore.db_steps import db_step

POOLED = "db_steps_pooled"


@pytest.fixture
def pooled(django_db_setup, django_db_blocker) -> Iterator[str]:
    """A second alias on the test database, with a pool of one connection (PostgreSQL: the only backend
    Django pools). Outside a test case's transaction (which would refuse an alias it was not given):
    it only reads."""
    if connections["default"].vendor != "postgresql":
        pytest.skip("Django pools PostgreSQL connections only")
    settings = dict(connections.databases["default"])
    settings["OPTIONS"] = {**settings.get("OPTIONS", {}), "pool": {"min_size": 1, "max_size": 1, "timeout": 5}}
    connections.databases[POOLED] = settings
    try:
        with django_db_blocker.unblock():
            yield POOLED
            connections[POOLED].close()
            connections[POOLED].close_pool()
    finally:
        del connections.databases[POOLED]
        delattr(connections._connections, POOLED)


def _read(alias: str) -> int:
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT 1")
        return cursor.fetchone()[0]


def test_a_step_gives_its_pooled_connection_back(pooled):
    assert async_to_sync(db_step(_read))(pooled) == 1
    assert connections[pooled].connection is None
    assert connections[pooled].pool.get_stats()["pool_available"] == 1
    # The next step takes it again from the pool.
    assert async_to_sync(db_step(_read))(pooled) == 1


def test_a_plain_thread_hop_keeps_it(pooled):
    """What the step changes: without it the thread holds the pool's connection after the step."""
    async_to_sync(sync_to_async(_read))(pooled)
    assert connections[pooled].connection is not None
    assert connections[pooled].pool.get_stats()["pool_available"] == 0


def test_a_connection_inside_a_transaction_is_kept(pooled):
    with transaction.atomic(using=pooled):
        async_to_sync(db_step(_read))(pooled)
        assert connections[pooled].connection is not None
        assert connections[pooled].in_atomic_block


def test_an_unpooled_connection_is_kept(db):
    """Reopening a connection without a pool costs a new one (a backend process on PostgreSQL): kept."""

    def read() -> int:
        return _read("default")

    async_to_sync(db_step(read))()
    assert connection.connection is not None
