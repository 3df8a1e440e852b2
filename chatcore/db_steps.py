"""The database steps of an async request: a thread that gives its pooled connections back as it returns.

Under the ASGI server a request's synchronous steps (`sync_to_async`) run in a thread of the request's own,
and Django keeps that thread's connection until the request ends: for a streamed reply, until the model's
last token, a second or more during which the connection serves nothing. With a connection pool
(`OPTIONS["pool"]`, see DB_POOL in docs/deploy.md) each stream then holds one of the pool's few
connections while it waits on the network, the pool runs dry at its size in concurrent streams, and every
request beyond waits for a stream to end before it can read its first row. `db_step` runs a step and hands
the thread's pooled connections back as it returns, so a connection is held only while a step uses it; the
next step takes one again from the pool (no new connection, no statement). A connection inside a
transaction (`atomic`) is kept, as is one that is not pooled, whose reopening would cost a new connection.

A step is handed to the request's thread as `sync_to_async` hands it (the same thread, the context copied
there and its changes copied back, the same cancellation), but with one future instead of asgiref's three
(its executor's future, the asyncio future wrapping it and `shield`'s), paid on every step of every reply.
Outside a request's thread (no `ThreadSensitiveContext`, or under `async_to_sync`) asgiref's own call runs.
"""

import asyncio
import contextvars
import functools
import os
import sys
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import AsyncToSync, SyncToAsync, sync_to_async
from asgiref.sync import _restore_context as restore_context
from django.db import connections

P = ParamSpec("P")
R = TypeVar("R")


def pooled_connections_release() -> None:
    """Give this thread's pooled connections back to their pools (those outside a transaction)."""
    for connection in connections.all(initialized_only=True):
        if (
            connection.connection is not None
            and getattr(connection, "pool", None) is not None
            and not connection.in_atomic_block
        ):
            connection.close()


def db_step(function: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """`sync_to_async(function)` (in the request's thread), its pooled connections given back when it returns."""

    @functools.wraps(function)
    def step(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        finally:
            pooled_connections_release()

    asgiref_step = sync_to_async(step)

    @functools.wraps(function)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        executor = _request_executor()
        if executor is None:
            return await asgiref_step(*args, **kwargs)
        return await _in_thread(executor, step, args, kwargs)

    return call


def _request_executor() -> Executor | None:
    """The request's thread, where `sync_to_async` would run a step; None where it would look elsewhere (under
    `async_to_sync`, outside a `ThreadSensitiveContext` or after it ended: its own call then decides or fails)."""
    if getattr(AsyncToSync.executors, "current", None) is not None:
        return None
    owner = SyncToAsync.thread_sensitive_context.get(None)
    if owner is None:
        return None
    return SyncToAsync.context_to_thread_executor.get(owner)


async def _in_thread(executor: Executor, step: Callable[..., R], args: Any, kwargs: Any) -> R:
    """`SyncToAsync.__call__` for a step in the request's thread, with a single future: the loop's, set from
    the thread."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    outcome: asyncio.Future[R] = loop.create_future()
    task_context: list[asyncio.Task[Any]] = []
    handling = sys.exc_info()[1]

    def run() -> None:
        # What asgiref's thread handler records for an `async_to_sync` inside the step.
        local = SyncToAsync.threadlocal
        local.main_event_loop = loop
        local.main_event_loop_pid = os.getpid()
        local.task_context = task_context
        try:
            if handling is None:
                result = context.run(_restored, context, step, args, kwargs)
            else:  # run inside the caller's `except` block, as asgiref does, so that sys.exc_info() is the same
                try:
                    raise handling
                except BaseException:
                    result = context.run(_restored, context, step, args, kwargs)
        except BaseException as error:
            loop.call_soon_threadsafe(_fail, outcome, error)
        else:
            loop.call_soon_threadsafe(_succeed, outcome, result)

    work = executor.submit(run)
    try:
        return await outcome
    except asyncio.CancelledError:
        # asgiref's: a task the step started in the loop (`async_to_sync`) is cancelled and awaited; a step
        # that has not started never runs; one that runs is not waited for.
        if task_context:
            task = task_context[0]
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        work.cancel()
        raise
    finally:
        restore_context(context)


def _restored(context: contextvars.Context, step: Callable[..., R], args: Any, kwargs: Any) -> R:
    restore_context(context)  # the context's Local storage moved to this thread, as asgiref does
    return step(*args, **kwargs)


def _succeed(outcome: asyncio.Future[Any], result: Any) -> None:
    if not outcome.done():
        outcome.set_result(result)


def _fail(outcome: asyncio.Future[Any], error: BaseException) -> None:
    if not outcome.done():
        outcome.set_exception(error)
