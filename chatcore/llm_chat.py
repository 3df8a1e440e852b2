"""Chat calls that carry a client's own options, awaited or streamed: the
part of the LLM gateway that the OpenAI-compatible endpoint uses.

Same rules as `llm.llm_complete`: the model asked for (or the chat role's
primary), then the role's fallback; every attempt a UsageEntry with its
cause; no database transaction open across the network. Differences: the
client's `tools`, `tool_choice`, sampling options... are passed through; the
whole turn comes back (text, tool calls, finish reason); the calls are
async, so a waiting model holds no thread (invariant 11); and a stream falls
back only until its first chunk (after that the client has seen tokens).
"""

import dataclasses
import logging
import time
import weakref
from typing import TYPE_CHECKING, NotRequired, TypedDict

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import User

from chatcore import conf
from chatcore.endpoints import endpoint_check
from chatcore.errors import ModelCallFailed
from chatcore.llm import OFFLINE_REPLY, _cost, _describe, role_models
from chatcore.models import Channel, LLMModel, UsageEntry

if TYPE_CHECKING:
    import asyncio

    import openai

logger = logging.getLogger(__name__)

_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict]" = weakref.WeakKeyDictionary()


@dataclasses.dataclass(frozen=True)
class ChatTurn:
    """A whole assistant turn as the model gave it."""

    content: str
    tool_calls: list[dict]
    finish_reason: str
    model: str
    used_fallback: bool
    input_tokens: int
    output_tokens: int
    offline: bool = False


@dataclasses.dataclass(frozen=True)
class ChatDelta:
    """One streamed piece: text, the provider's tool-call fragments (passed through), or the finish reason."""

    content: str = ""
    tool_calls: list[dict] = dataclasses.field(default_factory=list)
    finish_reason: str | None = None


def _async_client(model: LLMModel) -> "openai.AsyncOpenAI":
    """One client per event loop and endpoint: an async HTTP pool belongs to the loop that opened it."""
    import asyncio
    import os

    import openai

    endpoint_check(model)  # before any key is read or request sent: a row may predate the rule
    api_key = os.environ.get(model.api_key_env or "", "") or "not-needed"
    base_url = model.base_url or settings.OPENAI_BASE_URL or None
    key = (api_key, base_url, float(settings.LLM_TIMEOUT_SECONDS), int(settings.LLM_MAX_RETRIES))
    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    if key not in per_loop:
        per_loop[key] = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, timeout=key[2], max_retries=key[3])
    return per_loop[key]


def _request(model: LLMModel, messages: list[dict], params: dict) -> dict:
    """The client's keyword arguments. The messages travel in `extra_body`, which the client sends as
    they are: given as `messages`, the client walks every message and part in pure Python to apply
    its type annotations (none of which change plain JSON messages), a cost that grows with the
    context and was the largest share of a streamed reply's CPU (`compaction_bench --scenario serving`)."""
    kwargs: dict = {**params, "model": model.name, "messages": []}
    kwargs["extra_body"] = {**(params.get("extra_body") or {}), "messages": messages}
    for name in ("max_tokens", "max_completion_tokens"):
        if kwargs.get(name) and model.max_output_tokens:
            kwargs[name] = min(kwargs[name], model.max_output_tokens)
    return kwargs


def _checked(content: str, tool_calls: list[dict]) -> None:
    if not content.strip() and not tool_calls:
        raise ValueError("the model returned empty content")
    if len(content) > conf.MAX_MESSAGE_CHARS:
        raise ValueError(
            f"the reply is longer than allowed ({len(content):,} characters; the limit is {conf.MAX_MESSAGE_CHARS:,})"
        )


def _status_of(error: Exception) -> int | None:
    import openai

    return error.status_code if isinstance(error, openai.APIStatusError) else None


async def _record(**fields) -> None:
    await sync_to_async(UsageEntry.objects.create)(**fields)


def _failure(errors: list[str], status: int | None) -> ModelCallFailed:
    return ModelCallFailed("The model call failed: " + "; ".join(errors), extra={"errors": errors, "status": status})


class ChatCall(TypedDict):
    """The keywords of a chat call, awaited whole (`allm_chat`) or streamed (`llm_stream.ChatStream`)."""

    messages: list[dict]
    user: User | None
    channel: Channel | None
    params: NotRequired[dict | None]
    trigger: NotRequired[str]
    override: NotRequired[LLMModel | None]


async def allm_chat(
    *,
    messages: list[dict],
    user: User | None,
    channel: Channel | None,
    params: dict | None = None,
    trigger: str = "",
    override: LLMModel | None = None,
) -> ChatTurn:
    """The whole turn. ModelCallFailed carries `errors` (one per model tried) and `status`, the last HTTP
    status a model answered with (None for timeouts and connection failures): a provider's 4xx is the
    request's fault, which the caller may want to tell apart from a failing provider."""
    import openai

    errors: list[str] = []
    status: int | None = None
    candidates = await sync_to_async(role_models)(role="chat", override=override)
    for index, model in enumerate(candidates):
        usage = {"user": user, "channel": channel, "role": "chat", "model": model.name, "trigger": trigger}
        if model.provider == LLMModel.Provider.OFFLINE:
            await _record(**usage)
            return ChatTurn(OFFLINE_REPLY, [], "stop", model.name, index > 0, 0, 0, offline=True)
        started = time.monotonic()
        try:
            response = await _async_client(model).chat.completions.create(**_request(model, messages, params or {}))
            if not getattr(response, "choices", None):
                raise ValueError("the response had no choices")
            choice = response.choices[0]
            content = choice.message.content or ""
            tool_calls = [call.model_dump(exclude_none=True) for call in choice.message.tool_calls or []]
            _checked(content, tool_calls)
        except (openai.OpenAIError, ValueError, TypeError, AttributeError) as error:
            cause, status = _describe(error), _status_of(error)
            logger.warning("llm: chat model %s failed (%s)", model.name, cause)
            errors.append(f"{model.name}: {cause}")
            elapsed = int((time.monotonic() - started) * 1000)
            await _record(**usage, success=False, error=cause[:2000], duration_ms=elapsed)
            continue
        tokens_in, tokens_out = (
            (response.usage.prompt_tokens, response.usage.completion_tokens) if response.usage else (0, 0)
        )
        elapsed = int((time.monotonic() - started) * 1000)
        cost = _cost(model, tokens_in, tokens_out)
        await _record(**usage, input_tokens=tokens_in, output_tokens=tokens_out, cost=cost, duration_ms=elapsed)
        finish = choice.finish_reason or "stop"
        return ChatTurn(content, tool_calls, finish, model.name, index > 0, tokens_in, tokens_out)
    raise _failure(errors, status)
