"""The gateway to language models, sync: `llm_complete`, for every model call made in a thread.

It calls the role's primary, then its fallback, each through the `openai` client with explicit
timeouts and bounded retries (the walk, the failures, the usage rows: `chatcore.llm_attempt`,
shared with the async and streamed calls). It never holds a database transaction open across the
network call.
"""

import dataclasses
import functools
import os
from typing import TYPE_CHECKING

from django.contrib.auth.models import User

from chatcore import conf
from chatcore.endpoints import endpoint_check
from chatcore.llm_attempt import Attempt, MissingApiKey, ModelCall, record, role_models
from chatcore.models import Channel, LLMModel

if TYPE_CHECKING:
    import openai

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


@functools.lru_cache(maxsize=32)
def _cached_client(api_key: str, base_url: str | None, timeout: float, max_retries: int) -> "openai.OpenAI":
    """Clients are reused: building one (its HTTP pool and TLS context) costs more than a short call.

    `openai` is imported here, not at module level: it takes seconds to import, and most processes
    (management commands, the web server until its first model call) never need it.
    """
    import openai

    return openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)


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


def _client(attempt: Attempt) -> "openai.OpenAI":
    model = attempt.model
    endpoint_check(model)  # before any key is read or request sent: a row may predate the rule
    base_url = model.base_url or conf.OPENAI_BASE_URL or None
    api_key = _api_key(model, base_url)
    return _cached_client(api_key, base_url, attempt.policy.timeout(), attempt.policy.max_retries())


def _call(attempt: Attempt, messages: list[dict], max_tokens: int | None, temperature: float | None) -> Completion:
    model = attempt.model
    kwargs: dict = {"model": model.name, "messages": messages}
    if max_tokens:
        kwargs["max_tokens"] = min(max_tokens, model.max_output_tokens or max_tokens)
    if temperature is not None:
        kwargs["temperature"] = temperature
    response = _client(attempt).chat.completions.create(**kwargs, extra_headers=attempt.headers())
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
    tokens_in, tokens_out = (usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)
    return Completion(content, model.name, attempt.used_fallback, tokens_in, tokens_out)


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
    (`llm_attempt.role_models`), which saves looking the role up twice.

    When the role resolves to the offline provider, the chat role answers with
    a plain explanation; other roles raise OfflineModel so that the caller
    can use its own offline method.
    """

    def offline(attempt: Attempt) -> Completion:
        if role != "chat" or not allow_offline:
            raise OfflineModel(attempt.model.name)
        record(attempt, attempt.offline_row())
        return Completion(OFFLINE_REPLY, attempt.model.name, attempt.used_fallback, 0, 0, offline=True)

    if candidates is None:
        candidates = role_models(role=role, override=override, channel=channel)
    walk = ModelCall(
        role=role, user=user, channel=channel, trigger=trigger, candidates=candidates, names_unset_key=True
    )
    return walk.run(lambda attempt: _call(attempt, messages, max_tokens, temperature), offline=offline)
