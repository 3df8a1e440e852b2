"""One way to try the models of a call, for every model call in the product: the sync
`llm.llm_complete`, the awaited `llm_chat.allm_chat` and the streamed `llm_stream.ChatStream`.

A call walks its candidates in order (`role_models`: the role's primary then its fallback, or the
model asked for then the role's fallback). The offline provider ends the walk: each caller answers
offline its own way (a plain reply, or OfflineModel for a caller with an offline method of its
own). An error that `AttemptPolicy.failures` counts as the model's failure is described, logged
and recorded, and the next candidate is tried while the policy allows; when none answers,
ModelCallFailed carries every cause. Every attempt writes one usage row (`UsageEntry`) however it
ends, its cause cut to CAUSE_MAX_CHARS; none holds a database transaction open across the network.

The policy is read as each call starts (`policy`), so one change reaches every path. So do later
ones: who may use which models goes in `role_models`; counters and durations where a row is
recorded (`record`); request headers through the `Attempt` that every request builder receives.
"""

import dataclasses
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from decimal import Decimal
from typing import Any, Protocol, TypeVar

from django.contrib.auth.models import User

from chatcore import conf, selectors
from chatcore.db_steps import db_step
from chatcore.endpoints import EndpointRefused
from chatcore.errors import ModelCallFailed
from chatcore.models import Channel, LLMModel, UsageEntry
from chatcore.observability import metrics
from chatcore.observability.context import current_request_id, model_time_add

logger = logging.getLogger(__name__)

CAUSE_MAX_CHARS = 2_000  # a usage row keeps the cause, not a provider's whole error page
OFFLINE_CONTEXT_WINDOW = 128_000  # the stand-in when no role is set: no budget is read from it, so a large one


class MissingApiKey(ValueError):
    """The model's endpoint needs a key and its variable is not set: said plainly, before any network call."""


class AttemptPolicy:
    """How hard a call tries its models: each request within `timeout()` seconds with `max_retries()`
    of the client's own (bounded, with backoff; CHATCORE_LLM_TIMEOUT_SECONDS and CHATCORE_LLM_MAX_RETRIES),
    then after a failure of one of `failures()` the next candidate when `falls_back(error)`."""

    def timeout(self) -> float:
        return float(conf.LLM_TIMEOUT_SECONDS)

    def max_retries(self) -> int:
        return int(conf.LLM_MAX_RETRIES)

    def failures(self) -> tuple[type[BaseException], ...]:
        """What counts as the model failing (recorded, the next one tried) rather than a fault of ours:
        the client's errors; ValueError for an unusable answer (empty, too long, no choices) and for an
        endpoint refused or a key missing before any request; TypeError and AttributeError for a body
        of the wrong shape; StopAsyncIteration for a stream that ended before its first chunk."""
        import openai  # seconds to import: only once a model is called (see llm._cached_client)

        return (openai.OpenAIError, ValueError, TypeError, AttributeError, StopAsyncIteration)

    def falls_back(self, error: BaseException) -> bool:
        """Whether the next candidate is tried after this failure: always, whatever the cause."""
        return True


policy = AttemptPolicy()  # read as each call starts: replacing it changes the sync, awaited and streamed calls alike


def _offline_model() -> LLMModel:
    return LLMModel(name="offline", provider=LLMModel.Provider.OFFLINE, context_window=OFFLINE_CONTEXT_WINDOW)


def role_models(*, role: str, override: LLMModel | None = None, channel: Channel | None = None) -> list[LLMModel]:
    """Primary then fallback for a role; the offline provider when none is set. For a team's channel the
    team's own assignment of the role wins over the site's (`selectors.model_role_get`)."""
    team_id = channel.team_id if channel is not None else None
    # The chat role's row versions when the channel was read for a reply (selectors.channel_get): the role
    # as read before under them, without a statement.
    version = getattr(channel, "chat_role_version", None) if role == "chat" else None
    if override is not None:
        assigned = selectors.model_role_get(role=role, team_id=team_id, version=version)
        fallback = assigned.fallback if assigned and assigned.fallback_id != override.pk else None
        return [m for m in (override, fallback) if m is not None]
    assigned = selectors.model_role_get(role=role, team_id=team_id, version=version)
    if assigned is None:
        return [_offline_model()]
    return [m for m in (assigned.primary, assigned.fallback) if m is not None]


def model_cost(model: LLMModel, tokens_in: int, tokens_out: int) -> Decimal:
    million = Decimal(1_000_000)
    return (
        Decimal(tokens_in) * model.price_in_per_million + Decimal(tokens_out) * model.price_out_per_million
    ) / million


def _unset_key_hint(model: LLMModel | None) -> str:
    variable = model.api_key_env if model is not None else ""
    return f" ({variable} is not set)" if variable and not os.environ.get(variable) else ""


def _root_cause(error: BaseException) -> BaseException:
    """The first cause that says something: the async HTTP stack wraps a reset in exceptions with empty
    messages (httpx.ReadError('') from httpcore.ReadError('') from ConnectionResetError(104, ...))."""
    cause = error.__cause__ or error.__context__
    seen = 0
    while cause is not None and seen < 10:
        if str(cause):
            return cause
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return error.__cause__ or error


def failure_cause(error: BaseException, model: LLMModel | None = None) -> str:
    """A model's failure in words for a person; with `model`, a refused key names its unset variable."""
    import openai

    if isinstance(error, MissingApiKey | EndpointRefused):
        return str(error)
    if isinstance(error, StopAsyncIteration):
        return "the stream was empty"
    if isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
        return f"HTTP {error.status_code}: {error.message}{_unset_key_hint(model)}"
    if isinstance(error, openai.APITimeoutError):
        return "timeout: the model did not answer in time"
    if isinstance(error, openai.APIConnectionError):
        return f"connection: {_root_cause(error)}"
    if isinstance(error, openai.RateLimitError):
        retry_after = error.response.headers.get("retry-after") if error.response is not None else None
        return f"rate limited (429): {error.message}" + (f" (retry after {retry_after}s)" if retry_after else "")
    if isinstance(error, openai.APIStatusError):
        return f"HTTP {error.status_code}: {error.message}"
    if isinstance(error, json.JSONDecodeError):
        return f"invalid response: the body is not JSON ({error.msg})"
    return f"{type(error).__name__}: {error}"


def _upstream_status(error: BaseException) -> int | None:
    import openai

    return error.status_code if isinstance(error, openai.APIStatusError) else None


@dataclasses.dataclass
class Attempt:
    """One candidate tried: the model, its place among the candidates, the call's policy (which the
    client reads for its timeout and retries) and its usage row's fields."""

    model: LLMModel
    index: int
    policy: AttemptPolicy
    usage: dict[str, Any]
    started: float = dataclasses.field(default_factory=time.monotonic)

    @property
    def used_fallback(self) -> bool:
        return self.index > 0

    @property
    def offline(self) -> bool:
        return self.model.provider == LLMModel.Provider.OFFLINE

    def _elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def answered_row(self, *, input_tokens: int, output_tokens: int) -> dict[str, Any]:
        cost = model_cost(self.model, input_tokens, output_tokens)
        tokens = {"input_tokens": input_tokens, "output_tokens": output_tokens}
        return {**self.usage, **tokens, "cost": cost, "duration_ms": self._elapsed_ms()}

    def failed_row(self, cause: str) -> dict[str, Any]:
        return {**self.usage, "success": False, "error": cause[:CAUSE_MAX_CHARS], "duration_ms": self._elapsed_ms()}

    def offline_row(self) -> dict[str, Any]:
        return dict(self.usage)

    def headers(self) -> dict[str, str]:
        """Sent with the request: the id of the request (or task) that caused the call, so that the
        provider's or a proxy's logs (LiteLLM, vLLM) can be matched with ours."""
        request_id = current_request_id()
        return {"X-Request-ID": request_id} if request_id else {}


@dataclasses.dataclass(frozen=True)
class UsagePending:
    """An answered attempt's usage row not yet written: a caller that stores the answer writes it in the
    same statement (`replies.reply_store`), then `record_written` counts it."""

    attempt: Attempt
    row: dict[str, Any]

    def entry(self) -> UsageEntry:
        return UsageEntry(**self.row)


def record(attempt: Attempt, row: dict[str, Any]) -> None:
    """The one place an attempt's usage row is written, whichever path made it; and its metrics counted."""
    UsageEntry.objects.create(**row)
    record_written(attempt, row)


def record_written(attempt: Attempt, row: dict[str, Any]) -> None:
    """An attempt's metrics, once its usage row is written (by `record`, or with the answer it gave)."""
    if attempt.offline:
        return
    seconds = row.get("duration_ms", 0) / 1000
    model_time_add(seconds)
    metrics.llm_attempt_observed(
        model=attempt.model.name,
        role=str(row.get("role", "")),
        ok=row.get("success", True),
        seconds=seconds,
        tokens_in=row.get("input_tokens", 0),
        tokens_out=row.get("output_tokens", 0),
        fallback=attempt.used_fallback,
    )


async def arecord(attempt: Attempt, row: dict[str, Any]) -> None:
    await db_step(record)(attempt, row)


class Answer(Protocol):
    """What a call answers with (`llm.Completion`, `llm_chat.ChatTurn`): its usage row reads the tokens."""

    @property
    def input_tokens(self) -> int: ...

    @property
    def output_tokens(self) -> int: ...


T = TypeVar("T")
A = TypeVar("A", bound=Answer)


class ModelCall:
    """One call's walk over its candidate models (see the module's docstring).

    `call(attempt)` asks the attempt's model and returns what it answered; `offline(attempt)` answers
    when the candidate is the offline provider, and writes its own usage row if it answers (the sync
    utility role raises OfflineModel instead; a stream writes it when the reader has had the text).
    `names_unset_key`: a refused key's cause names the model's unset key variable, as the sync
    gateway, which reads the key itself, has always said.
    """

    def __init__(
        self,
        *,
        role: str,
        user: User | None,
        channel: Channel | None,
        trigger: str,
        candidates: list[LLMModel],
        names_unset_key: bool = False,
    ):
        self.role, self.candidates, self.names_unset_key = role, candidates, names_unset_key
        self.policy = policy
        team_id = channel.team_id if channel is not None else None
        self.usage = {"user": user, "channel": channel, "team_id": team_id, "role": role, "trigger": trigger}
        self.errors: list[str] = []
        self.upstream_status: int | None = None
        # True: the answering attempt's usage row is left in `answered` for the caller to write (`arun`).
        self.defer_answered = False
        self.answered: UsagePending | None = None

    def _attempts(self) -> Iterator[Attempt]:
        for index, model in enumerate(self.candidates):
            yield Attempt(model, index, self.policy, {**self.usage, "model": model.name})

    def failed(self, attempt: Attempt, error: BaseException) -> dict[str, Any]:
        """The failure's usage row; its cause is kept for the error raised if no candidate answers."""
        cause = failure_cause(error, attempt.model if self.names_unset_key else None)
        logger.warning("llm: %s model %s failed (%s)", self.role, attempt.model.name, cause)
        self.errors.append(f"{attempt.model.name}: {cause}")
        self.upstream_status = _upstream_status(error)
        return attempt.failed_row(cause)

    def broke_off(self, attempt: Attempt, error: BaseException) -> tuple[dict[str, Any], ModelCallFailed]:
        """A failure after the answer began (a stream past its first chunk): its usage row, and the error,
        which names this model alone (the reader has seen its tokens, so no other model is tried)."""
        self.errors.clear()
        return self.failed(attempt, error), self.error()

    def error(self) -> ModelCallFailed:
        """Every cause (one per model tried) and the last HTTP status a model answered with."""
        return ModelCallFailed(
            "The model call failed: " + "; ".join(self.errors),
            extra={"errors": list(self.errors)},
            upstream_status=self.upstream_status,
        )

    def run(self, call: Callable[[Attempt], A], *, offline: Callable[[Attempt], A]) -> A:
        """The first answer, in this thread; ModelCallFailed when no candidate answers."""
        failures = self.policy.failures()
        for attempt in self._attempts():
            if attempt.offline:
                return offline(attempt)
            try:
                answer = call(attempt)
            except failures as error:
                record(attempt, self.failed(attempt, error))
                if self.policy.falls_back(error):
                    continue
                break
            record(attempt, attempt.answered_row(input_tokens=answer.input_tokens, output_tokens=answer.output_tokens))
            return answer
        raise self.error()

    async def arun(self, call: Callable[[Attempt], Awaitable[A]], *, offline: Callable[[Attempt], Awaitable[A]]) -> A:
        """`run`, awaited: a waiting model holds no thread."""
        return await self._walk(call, offline=offline, answers=True)

    async def aopen(self, call: Callable[[Attempt], Awaitable[T]], *, offline: Callable[[Attempt], Awaitable[T]]) -> T:
        """`arun` for a stream: `call` opens it and reads its first chunk; the row is written when it ends."""
        return await self._walk(call, offline=offline, answers=False)

    async def _walk(self, call: Callable[[Attempt], Awaitable[Any]], *, offline: Callable, answers: bool) -> Any:
        failures = self.policy.failures()
        for attempt in self._attempts():
            if attempt.offline:
                return await offline(attempt)
            try:
                result = await call(attempt)
            except failures as error:
                await arecord(attempt, self.failed(attempt, error))
                if self.policy.falls_back(error):
                    continue
                break
            if answers:
                tokens = {"input_tokens": result.input_tokens, "output_tokens": result.output_tokens}
                if self.defer_answered:
                    self.answered = UsagePending(attempt, attempt.answered_row(**tokens))
                else:
                    await arecord(attempt, attempt.answered_row(**tokens))
            return result
        raise self.error()
