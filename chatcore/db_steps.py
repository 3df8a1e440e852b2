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
"""

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
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

    return sync_to_async(step)
