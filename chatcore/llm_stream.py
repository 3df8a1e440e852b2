"""A streamed chat call with the client's options (see `llm_chat`).

`ChatStream.start()` opens the stream on the first model that answers with
a first chunk (falling back as `allm_chat` does), so a caller can still
answer with an HTTP error when every model fails. `deltas()` then yields
the pieces as they come; the whole turn is in `turn` at the end. A failure
after the first chunk raises ModelCallFailed (no fallback: the client has
seen tokens). A consumer that stops early (a client that went away) calls
`interrupted()`: the attempt is recorded and `partial()` holds what came.

The request goes out on our own HTTP/1.1 connections (`llm_http`: the SDK's
headers, timeout, retries and errors, without its per-request machinery), or
through the SDK where ours cannot go (a proxy, a redirect); the body is
read here either way (`_EventReader`: the server-sent events split as the SDK's decoder
splits them, each event's JSON decoded once), which costs a fraction of the
SDK's event and chunk objects per token. What one read of the network brought
is a batch: `text_batches()` hands each batch's text over whole (no object
per piece), so that a writer sends what is already here in one write without
waiting for anything more. Our own connection's body is read step by step in
the reader's loop (`llm_http.Response.body_step`), not through a generator of
its own: a frame less to resume for every token.
"""

import asyncio
import importlib
import json
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, NoReturn, TypeVar, Unpack

from chatcore import llm_http
from chatcore.db_steps import db_step
from chatcore.llm import OFFLINE_REPLY
from chatcore.llm_attempt import Attempt, ModelCall, UsagePending, arecord, record, role_models
from chatcore.llm_chat import (
    ChatCall,
    ChatDelta,
    ChatTurn,
    _async_client,
    _checked,
    _request,
    offline_turn,
    request_body,
)
from chatcore.models import LLMModel

T = TypeVar("T")


def _without_none(value: Any) -> Any:
    """A tool call fragment without its null fields, as the SDK's objects dumped it (`exclude_none`)."""
    if isinstance(value, dict):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    return value


def _stream_request(attempt: Attempt, messages: list[dict], params: dict) -> tuple[dict, dict[str, str]]:
    """The request's JSON body (what `_request` gives the SDK's `create`, with the messages in place) and its
    headers (the caller's `extra_headers` and the attempt's, as `create` sends them)."""
    kwargs = _request(attempt, messages, params)
    body = {**request_body(kwargs), "stream": True, "stream_options": {"include_usage": True}}
    return body, kwargs["extra_headers"]


# The default decoder's scanner (the C one): what `json.loads` runs after skipping surrounding whitespace.
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _json_value(text: str) -> Any:
    """`json.loads(text)`: the decoder's scanner alone when the text is one JSON value without surrounding
    whitespace (a stream's every chunk), `json.loads` itself (its result or its error) for anything else."""
    try:
        value, end = _scan_json(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


# After `[DONE]` the rest of the body is read (so that the connection can serve the next request) for at
# most this long, as the SDK's own stream does; a server that keeps the body open is then cut off.
DRAIN_SECONDS = 0.1


class _EventReader:
    """The `data` of each server-sent event in a byte stream fed in pieces, by the rules the SDK's decoder
    applies (lines end with CR, LF or CRLF; an empty line ends an event that set a field; comments and
    unknown fields are ignored; the lines of a multi-line `data` are joined with LF; the last event id is
    kept across events, so that each empty line after one ends an event)."""

    def __init__(self) -> None:
        self._tail = b""
        self._skip_lf = False  # the previous piece ended with CR: a LF that starts this one is the same line end
        self._data: list[bytes] = []
        self._fields = False  # this event set an event name, data or a retry
        self._last_id = False

    def feed(self, piece: bytes) -> list[bytes]:
        """The data of the events that `piece` completes (UTF-8, decoded by the caller)."""
        if (
            not self._tail
            and not self._data
            and not self._skip_lf
            and piece.startswith(b"data:")
            and piece.endswith(b"\n\n")
            and piece.count(b"\n") == 2
            and b"\r" not in piece
        ):
            # The piece is one whole event of one `data` line (what a provider sends per token): the same
            # event the line rules below give, without splitting the piece into lines.
            value = piece[5:-2]
            self._fields = False
            return [value[1:] if value[:1] == b" " else value]
        if self._skip_lf and piece[:1] == b"\n":
            piece = piece[1:]
        buffer = self._tail + piece if self._tail else piece
        self._skip_lf = False
        if b"\r" in buffer:
            self._skip_lf = buffer.endswith(b"\r")
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buffer.split(b"\n")
        self._tail = lines.pop()
        events: list[bytes] = []
        for line in lines:
            if not line:
                if self._fields or self._data or self._last_id:
                    events.append(b"\n".join(self._data))
                    self._data, self._fields = [], False
                continue
            name, _, value = line.partition(b":")
            if value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                self._data.append(value)
            elif name == b"event":
                self._fields = self._fields or bool(value)
            elif name == b"id":
                if b"\0" not in value:
                    self._last_id = bool(value)
            elif name == b"retry":
                self._fields = self._fields or value.strip().lstrip(b"+-").isdigit()
        return events


class _Body:
    """The streamed response's body as batches of chunks (JSON decoded: dicts and lists, no SDK objects),
    one batch per read of the network, until `[DONE]` or the body's end. A timeout or a broken connection
    while reading is raised as the SDK raises it (APITimeoutError, APIConnectionError)."""

    def __init__(self, response: Any) -> None:
        import anyio  # the HTTP library's own dependency, loaded with it

        self.response = response
        # No content coding (the usual case for a stream): the raw bytes, without the decoders' layer.
        coded = response.headers.get("content-encoding", "identity").lower() not in ("", "identity")
        self._pieces = response.aiter_bytes() if coded else response.aiter_raw()
        # Our own connection's body is read step by step in `batch` (no generator of its own to resume per read).
        self._step: Callable[[], bytes | asyncio.Future | None] | None = None
        if isinstance(response, llm_http.Response) and not coded:
            self._step = response.body_step()
        self._reader = _EventReader()
        self.done = False
        self._drain = False  # the answer is complete ([DONE]): what follows is read so that the connection is reused
        # What broke the stream after chunks that came in the same read: raised once those are handed over,
        # as the SDK yields every event before the one that fails.
        self._broken: Exception | None = None
        # The exceptions of the response's HTTP library (httpx, the SDK's httpx2, or ours: `llm_http`), as
        # the SDK counts them.
        if isinstance(response, llm_http.Response):
            self._timeouts: type[Exception] = response.timeouts
            self._failures: tuple[type[Exception], ...] = response.failures
        else:
            module = importlib.import_module(type(response).__module__.partition(".")[0])
            self._timeouts = module.TimeoutException
            self._failures = (module.RequestError, ssl.SSLError, anyio.EndOfStream)
        self._drain_ends: tuple[type[Exception], ...] = (TimeoutError, *self._failures)

    def _chunks(self, events: list[bytes]) -> list[Any]:
        chunks: list[Any] = []
        for data in events:
            try:
                text = data.decode("utf-8")
                if text.startswith("[DONE]"):
                    self.done = self._drain = True
                    break
                chunk = _json_value(text)
                if (type(chunk) is dict or isinstance(chunk, Mapping)) and chunk.get("error"):
                    raise self._streamed_error(chunk["error"])
            except Exception as error:
                if not chunks:
                    raise
                self._broken, self.done = error, True
                break
            chunks.append(chunk)
        return chunks

    def _streamed_error(self, error: Any) -> Exception:
        """An error the provider sent inside the stream (`{"error": ...}`), as the SDK raises it."""
        import openai

        message = error.get("message") if isinstance(error, Mapping) else None
        if not message or not isinstance(message, str):
            message = "An error occurred during streaming"
        return openai.APIError(message=message, request=self.response.request, body=error)

    async def batch(self) -> list[Any]:
        """The next read's chunks (never an empty list); StopAsyncIteration at the end of the stream."""
        if self._broken is not None:
            broken, self._broken = self._broken, None
            raise broken
        try:
            step_of = self._step
            while not self.done:
                if step_of is not None:
                    step = step_of()
                    if step is None:
                        self.done = True  # the body's end without `[DONE]`, as below
                        break
                    if not isinstance(step, bytes):
                        await step
                        continue
                    piece = step
                else:
                    try:
                        piece = await self._pieces.__anext__()
                    except StopAsyncIteration:
                        self.done = True  # the body ended without `[DONE]`: what came is the answer, as with the SDK
                        break
                chunks = self._chunks(self._reader.feed(piece))
                if chunks:
                    return chunks
        except self._timeouts as error:
            import openai

            raise openai.APITimeoutError(request=self.response.request) from error
        except self._failures as error:
            import openai

            raise openai.APIConnectionError(request=self.response.request) from error
        await self.close()
        raise StopAsyncIteration

    async def close(self) -> None:
        """Read what follows `[DONE]` (briefly: the connection is then reused), then close the response."""
        if not self.response.is_closed and self._drain:
            try:
                async with asyncio.timeout(DRAIN_SECONDS):
                    async for _ in self._pieces:
                        pass
            except self._drain_ends:
                pass  # the answer is complete: what follows it cannot make it a failure
        await self._pieces.aclose()
        await self.response.aclose()


class _Collected:
    """What has arrived: text, tool calls merged by index, finish reason and usage."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.calls: dict[int, dict] = {}
        self.finish_reason: str | None = None
        self.tokens_in = self.tokens_out = 0

    def add(self, chunk: Any) -> ChatDelta | None:
        """One chunk as the provider sent it (JSON decoded: dicts and lists, no SDK objects)."""
        piece = self.piece(chunk)
        return None if piece is None else ChatDelta(*piece)

    def piece(self, chunk: Any) -> tuple[str, list[dict], str | None] | None:
        """`add` without the ChatDelta: (content, tool call fragments, finish reason), or None for a chunk that
        says none of them; a reader that passes on only the text makes no object per token."""
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
        calls = delta.get("tool_calls")
        fragments = [_without_none(call) for call in calls] if calls else []
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
        return text, fragments, finish_reason

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
        self._body: _Body | None = None
        self._first: list[Any] = []  # the batch with the first chunk, read as the stream opened
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

        client = _async_client(attempt)
        body, headers = _stream_request(attempt, self.messages, self.params)
        transport = llm_http.transport_for(client)
        response: Any = None
        if transport is not None:
            try:
                response = await transport.open(body, headers)
            except llm_http.Redirected:
                response = None  # the SDK's request follows redirects
        if response is None:
            # The SDK's request (retries, timeouts, HTTP errors), where our own cannot go (`llm_http`); the
            # body is read by `_Body` either way: `chat.completions.create` builds an object of the SDK's types
            # per chunk, and the SDK's stream an event object per line, which cost more CPU than the rest of a
            # reply's streaming.
            stream = await client.post(
                "/chat/completions",
                cast_to=object,
                body=body,
                options={"headers": headers},
                stream=True,
                stream_cls=openai.AsyncStream[object],
            )
            response = stream.response
        self._body = _Body(response)
        try:
            self._first = await self._body.batch()  # StopAsyncIteration: the stream was empty
        except BaseException:
            await self._body.close()
            raise

    async def deltas(self) -> AsyncIterator[ChatDelta]:
        """The turn's pieces as they come, one per chunk of the provider's that says something."""
        async for chunks in self._batches(list):
            for chunk in chunks:
                delta = self._collected.add(chunk)
                if delta is not None:
                    yield delta

    def text_batches(self) -> AsyncIterator[list[str]]:
        """The answer's text by reads of the network: the texts of the pieces that arrived together, in one
        list (never empty), so that a writer can send them in one write; the next list waits on the network.
        A piece's text is left out from the turn's first tool call fragment on (that text is stored with the
        calls, not answered)."""
        return self._batches(self._texts_of)

    def _texts_of(self, chunks: list[Any]) -> list[str]:
        collected = self._collected
        texts = []
        for chunk in chunks:
            piece = collected.piece(chunk)
            if piece is not None and piece[0] and not collected.calls:
                texts.append(piece[0])
        return texts

    async def _batches(self, convert: Callable[[list[Any]], list[T]]) -> AsyncIterator[list[T]]:
        """Each read's chunks through `convert` (its empty results skipped). The conversion happens in the
        generator that reads (a generator layer less per read of every reply than converting around it),
        outside the read's failures, as when the consumer converted."""
        attempt, walk = self._attempt, self._walk
        assert attempt is not None and walk is not None, "start() first"
        if attempt.offline:
            offline = convert(
                [
                    {"choices": [{"delta": {"content": OFFLINE_REPLY}}]},
                    {"choices": [{"delta": {}, "finish_reason": "stop"}]},
                ]
            )
            if offline:
                yield offline
            await arecord(attempt, attempt.offline_row())
            self.turn = offline_turn(attempt)
            return
        collected, body = self._collected, self._body
        assert body is not None, "start() opened no stream"
        chunks: list[Any] | None = self._first
        while chunks is not None:
            batch = convert(chunks)
            if batch:
                yield batch
            try:
                chunks = await body.batch()
            except StopAsyncIteration:
                chunks = None
            except attempt.policy.failures() as error:
                await self._failed(attempt, body, error)
        try:
            _checked(collected.content, collected.tool_calls)
        except attempt.policy.failures() as error:
            await self._failed(attempt, body, error)
        self.turn = self.partial()
        row = attempt.answered_row(input_tokens=collected.tokens_in, output_tokens=collected.tokens_out)
        if self.record_later:
            self._answered = (attempt, row)
        else:
            await arecord(attempt, row)

    async def _failed(self, attempt: Attempt, body: _Body, error: BaseException) -> NoReturn:
        """A failure after the first chunk: the reader has seen tokens, so no fallback, and the error is this
        model's (recorded, raised as ModelCallFailed)."""
        await body.close()
        broken = ModelCall(role="chat", user=self.user, channel=self.channel, trigger=self.trigger, candidates=[])
        await arecord(attempt, broken.failed(attempt, error))
        raise broken.error() from None

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
        if self._body is not None:
            try:
                await self._body.close()
            except Exception:  # closing a half-read HTTP stream may fail; the record below is what matters
                pass
        if self._answered is not None:
            await db_step(self.answered_record)()
        if self._attempt is not None and self.turn is None:
            await arecord(self._attempt, self._attempt.failed_row("interrupted: the client stopped reading"))
