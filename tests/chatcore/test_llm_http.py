"""The streamed model call's own HTTP/1.1 client (chatcore.llm_http) against scripted servers on loopback:
kept-alive connections reused, a server that closes, chunked and sized bodies, the SDK's status errors,
retries and timeout, and the SDK's request where a proxy applies."""

import asyncio
import functools
import json
from collections.abc import Callable

import openai
import pytest
import uvloop
from asgiref.sync import async_to_sync

from chatcore import llm_chat, llm_http
from chatcore.llm_stream import ChatStream, _Body

EVENTS = b'data: {"choices": [{"delta": {"content": "Hi"}}]}\n\ndata: [DONE]\n\n'


def _sized(body: bytes, status: int = 200, extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status} X\r\nContent-Type: text/event-stream\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    return head.encode() + body


def _chunked(body: bytes) -> bytes:
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in (body[:10], body[10:]))
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        + chunks
        + b"0\r\n\r\n"
    )


def _same(answer: bytes, index: int) -> bytes:
    return answer


class _Server:
    """Answers each request on a connection with the next of `answers(index)`; counts connections."""

    def __init__(self, answer: Callable[[int], bytes | None], close_after: bool = False) -> None:
        self.answer, self.close_after = answer, close_after
        self.connections = 0
        self.requests: list[bytes] = []

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                self.requests.append(head + await reader.readexactly(length))
                answer = self.answer(len(self.requests) - 1)
                if answer is None:  # hang
                    await asyncio.sleep(3600)
                writer.write(answer or b"")
                await writer.drain()
                if self.close_after or b"Connection: close" in (answer or b""):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        writer.close()

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def __aexit__(self, *exc) -> None:
        self._server.close()


def _client(url: str, *, timeout: float = 5.0, max_retries: int = 0) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="sk-test", base_url=url, timeout=timeout, max_retries=max_retries)


async def _chunks(client: openai.AsyncOpenAI) -> list:
    transport = llm_http.transport_for(client)
    assert transport is not None
    body = _Body(await transport.open({"model": "m", "messages": [], "stream": True}, {"X-Request-ID": "r1"}))
    chunks = []
    while True:
        try:
            chunks.extend(await body.batch())
        except StopAsyncIteration:
            return chunks


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_kept_alive_connection_serves_the_next_stream(loop):
    """On asyncio's loop and on uvloop's, which uvicorn runs the site on."""

    async def run() -> None:
        server = _Server(lambda index: _sized(EVENTS))
        async with server as url:
            client = _client(url)
            for _ in range(3):
                assert await _chunks(client) == [{"choices": [{"delta": {"content": "Hi"}}]}]
        assert server.connections == 1
        head = server.requests[0].split(b"\r\n\r\n")[0].decode()
        assert head.startswith("POST /v1/chat/completions HTTP/1.1\r\n")
        assert "Authorization: Bearer sk-test" in head and "X-Request-ID: r1" in head
        assert "Content-Type: application/json" in head and "User-Agent: AsyncOpenAI/Python" in head
        assert json.loads(server.requests[0].split(b"\r\n\r\n", 1)[1])["model"] == "m"

    with asyncio.Runner(loop_factory=uvloop.new_event_loop if loop == "uvloop" else None) as runner:
        runner.run(run())


def test_a_server_that_closes_gets_a_new_connection_and_chunked_bodies_are_read():
    async def run() -> None:
        server = _Server(lambda index: _chunked(EVENTS) if index % 2 else _sized(EVENTS, extra="Connection: close\r\n"))
        async with server as url:
            client = _client(url)
            for _ in range(4):
                assert await _chunks(client) == [{"choices": [{"delta": {"content": "Hi"}}]}]
        # The sized answers said "close": each one's connection ends; the chunked one's is reused.
        assert server.connections == 3

    async_to_sync(run)()


def test_a_kept_alive_connection_that_the_server_closed_is_replaced():
    async def run() -> None:
        server = _Server(lambda index: _sized(EVENTS), close_after=True)
        async with server as url:
            client = _client(url)
            for _ in range(3):
                assert await _chunks(client) == [{"choices": [{"delta": {"content": "Hi"}}]}]
        assert server.connections == 3 and len(server.requests) == 3

    async_to_sync(run)()


def test_a_body_that_ends_with_the_connection_is_read_to_its_end():
    async def run() -> None:
        answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + EVENTS
        server = _Server(lambda index: answer, close_after=True)
        async with server as url:
            client = _client(url)
            for _ in range(2):
                assert await _chunks(client) == [{"choices": [{"delta": {"content": "Hi"}}]}]
        assert server.connections == 2

    async_to_sync(run)()


def test_status_errors_are_the_sdks_and_retried_as_it_retries():
    body = json.dumps({"error": {"message": "slow down", "type": "rate_limit"}}).encode()

    async def run() -> None:
        server = _Server(
            lambda index: _sized(body, status=429, extra="Retry-After: 0.01\r\n") if index == 0 else _sized(EVENTS)
        )
        async with server as url:
            assert await _chunks(_client(url, max_retries=1)) == [{"choices": [{"delta": {"content": "Hi"}}]}]
        assert b"x-stainless-retry-count: 1" in server.requests[1]
        server = _Server(lambda index: _sized(body, status=429, extra="x-should-retry: false\r\n"))
        async with server as url:
            with pytest.raises(openai.RateLimitError) as raised:
                await _chunks(_client(url, max_retries=1))
        assert len(server.requests) == 1
        assert raised.value.status_code == 429 and raised.value.message == "Error code: 429 - slow down"
        assert raised.value.body == {"message": "slow down", "type": "rate_limit"}
        for answer in (_sized(b"no such model", status=404), _sized(body, status=503, extra="Connection: close\r\n")):
            async with _Server(functools.partial(_same, answer)) as url:
                client = _client(url)
                with pytest.raises(openai.APIStatusError) as ours:
                    await _chunks(client)
                with pytest.raises(openai.APIStatusError) as sdks:
                    await client.post("/chat/completions", cast_to=object, body={}, stream=True)
            assert (type(ours.value), ours.value.message, ours.value.body, ours.value.status_code) == (
                type(sdks.value),
                sdks.value.message,
                sdks.value.body,
                sdks.value.status_code,
            )

    async_to_sync(run)()


def test_a_model_that_does_not_answer_times_out_and_a_closed_port_fails_to_connect():
    async def run() -> None:
        server = _Server(lambda index: None)
        async with server as url:
            with pytest.raises(openai.APITimeoutError):
                await _chunks(_client(url, timeout=0.2))
        with pytest.raises(openai.APIConnectionError):
            await _chunks(_client(url))

    async_to_sync(run)()


def test_a_redirect_and_a_coded_body_are_not_read_as_the_answer():
    async def run() -> None:
        async with _Server(functools.partial(_same, _sized(b"", status=307, extra="Location: /v2\r\n"))) as url:
            with pytest.raises(llm_http.Redirected):
                await _chunks(_client(url))
        async with _Server(functools.partial(_same, _sized(b"\x1f\x8b", extra="Content-Encoding: gzip\r\n"))) as url:
            with pytest.raises(openai.APIConnectionError):
                await _chunks(_client(url))

    async_to_sync(run)()


def test_a_proxy_in_the_environment_leaves_the_request_to_the_sdk(monkeypatch):
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    assert llm_http.transport_for(_client("http://models.example:8000/v1")) is None
    assert llm_http.transport_for(_client("https://models.example/v1")) is not None
    monkeypatch.setenv("NO_PROXY", "models.example")
    assert llm_http.transport_for(_client("http://models.example:8000/v1")) is not None
    monkeypatch.setenv("ALL_PROXY", "http://proxy.invalid:3128")
    assert llm_http.transport_for(_client("https://other.example/v1")) is None


@pytest.mark.django_db(transaction=True)
def test_a_streamed_reply_through_a_proxy_goes_through_the_sdks_request(monkeypatch, user, chat_model, llm_server):
    """The proxy (a scripted server) gets the request; the model's own server gets none."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)

    async def run() -> tuple[list, str]:
        proxy = _Server(lambda index: _sized(EVENTS))
        async with proxy as proxy_url:
            monkeypatch.setenv("HTTP_PROXY", proxy_url.removesuffix("/v1"))
            stream = ChatStream(messages=[{"role": "user", "content": "Hello?"}], user=user, channel=None)
            await stream.start()
            texts = [delta.content async for delta in stream.deltas()]
        assert stream.turn is not None
        return proxy.requests, texts[0]

    requests, text = async_to_sync(run)()
    assert text == "Hi" and llm_server.requests == []
    assert requests[0].startswith(f"POST {chat_model.base_url}/chat/completions HTTP/1.1".encode())


COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "Looking.",
                "tool_calls": [
                    {"type": "function", "id": "c1", "function": {"name": "f", "arguments": "{}"}, "extra": None}
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
}


def _json(body: dict | bytes, extra: str = "") -> bytes:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(content)}\r\n{extra}\r\n"
    return head.encode() + content


def test_an_answer_awaited_whole_is_read_on_our_connection_and_built_as_the_sdk_builds_it():
    """The same object as the SDK's `create` gives (its types, its dump), on one kept-alive connection."""

    async def run() -> None:
        server = _Server(lambda index: _json(COMPLETION))
        async with server as url:
            client = _client(url)
            kwargs = {"model": "m", "messages": [], "extra_body": {"messages": []}, "extra_headers": {}}
            ours = [await llm_chat._completion_direct(client, kwargs) for _ in range(2)]
            sdks = await client.chat.completions.create(model="m", messages=[])
        assert server.connections == 2  # ours (kept alive, used twice) and the SDK's own
        assert [type(answer) for answer in ours] == [type(sdks)] * 2
        assert ours[0].model_dump() == sdks.model_dump()
        call = ours[0].choices[0].message.tool_calls[0]
        assert call.model_dump(exclude_none=True) == sdks.choices[0].message.tool_calls[0].model_dump(exclude_none=True)

    async_to_sync(run)()


def test_a_whole_answer_whose_body_breaks_is_retried_as_the_sdk_retries_it():
    """The SDK reads a body it does not stream inside its retries: a connection that closes mid-body is
    tried again (then the answer is read), and with no retries left it is the SDK's APIConnectionError."""
    whole = _json(COMPLETION)
    cut = whole[: len(whole) - 20]

    async def run() -> None:
        server = _Server(lambda index: cut if index == 0 else whole, close_after=True)
        async with server as url:
            client = _client(url, max_retries=1)
            response, content = await llm_http.transport_for(client).complete({"model": "m"}, {})
        assert json.loads(content) == COMPLETION and response.headers["content-type"] == "application/json"
        assert len(server.requests) == 2 and b"x-stainless-retry-count: 1" in server.requests[1]
        async with _Server(functools.partial(_same, cut), close_after=True) as url:
            with pytest.raises(openai.APIConnectionError):
                await llm_http.transport_for(_client(url)).complete({"model": "m"}, {})
        async with _Server(lambda index: whole[:-5]) as url:  # the body never ends
            with pytest.raises(openai.APITimeoutError):
                await llm_http.transport_for(_client(url, timeout=0.2)).complete({"model": "m"}, {})

    async_to_sync(run)()


def test_a_whole_answer_is_parsed_as_the_sdk_parses_a_body_by_its_type():
    """JSON by its type must decode; another type is JSON if it decodes, else text (no choices: a failure)."""
    with pytest.raises(json.JSONDecodeError):
        llm_chat._sdk_parsed("application/json; charset=utf-8", b"<html>")
    assert llm_chat._sdk_parsed("text/html", b"<html>") == "<html>"
    assert llm_chat._sdk_parsed("text/plain", json.dumps(COMPLETION).encode()).usage.prompt_tokens == 7
    assert llm_chat._sdk_parsed("application/json", b"null") is None


def test_keywords_the_sdk_would_refuse_or_a_redirect_leave_the_call_to_the_sdk():
    async def run() -> None:
        async with _Server(functools.partial(_same, _json(COMPLETION))) as url:
            client = _client(url)
            kwargs = {"model": "m", "messages": [], "extra_body": {}, "extra_headers": {}, "not_an_option": 1}
            assert await llm_chat._completion_direct(client, kwargs) is llm_chat._SDK
        async with _Server(functools.partial(_same, _sized(b"", status=307, extra="Location: /v2\r\n"))) as url:
            kwargs = {"model": "m", "messages": [], "extra_body": {}, "extra_headers": {}}
            assert await llm_chat._completion_direct(_client(url), kwargs) is llm_chat._SDK

    async_to_sync(run)()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("streamed", [True, False])
def test_the_caller_s_extra_headers_go_upstream_with_the_request_id(monkeypatch, user, chat_model, streamed):
    """`params["extra_headers"]` are sent as the SDK's `create` sends them, streamed or not (the streamed
    request once dropped them)."""
    answer = _sized(EVENTS) if streamed else _json(COMPLETION | {"choices": [{"message": {"content": "Hi"}}]})

    async def run() -> list[bytes]:
        server = _Server(functools.partial(_same, answer))
        async with server as url:
            chat_model.base_url = url
            call = {
                "messages": [{"role": "user", "content": "Hello?"}],
                "user": user,
                "channel": None,
                "params": {"extra_headers": {"X-Trace": "t1"}},
                "override": chat_model,
            }
            if streamed:
                stream = ChatStream(**call)
                await stream.start()
                assert [delta.content async for delta in stream.deltas()] == ["Hi"]
            else:
                assert (await llm_chat.allm_chat(**call)).content == "Hi"
        return server.requests

    requests = async_to_sync(run)()
    head = requests[0].split(b"\r\n\r\n")[0]
    assert b"\r\nX-Trace: t1\r\n" in head


def test_each_wait_times_out_its_own_timeout_after_it_began_whatever_the_waits_before_it():
    """The connection's one timer (`_Connection.wait`) expires each wait as a timer of its own would."""

    async def waited(connection: llm_http._Connection, timeout: float, *, woken_after: float | None) -> float:
        loop = connection.loop
        began = loop.time()
        if woken_after is not None:
            loop.call_later(woken_after, connection._wake)
        try:
            await connection.wait(timeout)
        except llm_http.TransportTimeout:
            return loop.time() - began
        return -1.0  # woken: no timeout

    async def run() -> None:
        connection = llm_http._Connection(asyncio.get_running_loop())
        assert await waited(connection, 0.3, woken_after=0.1) == -1.0
        # The timer set by the first wait fires first; the second wait's own deadline is 0.3 s after it began.
        assert 0.29 <= await waited(connection, 0.3, woken_after=None) < 1.0
        assert await waited(connection, 5.0, woken_after=0.0) == -1.0
        # A shorter timeout than the timer pending from a longer one: it expires at its own time.
        assert 0.09 <= await waited(connection, 0.1, woken_after=None) < 1.0
        connection.drop()
        assert connection._timer is None

    async_to_sync(run)()


def test_idle_connections_are_kept_up_to_the_limit_and_those_closed_or_idle_too_long_leave_first(monkeypatch):
    monkeypatch.setattr(llm_http, "IDLE_PER_ORIGIN", 3)
    origin = ("http", "127.0.0.1", 80)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        pool, made = llm_http._Pool(), [llm_http._Connection(loop) for _ in range(6)]
        for connection in made[:3]:
            pool.put(origin, connection)
        pool.put(origin, made[3])  # the limit: not kept
        assert made[3].closed and [entry[0] for entry in pool.idle[origin]] == made[:3]
        made[0].closed = True  # the server closed the oldest
        connection, _ = pool.idle[origin][1]
        pool.idle[origin][1] = (connection, loop.time() - llm_http.IDLE_SECONDS)  # the next idle too long
        pool.put(origin, made[4])
        pool.put(origin, made[5])
        assert [entry[0] for entry in pool.idle[origin]] == [made[2], made[4], made[5]]
        assert made[1].closed and not made[5].closed

    async_to_sync(run)()
