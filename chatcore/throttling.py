"""One per-user limit on the operations that call a model, kept by the services themselves.

A limit kept by each interface leaks: the pages once skipped the API's throttle
entirely. So the services that start model work open `expensive_call(user=...)`
before they write anything: a reply (`chatcore.replies.reply_prepare`: pages,
API, `reply_generate`), a gateway turn (`compaction.gateway.services.turn_prepare`),
a manual compaction or its preview (`compaction.services.channel_compact`), a
branch (`compaction.services.summary_branch`), and an import of conversations
(`compaction.imports.jobs.import_create`), which calls no model but reads and
writes as much as many replies. Pages, API, /v1, admin actions and
commands therefore all count against the same bucket, one per person; an
operation that contains another (a branch that drafts a summary, a gateway turn
that compacts first) counts once. Automatic compaction is nobody's request and
has its own hourly budget (the scanner), so it is not counted here.

The counters live in Django's default cache (the database cache, or Redis when
REDIS_URL is set), so every web process and machine shares them (invariant 13).
The rate is read from settings at each call (`CHATCORE_THROTTLE_EXPENSIVE_RATE`, e.g.
"30/min"; empty turns the limit off), so it can be changed per deployment and
per test without re-importing anything.
"""

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.contrib.auth.models import User
from django.core.cache import cache

from chatcore import conf
from chatcore.errors import Throttled

REFUSED_WHAT = "requests that call a model"
_PERIOD_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_PERIOD_WORDS = {1: "a second", 60: "a minute", 3600: "an hour", 86400: "a day"}

# True while an operation that was already counted (or is exempt) runs in this context.
_counted: ContextVar[bool] = ContextVar("expensive_call_counted", default=False)


def expensive_rate() -> tuple[int, int] | None:
    """(calls, seconds) allowed per person, or None when the limit is off."""
    rate = conf.THROTTLE_EXPENSIVE_RATE
    if not rate:
        return None
    calls, period = rate.split("/")
    return int(calls), _PERIOD_SECONDS[period[0]]


def bucket_key(user_id: int) -> str:
    """The cache key of a person's bucket (the key DRF's throttle used, so counters carry over)."""
    return f"throttle_expensive_user:{user_id}"


def expensive_call_admit(*, user: User, what: str = REFUSED_WHAT) -> None:
    """Count one operation against `user`, or raise Throttled (counting nothing) when the window is full;
    `what` names, in the refusal, the operations the limit counts (as the caller's person knows them).

    A sliding window: the cache holds the start times of the operations within
    the last period, newest first. Read-then-write, not atomic: two requests at
    the same instant may both pass the last free place, which a limit meant to
    stop runaway scripts can afford.
    """
    rate = expensive_rate()
    if rate is None:
        return
    calls, period = rate
    key, now = bucket_key(user.pk), time.time()
    history = [started for started in cache.get(key, []) if started > now - period]
    if len(history) >= calls:
        wait = max(1, math.ceil(history[-1] + period - now))
        raise Throttled(
            f"Too many {what}: at most {calls} {_PERIOD_WORDS[period]}. "
            f"Nothing was done; try again in {wait} second{'s' if wait != 1 else ''}.",
            retry_after=wait,
        )
    history.insert(0, now)
    cache.set(key, history, period)


@contextmanager
def expensive_call(*, user: User, what: str = REFUSED_WHAT) -> Iterator[None]:
    """Run one expensive operation of `user`: counted on entry (Throttled when over the limit),
    and only once however many counted services it goes through."""
    if _counted.get():
        yield
        return
    expensive_call_admit(user=user, what=what)
    token = _counted.set(True)
    try:
        yield
    finally:
        _counted.reset(token)


@contextmanager
def expensive_calls_exempt() -> Iterator[None]:
    """Operations inside are not counted: for the measuring tools (benchmarks, the fidelity
    run), which compact on purpose far faster than any person, and never for a request."""
    token = _counted.set(True)
    try:
        yield
    finally:
        _counted.reset(token)
