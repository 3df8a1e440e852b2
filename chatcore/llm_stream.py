"""A streamed chat call with the client's options (see `llm_chat`).

`ChatStream.start()` opens the stream on the first model that answers with
a first chunk (falling back as `allm_chat` does), so a caller can still
answer with an HTTP error when every model fails. `deltas()` then yields
the pieces as they come; the whole turn is in `turn` at the end. A failure
after the first chunk raises ModelCallFailed (no fallback: the client has
seen tokens). A consumer that stops early (a client that went away) calls
`interrupted()`: the attempt is recorded and `partial()` holds what came.
"""

import time
from collections.abc import AsyncIterator
from typing import Any, Unpack

from chatcore.llm import OFFLINE_REPLY, _cost, _describe, role_models
from chatcore.llm_chat import (
    ChatCall,
    ChatDelta,
    ChatTurn,
    _async_client,
    _checked,
    _failure,
    _record,
    _request,
    _status_of,
)
from chatcore.models import LLMModel


class _Collected:
    """What has arrived: text, tool calls merged by index, finish reason and usage."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.calls: dict[int, dict] = {}
        self.finish_reason: str | None = None
        self.tokens_in = self.tokens_out = 0

    def add(self, chunk: Any) -> ChatDelta | None:
        if getattr(chunk, "usage", None):
            self.tokens_in, self.tokens_out = chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0
        if not getattr(chunk, "choices", None):
            return None
        choice = chunk.choices[0]
        delta = choice.delta
        text = (delta.content if delta is not None else None) or ""
        fragments = [call.model_dump(exclude_none=True) for call in (delta.tool_calls or [])] if delta else []
        for fragment in fragments:
            call = self.calls.setdefault(
                fragment.get("index", 0), {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
            )
            call["id"] = fragment.get("id") or call["id"]
            call["type"] = fragment.get("type") or call["type"]
            function = fragment.get("function") or {}
            call["function"]["name"] += function.get("name") or ""
            call["function"]["arguments"] += function.get("arguments") or ""
        if text:
            self.texts.append(text)
        if choice.finish_reason:
            self.finish_reason = choice.finish_reason
        if not text and not fragments and not choice.finish_reason:
            return None
        return ChatDelta(content=text, tool_calls=fragments, finish_reason=choice.finish_reason)

    @property
    def content(self) -> str:
        return "".join(self.texts)

    @property
    def tool_calls(self) -> list[dict]:
        return [self.calls[index] for index in sorted(self.calls)]


class ChatStream:
    def __init__(self, **call: Unpack[ChatCall]):
        """The same keywords as `allm_chat` (one ChatCall), so a caller builds one request for either."""
        self.messages, self.params, self.override = call["messages"], call.get("params") or {}, call.get("override")
        self.usage: dict = {"user": call["user"], "channel": call["channel"], "role": "chat"}
        self.usage["trigger"] = call.get("trigger", "")
        self.model: LLMModel | None = None
        self.used_fallback = False
        self.turn: ChatTurn | None = None
        self._collected = _Collected()
        self._stream: Any = None
        self._iterator: AsyncIterator | None = None
        self._first: Any = None
        self._started = 0.0

    async def start(self) -> None:
        import openai
        from asgiref.sync import sync_to_async

        errors: list[str] = []
        status: int | None = None
        for index, model in enumerate(await sync_to_async(role_models)(role="chat", override=self.override)):
            self.model, self.used_fallback, self._started = model, index > 0, time.monotonic()
            if model.provider == LLMModel.Provider.OFFLINE:
                return
            request = {**_request(model, self.messages, self.params), "stream": True}
            request["stream_options"] = {"include_usage": True}
            try:
                self._stream = await _async_client(model).chat.completions.create(**request)
                self._iterator = self._stream.__aiter__()
                self._first = await self._iterator.__anext__()
                return
            except (openai.OpenAIError, ValueError, TypeError, AttributeError, StopAsyncIteration) as error:
                cause = _describe(error) if not isinstance(error, StopAsyncIteration) else "the stream was empty"
                status = _status_of(error)
                errors.append(f"{model.name}: {cause}")
                await self._record_failure(cause)
        raise _failure(errors, status)

    async def _record_failure(self, cause: str) -> None:
        assert self.model is not None
        elapsed = int((time.monotonic() - self._started) * 1000)
        name = self.model.name if self.model is not None else ""
        await _record(**self.usage, model=name, success=False, error=cause[:2000], duration_ms=elapsed)

    async def deltas(self) -> AsyncIterator[ChatDelta]:
        import openai

        assert self.model is not None, "start() first"
        if self.model.provider == LLMModel.Provider.OFFLINE:
            self._collected.texts.append(OFFLINE_REPLY)
            self._collected.finish_reason = "stop"
            yield ChatDelta(content=OFFLINE_REPLY)
            yield ChatDelta(finish_reason="stop")
            await _record(**self.usage, model=self.model.name)
            self.turn = ChatTurn(OFFLINE_REPLY, [], "stop", self.model.name, self.used_fallback, 0, 0, offline=True)
            return
        collected = self._collected
        assert self._iterator is not None, "start() opened no stream"
        try:
            delta = collected.add(self._first)
            if delta is not None:
                yield delta
            assert self._iterator is not None
            async for chunk in self._iterator:
                delta = collected.add(chunk)
                if delta is not None:
                    yield delta
            _checked(collected.content, collected.tool_calls)
        except (openai.OpenAIError, ValueError, TypeError, AttributeError) as error:
            cause = _describe(error)
            await self._record_failure(cause)
            raise _failure([f"{self.model.name}: {cause}"], _status_of(error)) from None
        self.turn = self.partial()
        elapsed = int((time.monotonic() - self._started) * 1000)
        tokens_in, tokens_out = collected.tokens_in, collected.tokens_out
        cost = _cost(self.model, tokens_in, tokens_out)
        await _record(
            **self.usage,
            model=self.model.name,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost=cost,
            duration_ms=elapsed,
        )

    @property
    def calling_tools(self) -> bool:
        """Whether the turn has started calling tools (its text from then on is not an answer's)."""
        return bool(self._collected.calls)

    def partial(self) -> ChatTurn:
        collected = self._collected
        return ChatTurn(
            collected.content,
            collected.tool_calls,
            collected.finish_reason or "stop",
            self.model.name if self.model else "",
            self.used_fallback,
            collected.tokens_in,
            collected.tokens_out,
        )

    async def interrupted(self) -> None:
        """The consumer stopped reading: record the attempt as such and close the upstream stream."""
        if self._stream is not None:
            try:
                await self._stream.close()
            except Exception:  # closing a half-read HTTP stream may fail; the record below is what matters
                pass
        if self.model is not None and self.turn is None:
            await self._record_failure("interrupted: the client stopped reading")
