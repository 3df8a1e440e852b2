"""`db_step`: a request's thread gives its pooled connection back when a step returns, so that a streamed
reply waiting on its model holds none (the serving benchmark's pool ran dry at its size in streams)."""

import asyncio
import contextvars
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from asgiref.local import Local
from asgiref.sync import ThreadSensitiveContext, async_to_sync, sync_to_async
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


# In a request's thread (a ThreadSensitiveContext's executor, as the ASGI handler runs requests), db_step hands
# its step over itself; what the step sees and leaves behind must be what sync_to_async's would.
_seen: contextvars.ContextVar[str] = contextvars.ContextVar("db_steps_seen")
_local = Local()


def _in_request_thread(body: Callable[[ThreadPoolExecutor], Coroutine[Any, Any, Any]]) -> Any:
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="db-steps-request")

    async def request() -> Any:
        async with ThreadSensitiveContext(executor=executor):
            return await body(executor)

    try:
        return asyncio.run(request())
    finally:
        executor.shutdown()


@pytest.mark.parametrize("hop", ["db_step", "sync_to_async"])
def test_a_step_sees_and_leaves_the_context_as_sync_to_async(hop):
    def step(value: str) -> tuple[str, str, str, str]:
        seen = (threading.current_thread().name, _seen.get(), _local.before, sys.exc_info()[1].args[0])
        _seen.set(value)
        _local.after = value
        return seen

    wrap = db_step if hop == "db_step" else sync_to_async

    async def body(executor: ThreadPoolExecutor) -> tuple[Any, str, str]:
        _seen.set("before")
        _local.before = "local before"
        try:
            raise ValueError("handled")
        except ValueError:
            seen = await wrap(step)("changed")
        return seen, _seen.get(), _local.after

    (thread, before, local_before, handling), after, local_after = _in_request_thread(body)
    assert thread.startswith("db-steps-request")
    assert (before, local_before, handling, after, local_after) == (
        "before",
        "local before",
        "handled",
        "changed",
        "changed",
    )


def test_a_steps_error_reaches_the_caller():
    def step() -> None:
        raise LookupError("from the step")

    async def body(executor: ThreadPoolExecutor) -> str:
        try:
            await db_step(step)()
        except LookupError as error:
            return str(error)
        return "no error"

    assert _in_request_thread(body) == "from the step"


def test_a_cancelled_step_that_has_not_started_never_runs():
    ran: list[str] = []
    release = threading.Event()

    async def body(executor: ThreadPoolExecutor) -> bool:
        executor.submit(release.wait, 5)  # the request's thread busy meanwhile
        waiting = asyncio.ensure_future(db_step(ran.append)("ran"))
        await asyncio.sleep(0.01)
        waiting.cancel()
        try:
            await waiting
        except asyncio.CancelledError:
            cancelled = True
        else:
            cancelled = False
        release.set()
        await asyncio.get_running_loop().run_in_executor(executor, lambda: None)
        return cancelled

    assert _in_request_thread(body) is True
    assert ran == []
