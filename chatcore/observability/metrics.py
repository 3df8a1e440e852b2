"""The substrate's Prometheus metrics, each incremented at the one place its event happens:

- model calls (`llm_attempt.record`, where every attempt's usage row is written): `llm_calls_total`,
  `llm_call_duration_seconds`, `llm_tokens_total`, `llm_fallbacks_total`;
- replies (`streaming.reply_events` / `reply_complete` and the gateway's turns, which say which
  interface asked): `chat_replies_total`, `reply_server_seconds`;
- search (`search.message_search`): `search_queries_total`, `search_duration_seconds`;
- throttling (`throttling.expensive_call`): `throttled_total`.

prometheus_client keeps them per process; with PROMETHEUS_MULTIPROC_DIR set before the first import
(the project's serve and run scripts do it) every process writes its values to files there, and the
metrics endpoint adds them up across the web workers and the task cluster.
"""

import functools
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from prometheus_client import Counter, Histogram

from chatcore.observability.context import current

# Model calls last from a fraction of a second to the client timeout (a minute by default).
LLM_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
# What the server adds around a model (database, context assembly, tools): milliseconds to seconds.
SERVER_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# A search of one user's messages: milliseconds, a second at worst.
SEARCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

llm_calls = Counter("llm_calls", "Model call attempts, by model, role and outcome.", ["model", "role", "outcome"])
llm_call_duration = Histogram(
    "llm_call_duration_seconds", "Duration of one model call attempt.", ["model", "role"], buckets=LLM_BUCKETS
)
llm_tokens = Counter("llm_tokens", "Tokens the providers reported, by model and direction.", ["model", "direction"])
llm_fallbacks = Counter("llm_fallbacks", "Attempts made on a role's fallback model.", ["role"])

chat_replies = Counter(
    "chat_replies", "Replies asked for, by interface, streaming and outcome.", ["interface", "stream", "outcome"]
)
reply_server_seconds = Histogram(
    "reply_server_seconds",
    "Time a reply spent in the server outside the model calls (from the request's start to the reply's end).",
    ["interface"],
    buckets=SERVER_BUCKETS,
)

search_queries = Counter("search_queries", "Message searches run.")
search_duration = Histogram("search_duration_seconds", "Duration of one message search.", buckets=SEARCH_BUCKETS)

throttled = Counter("throttled", "Requests refused by the limit on model calls, by interface.", ["interface"])


P = ParamSpec("P")
R = TypeVar("R")


def search_observed(search: Callable[P, R]) -> Callable[P, R]:
    """Counts and times each call of the search service it decorates."""

    @functools.wraps(search)
    def observed(*args: P.args, **kwargs: P.kwargs) -> R:
        search_queries.inc()
        with search_duration.time():
            return search(*args, **kwargs)

    return observed


class Outcome:
    OK = "ok"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


def llm_attempt_observed(
    *, model: str, role: str, ok: bool, seconds: float, tokens_in: int, tokens_out: int, fallback: bool
) -> None:
    llm_calls.labels(model=model, role=role, outcome=Outcome.OK if ok else Outcome.FAILED).inc()
    llm_call_duration.labels(model=model, role=role).observe(seconds)
    if tokens_in:
        llm_tokens.labels(model=model, direction="prompt").inc(tokens_in)
    if tokens_out:
        llm_tokens.labels(model=model, direction="completion").inc(tokens_out)
    if fallback:
        llm_fallbacks.labels(role=role).inc()


def reply_observed(*, interface: str, stream: bool, outcome: str) -> None:
    """A reply ended: counted, and the server's own share of its time observed (the request's time so
    far less the time its model calls took; outside a request, only counted)."""
    chat_replies.labels(interface=interface, stream="true" if stream else "false", outcome=outcome).inc()
    context = current()
    if context is not None:
        spent = time.monotonic() - context.started - context.model_seconds
        reply_server_seconds.labels(interface=interface).observe(max(0.0, spent))
