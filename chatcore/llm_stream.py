"""A streamed chat call with the client's options (see `llm_chat`).

`ChatStream.start()` opens the stream on the first model that answers with
a first chunk (falling back as `allm_chat` does), so a caller can still
answer with an HTTP error when every model fails. `deltas()` then yields
the pieces as they come; the whole turn is in `turn` at the end. A failure
after the first chunk raises ModelCallFailed (no fallback: the client has
seen tokens). A consumer that stops early (a client that went away) calls
`interrupted()`: the attempt is recorded and `partial()` holds what came.
"""

from collections.abc import AsyncIterator
from typing import Any, Unpack

from chatcore.db_steps import db_step
from chatcore.llm import OFFLINE_REPLY
from chatcore.llm_attempt import Attempt, ModelCall, UsagePending, arecord, record, role_models
from chatcore.llm_chat import ChatCall, ChatDelta, ChatTurn, _async_client, _checked, _request, offline_turn
from chatcore.models import LLMModel


def _without_none(value: Any) -> Any:
    """A tool call fragment without its null fields, as the SDK's objects dumped it (`exclude_none`)."""
    if isinstance(value, dict):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    return value


def _stream_request(attempt: Attempt, messages: list[dict], params: dict) -> dict:
    """The request's JSON body: what `_request` gives the SDK's `create`, with the messages in place."""
    kwargs = _request(attempt, messages, params)
    body = {key: value for key, value in kwargs.items() if key not in ("extra_body", "extra_headers")}
    return {**body, **kwargs["extra_body"], "stream": True, "stream_options": {"include_usage": True}}


class _Collected:
    """What has arrived: text, tool calls merged by index, finish reason and usage."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.calls: dict[int, dict] = {}
        self.finish_reason: str | None = None
        self.tokens_in = self.tokens_out = 0

    def add(self, chunk: Any) -> ChatDelta | None:
        """One chunk as the provider sent it (JSON decoded: dicts and lists, no SDK objects)."""
        if not isinstance(chunk, dict):
            raise TypeError(f"A stream chunk is not an object: {type(chunk).__name__}")
        usage = chunk.get("usage")
        if usage:
            self.tokens_in, self.tokens_out = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
        choices = chunk.get("choices")
        if not choices:
            return None
        choice = choices[0]
        delta = choice.get("delta") or {}
        text = delta.get("content") or ""
        fragments = [_without_none(call) for call in delta.get("tool_calls") or []]
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
        finish_reason = choice.get("finish_reason")
        if finish_reason:
            self.finish_reason = finish_reason
        if not text and not fragments and not finish_reason:
            return None
        return ChatDelta(content=text, tool_calls=fragments, finish_reason=finish_reason)

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
        self.user, self.channel, self.trigger = call["user"], call["channel"], call.get("trigger", "")
        self.candidates = call.get("candidates")
        self.turn: ChatTurn | None = None
        self._walk: ModelCall | None = None
        self._attempt: Attempt | None = None  # the model being tried, then the one that answers
        self._collected = _Collected()
        self._stream: Any = None
        self._iterator: AsyncIterator | None = None
        self._first: Any = None
        # True: the answered attempt's usage row waits for `answered_record`, which a caller that writes
        # the answer calls in the thread it writes in (one thread hop for both instead of two).
        self.record_later = False
        self._answered: tuple[Attempt, dict[str, Any]] | None = None

    @property
    def model(self) -> LLMModel | None:
        return self._attempt.model if self._attempt is not None else None

    @property
    def used_fallback(self) -> bool:
        return self._attempt is not None and self._attempt.used_fallback

    async def start(self) -> None:
        """Open the stream on the first model that sends a first chunk; ModelCallFailed when none does."""
        candidates = self.candidates
        if candidates is None:
            candidates = await db_step(role_models)(role="chat", override=self.override, channel=self.channel)
        self._walk = ModelCall(
            role="chat", user=self.user, channel=self.channel, trigger=self.trigger, candidates=candidates
        )
        await self._walk.aopen(self._open, offline=self._tried)

    async def _tried(self, attempt: Attempt) -> None:
        self._attempt = attempt

    async def _open(self, attempt: Attempt) -> None:
        await self._tried(attempt)
        import openai

        # The SDK's request (retries, timeouts, errors, the stream's own error events), with each chunk
        # left as the decoded JSON it is: `chat.completions.create` builds an object of the SDK's types per
        # chunk, which costs more CPU than the rest of a reply's streaming.
        client = _async_client(attempt)
        self._stream = await client.post(
            "/chat/completions",
            cast_to=object,
            body=_stream_request(attempt, self.messages, self.params),
            options={"headers": attempt.headers()},
            stream=True,
            stream_cls=openai.AsyncStream[object],
        )
        self._iterator = self._stream.__aiter__()
        self._first = await self._iterator.__anext__()

    async def deltas(self) -> AsyncIterator[ChatDelta]:
        attempt, walk = self._attempt, self._walk
        assert attempt is not None and walk is not None, "start() first"
        if attempt.offline:
            self._collected.texts.append(OFFLINE_REPLY)
            self._collected.finish_reason = "stop"
            yield ChatDelta(content=OFFLINE_REPLY)
            yield ChatDelta(finish_reason="stop")
            await arecord(attempt, attempt.offline_row())
            self.turn = offline_turn(attempt)
            return
        collected = self._collected
        assert self._iterator is not None, "start() opened no stream"
        try:
            delta = collected.add(self._first)
            if delta is not None:
                yield delta
            async for chunk in self._iterator:
                delta = collected.add(chunk)
                if delta is not None:
                    yield delta
            _checked(collected.content, collected.tool_calls)
        except attempt.policy.failures() as error:
            # After the first chunk the reader has seen tokens: no fallback, and the error is this model's.
            broken = ModelCall(role="chat", user=self.user, channel=self.channel, trigger=self.trigger, candidates=[])
            await arecord(attempt, broken.failed(attempt, error))
            raise broken.error() from None
        self.turn = self.partial()
        row = attempt.answered_row(input_tokens=collected.tokens_in, output_tokens=collected.tokens_out)
        if self.record_later:
            self._answered = (attempt, row)
        else:
            await arecord(attempt, row)

    def answered_take(self) -> UsagePending | None:
        """With `record_later`: the answered attempt's usage row, unwritten, for a caller that writes it
        with the answer (then `answered_record` has nothing left to write)."""
        if self._answered is None:
            return None
        attempt, row = self._answered
        self._answered = None
        return UsagePending(attempt, row)

    def answered_record(self) -> None:
        """With `record_later`: the answered attempt's usage row (sync: in the caller's thread), once."""
        if self._answered is not None:
            attempt, row = self._answered
            self._answered = None
            record(attempt, row)

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
        if self._answered is not None:
            await db_step(self.answered_record)()
        if self._attempt is not None and self.turn is None:
            await arecord(self._attempt, self._attempt.failed_row("interrupted: the client stopped reading"))
