"""Another writer holding a channel while the test's own write waits for it (PostgreSQL's row locks)."""

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

from django.db import connection, transaction

T = TypeVar("T")

# How long the other writer keeps its transaction open once the body has started: long enough that the body's
# write is waiting for the channel's lock by then.
HOLD_SECONDS = 0.5
WAIT_SECONDS = 5


@contextlib.contextmanager
def held_meanwhile(write: Callable[[], T]) -> Iterator[list[T]]:
    """Run `write` in a transaction of another thread and keep it open until `HOLD_SECONDS` into the body, so
    that the body's write waits for its locks and then sees what it committed; yields `[write's result]`."""
    locked, release, results = threading.Event(), threading.Event(), []

    def hold() -> None:
        try:
            with transaction.atomic():
                results.append(write())
                locked.set()
                release.wait(WAIT_SECONDS)
        finally:
            connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert locked.wait(WAIT_SECONDS)
    threading.Timer(HOLD_SECONDS, release.set).start()
    try:
        yield results
    finally:
        thread.join(WAIT_SECONDS)
