"""Chat calls that carry a client's own options, awaited or streamed: the
part of the LLM gateway that the OpenAI-compatible endpoint uses.

Same attempts as `llm.llm_complete` (`chatcore.llm_attempt`): the model asked
for (or the chat role's primary), then the role's fallback; every attempt a
UsageEntry with its cause; no database transaction open across the network.
Differences: the
client's `tools`, `tool_choice`, sampling options... are passed through; the
whole turn comes back (text, tool calls, finish reason); the calls are
async, so a waiting model holds no thread (invariant 11); and a stream falls
back only until its first chunk (after that the client has seen tokens).
"""

import dataclasses
import functools
import inspect
import json
import weakref
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from django.contrib.auth.models import User

from chatcore import conf, llm_http
from chatcore.db_steps import db_step
from chatcore.endpoints import endpoint_check
from chatcore.llm import OFFLINE_REPLY
from chatcore.llm_attempt import Attempt, ModelCall, UsagePending, arecord, role_models
from chatcore.models import Channel, LLMModel

if TYPE_CHECKING:
    import asyncio

    import openai

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
    # The answering attempt's usage row, when the caller asked to write it with the answer (`allm_chat`).
    usage: UsagePending | None = dataclasses.field(default=None, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class ChatDelta:
    """One streamed piece: text, the provider's tool-call fragments (passed through), or the finish reason."""

    content: str = ""
    tool_calls: list[dict] = dataclasses.field(default_factory=list)
    finish_reason: str | None = None


def _async_client(attempt: Attempt) -> "openai.AsyncOpenAI":
    """One client per event loop and endpoint: an async HTTP pool belongs to the loop that opened it."""
    import asyncio
    import os

    import openai

    model = attempt.model
    endpoint_check(model)  # before any key is read or request sent: a row may predate the rule
    api_key = os.environ.get(model.api_key_env or "", "") or "not-needed"
    base_url = model.base_url or conf.OPENAI_BASE_URL or None
    key = (api_key, base_url, attempt.policy.timeout(), attempt.policy.max_retries())
    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    if key not in per_loop:
        per_loop[key] = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, timeout=key[2], max_retries=key[3])
    return per_loop[key]


def _request(attempt: Attempt, messages: list[dict], params: dict) -> dict:
    """The client's keyword arguments. The messages travel in `extra_body`, which the client sends as
    they are: given as `messages`, the client walks every message and part in pure Python to apply
    its type annotations (none of which change plain JSON messages), a cost that grows with the
    context and was the largest share of a streamed reply's CPU (`compaction_bench --scenario serving`)."""
    model = attempt.model
    kwargs: dict = {**params, "model": model.name, "messages": []}
    kwargs["extra_body"] = {**(params.get("extra_body") or {}), "messages": messages}
    kwargs["extra_headers"] = {**(params.get("extra_headers") or {}), **attempt.headers()}
    for name in ("max_tokens", "max_completion_tokens"):
        if kwargs.get(name) and model.max_output_tokens:
            kwargs[name] = min(kwargs[name], model.max_output_tokens)
    return kwargs


def request_body(kwargs: dict) -> dict:
    """The JSON body the SDK's `create` sends for `_request`'s keywords: the options, then `extra_body` over
    them (the messages in place of the empty list)."""
    body = {key: value for key, value in kwargs.items() if key not in _EXTRAS}
    return {**body, **kwargs["extra_body"]}


_EXTRAS = ("extra_body", "extra_headers")
_SDK = object()  # `_completion_direct`'s answer when the SDK's own request must be made


@functools.cache
def _create_keywords() -> frozenset[str]:
    """The keywords the SDK's `create` accepts (any other is its TypeError, which the SDK's request raises)."""
    from openai.resources.chat.completions import AsyncCompletions

    return frozenset(inspect.signature(AsyncCompletions.create).parameters) - {"self"}


async def _completion_direct(client: "openai.AsyncOpenAI", kwargs: dict) -> Any:
    """The answer of a call not streamed, asked on our own connections (`llm_http`), as the SDK's `create`
    returns it: the body decoded as the SDK decodes it and built into its types as the SDK builds them
    (`construct_type`, no validation), so that what is read of it is the same; `_SDK` where the SDK's
    request must be made instead (what `llm_http.transport_for` leaves to it, a redirect, a client that
    validates answers strictly, or keywords `create` would refuse). Why: the SDK's request machinery cost
    more of a call's CPU than the rest of what the gateway adds to it.
    """
    transport = llm_http.transport_for(client)
    if transport is None or client._strict_response_validation or not _create_keywords().issuperset(kwargs):
        return _SDK
    try:
        response, content = await transport.complete(request_body(kwargs), kwargs["extra_headers"])
    except llm_http.Redirected:
        return _SDK  # the SDK's request follows redirects
    return _sdk_parsed(response.headers.get("content-type", "*"), content)


def _sdk_parsed(content_type: str, content: bytes) -> Any:
    """A whole answer as the SDK's non-streamed parse gives it: JSON built into a ChatCompletion; a body
    that is not JSON (by its type and its bytes) as text; a JSON decoding error raised (by a JSON type)."""
    from openai._models import construct_type
    from openai.types.chat import ChatCompletion

    if not content_type.split(";")[0].endswith("json"):
        try:
            data = json.loads(content)
        except Exception:
            return content.decode("utf-8", "replace")
    else:
        data = json.loads(content)
    if data is None:
        return None
    return construct_type(type_=ChatCompletion, value=data)


def _checked(content: str, tool_calls: list[dict]) -> None:
    if not content.strip() and not tool_calls:
        raise ValueError("the model returned empty content")
    if len(content) > conf.MAX_MESSAGE_CHARS:
        raise ValueError(
            f"the reply is longer than allowed ({len(content):,} characters; the limit is {conf.MAX_MESSAGE_CHARS:,})"
        )


class ChatCall(TypedDict):
    """The keywords of a chat call, awaited whole (`allm_chat`) or streamed (`llm_stream.ChatStream`)."""

    messages: list[dict]
    user: User | None
    channel: Channel | None
    params: NotRequired[dict | None]
    trigger: NotRequired[str]
    override: NotRequired[LLMModel | None]
    # The models to try, when the caller resolved them already (`role_models`); else read as the call starts.
    candidates: NotRequired[list[LLMModel] | None]


async def allm_chat(
    *,
    messages: list[dict],
    user: User | None,
    channel: Channel | None,
    params: dict | None = None,
    trigger: str = "",
    override: LLMModel | None = None,
    candidates: list[LLMModel] | None = None,
    usage_later: bool = False,
) -> ChatTurn:
    """The whole turn. ModelCallFailed carries `errors` (one per model tried) and `upstream_status`.

    `usage_later`: the answering attempt's usage row comes back unwritten in the turn's `usage`, for a
    caller that writes it with the answer (failed attempts' rows are written as they fail)."""

    async def call(attempt: Attempt) -> ChatTurn:
        model = attempt.model
        client = _async_client(attempt)
        kwargs = _request(attempt, messages, params or {})
        response = await _completion_direct(client, kwargs)
        if response is _SDK:
            response = await client.chat.completions.create(**kwargs)
        if not getattr(response, "choices", None):
            raise ValueError("the response had no choices")
        choice = response.choices[0]
        content = choice.message.content or ""
        tool_calls = [call.model_dump(exclude_none=True) for call in choice.message.tool_calls or []]
        _checked(content, tool_calls)
        usage = response.usage
        tokens_in, tokens_out = (usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)
        finish = choice.finish_reason or "stop"
        return ChatTurn(content, tool_calls, finish, model.name, attempt.used_fallback, tokens_in, tokens_out)

    async def offline(attempt: Attempt) -> ChatTurn:
        await arecord(attempt, attempt.offline_row())
        return offline_turn(attempt)

    if candidates is None:
        candidates = await db_step(role_models)(role="chat", override=override, channel=channel)
    walk = ModelCall(role="chat", user=user, channel=channel, trigger=trigger, candidates=candidates)
    walk.defer_answered = usage_later
    turn = await walk.arun(call, offline=offline)
    if walk.answered is not None:
        turn = dataclasses.replace(turn, usage=walk.answered)
    return turn


def offline_turn(attempt: Attempt) -> ChatTurn:
    """The offline provider's turn: a plain explanation, as `llm.llm_complete` gives for the chat role."""
    return ChatTurn(OFFLINE_REPLY, [], "stop", attempt.model.name, attempt.used_fallback, 0, 0, offline=True)
