"""The context of the work in hand: the request (or task) id, the user and the channel where known.

One mutable object per request or task, held in a context variable: a value set in a thread that
`sync_to_async` started is seen by the event loop's code and back, since both hold the same object.
Log records read it (`logs.RequestContextFilter`), the model calls send its id upstream
(`llm_attempt.Attempt.headers`), tasks carry it (`tasks`).
"""

import contextvars
import dataclasses
import re
import time
import uuid

REQUEST_ID_MAX_CHARS = 128  # longer ids are a proxy's misuse or an attack on log storage: a new one is made
# What an id taken from outside may hold: the characters of UUIDs, hashes and the usual tracing ids.
REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9._:@/+=-]+")


@dataclasses.dataclass
class WorkContext:
    request_id: str
    user_id: int | None = None
    channel_id: int | None = None
    started: float = dataclasses.field(default_factory=time.monotonic)
    model_seconds: float = 0.0  # time spent waiting for models (llm_attempt.record adds each attempt's)


_current: contextvars.ContextVar[WorkContext | None] = contextvars.ContextVar("chatcore_work_context", default=None)


def request_id_new() -> str:
    return uuid.uuid4().hex


def request_id_valid(value: str) -> bool:
    return 0 < len(value) <= REQUEST_ID_MAX_CHARS and REQUEST_ID_PATTERN.fullmatch(value) is not None


def work_begin(*, request_id: str | None = None) -> WorkContext:
    """A new context for a request or a task (the given id if it is usable, else a new one)."""
    context = WorkContext(request_id=request_id if request_id and request_id_valid(request_id) else request_id_new())
    _current.set(context)
    return context


def work_end() -> None:
    _current.set(None)


def current() -> WorkContext | None:
    return _current.get()


def current_request_id() -> str:
    context = _current.get()
    return context.request_id if context is not None else ""


def work_note(*, user_id: int | None = None, channel_id: int | None = None) -> None:
    """Who and which channel the work is about, once known (authentication, the view's arguments)."""
    context = _current.get()
    if context is None:
        return
    if user_id is not None:
        context.user_id = user_id
    if channel_id is not None:
        context.channel_id = channel_id


def model_time_add(seconds: float) -> None:
    context = _current.get()
    if context is not None:
        context.model_seconds += seconds
