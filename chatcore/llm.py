"""The gateway to language models.

One function, `llm_complete`, for every model call in the product: it
resolves a role to its primary and fallback models, calls each through the
`openai` client with explicit timeouts and bounded retries, and records every
attempt as a UsageEntry (success or failure, with the cause). It never holds a
database transaction open across the network call.
"""

import dataclasses
import functools
import json
import logging
import os
import time
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import User

from chatcore import conf, selectors
from chatcore.endpoints import EndpointRefused, endpoint_check
from chatcore.errors import ModelCallFailed
from chatcore.models import Channel, LLMModel, UsageEntry

if TYPE_CHECKING:
    import openai

logger = logging.getLogger(__name__)

OFFLINE_REPLY = (
    "No language model is configured, so this is an offline placeholder reply. "
    "To chat with a real model, add one in the admin under LLM models (provider 'OpenAI-compatible endpoint', "
    "its base URL, and the name of the environment variable holding its key, e.g. OPENAI_API_KEY), "
    "then set it as the primary of the 'chat' role under Model roles."
)


@dataclasses.dataclass(frozen=True)
class Completion:
    content: str
    model: str
    used_fallback: bool
    input_tokens: int
    output_tokens: int
    offline: bool = False


class OfflineModel(Exception):
    """Raised to tell callers the resolved model is the offline provider."""


def _offline_model() -> LLMModel:
    return LLMModel(name="offline", provider=LLMModel.Provider.OFFLINE, context_window=128_000)


def role_models(*, role: str, override: LLMModel | None = None) -> list[LLMModel]:
    """Primary then fallback for a role; the offline provider when none is set."""
    if override is not None:
        assigned = selectors.model_role_get(role=role)
        fallback = assigned.fallback if assigned and assigned.fallback_id != override.pk else None
        return [m for m in (override, fallback) if m is not None]
    assigned = selectors.model_role_get(role=role)
    if assigned is None:
        return [_offline_model()]
    return [m for m in (assigned.primary, assigned.fallback) if m is not None]


@functools.lru_cache(maxsize=32)
def _cached_client(api_key: str, base_url: str | None, timeout: float, max_retries: int) -> "openai.OpenAI":
    """Clients are reused: building one (its HTTP pool and TLS context) costs more than a short call.

    `openai` is imported here, not at module level: it takes seconds to import, and most processes
    (management commands, the web server until its first model call) never need it.
    """
    import openai

    return openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)


class MissingApiKey(ValueError):
    """The model's endpoint needs a key and its variable is not set: said plainly, before any network call."""


def _api_key(model: LLMModel, base_url: str | None) -> str:
    """The key from the variable the model names. OpenAI's own API (no base URL
    anywhere) always needs one, so a missing variable is named at once rather
    than surfacing as a network or 401 error; a local endpoint (vLLM, Ollama,
    LM Studio) often needs none, so there a placeholder is sent."""
    api_key = os.environ.get(model.api_key_env or "", "")
    if api_key:
        return api_key
    if base_url is None:
        variable = model.api_key_env or "OPENAI_API_KEY"
        raise MissingApiKey(
            f"{variable} is not set (model {model.name} calls OpenAI's API, which needs a key: set {variable}, "
            "or give the model a base URL)"
        )
    return "not-needed"


def _client(model: LLMModel) -> "openai.OpenAI":
    endpoint_check(model)  # before any key is read or request sent: a row may predate the rule
    base_url = model.base_url or settings.OPENAI_BASE_URL or None
    api_key = _api_key(model, base_url)
    return _cached_client(api_key, base_url, float(settings.LLM_TIMEOUT_SECONDS), int(settings.LLM_MAX_RETRIES))


def _unset_key_hint(model: LLMModel | None) -> str:
    variable = model.api_key_env if model is not None else ""
    return f" ({variable} is not set)" if variable and not os.environ.get(variable) else ""


def _usage_record(usage: dict[str, Any], started: float, **outcome: Any) -> None:
    """One model call's usage row: who, where, which model, how long, and how it went."""
    UsageEntry.objects.create(**usage, duration_ms=int((time.monotonic() - started) * 1000), **outcome)


def _cost(model: LLMModel, tokens_in: int, tokens_out: int) -> Decimal:
    million = Decimal(1_000_000)
    return (
        Decimal(tokens_in) * model.price_in_per_million + Decimal(tokens_out) * model.price_out_per_million
    ) / million


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


def _describe(error: Exception, model: LLMModel | None = None) -> str:
    import openai

    if isinstance(error, MissingApiKey | EndpointRefused):
        return str(error)
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


def _call(model: LLMModel, messages: list[dict], max_tokens: int | None, temperature: float | None):
    kwargs: dict = {"model": model.name, "messages": messages}
    if max_tokens:
        kwargs["max_tokens"] = min(max_tokens, model.max_output_tokens or max_tokens)
    if temperature is not None:
        kwargs["temperature"] = temperature
    response = _client(model).chat.completions.create(**kwargs)
    if not getattr(response, "choices", None):
        raise ValueError("the response had no choices")
    content = (response.choices[0].message.content or "").strip()
    if not content:
        raise ValueError("the model returned empty content")
    if len(content) > conf.MAX_MESSAGE_CHARS:
        raise ValueError(
            f"the reply is longer than allowed ({len(content):,} characters; the limit is {conf.MAX_MESSAGE_CHARS:,})"
        )
    usage = response.usage
    return content, (usage.prompt_tokens if usage else 0), (usage.completion_tokens if usage else 0)


def llm_complete(
    *,
    role: str,
    messages: list[dict],
    user: User | None,
    channel: Channel | None,
    trigger: str = "",
    max_tokens: int | None = None,
    temperature: float | None = None,
    override: LLMModel | None = None,
    allow_offline: bool = True,
    candidates: list[LLMModel] | None = None,
) -> Completion:
    """Call the role's primary model, then its fallback; raise ModelCallFailed if both fail.

    `candidates` are the role's models when the caller resolved them already
    (`role_models`), which saves looking the role up twice.

    When the role resolves to the offline provider, the chat role answers with
    a plain explanation; other roles raise OfflineModel so that the caller
    can use its own offline method.
    """
    import openai

    if candidates is None:
        candidates = role_models(role=role, override=override)
    errors = []
    for index, model in enumerate(candidates):
        if model.provider == LLMModel.Provider.OFFLINE:
            if role != "chat" or not allow_offline:
                raise OfflineModel(model.name)
            UsageEntry.objects.create(user=user, channel=channel, role=role, model=model.name, trigger=trigger)
            return Completion(OFFLINE_REPLY, model.name, index > 0, 0, 0, offline=True)
        started = time.monotonic()

        usage = {"user": user, "channel": channel, "role": role, "model": model.name, "trigger": trigger}
        try:
            content, tokens_in, tokens_out = _call(model, messages, max_tokens, temperature)
        except (openai.OpenAIError, ValueError, TypeError, AttributeError) as error:
            cause = _describe(error, model)
            logger.warning("llm: %s model %s failed (%s)", role, model.name, cause)
            errors.append(f"{model.name}: {cause}")
            _usage_record(usage, started, success=False, error=cause[:2000])
            continue
        _usage_record(
            usage, started, input_tokens=tokens_in, output_tokens=tokens_out, cost=_cost(model, tokens_in, tokens_out)
        )
        return Completion(content, model.name, index > 0, tokens_in, tokens_out)
    raise ModelCallFailed("The model call failed: " + "; ".join(errors), extra={"errors": errors})
