"""The chat call's own HTTP/1.1 client, streamed (`llm_stream.ChatStream`) or awaited whole
(`llm_chat.allm_chat`): the request the SDK would send, on a kept-alive connection, its answer parsed by
httptools and its body handed over as it arrives (or whole, `Transport.complete`).

Why: going through the SDK and its HTTP library (request objects, header models, anyio streams, the
connection pool's locks and state machine) cost several times what the body's own bytes cost per reply;
a reply makes one model call, so that overhead was a large share of a reply's CPU (and of what the
OpenAI-compatible gateway adds to a call).

What it keeps of the SDK (`transport_for` reads the SDK's own client, so the two cannot drift): the
endpoint check and the key, the URL, the SDK's headers (Authorization: Bearer, its user agent) plus the
call's, the timeout (for connecting and for each read, as the SDK's single number sets both), the retries
before the answer's status (`Transport.open`: a connection failure, a timeout, and the statuses the SDK
retries, with its backoff and Retry-After; for an answer awaited whole, a failure while reading its body
too, as the SDK reads a body it does not stream inside its retries), and its exceptions:
APIConnectionError, APITimeoutError and the APIStatusError subclass the SDK builds from the status and body.

What it does not do, and so leaves to the SDK (`transport_for` answers None and the caller uses the SDK's
request; the body is still read by the one parser, `llm_stream._Body`): a proxy from the environment
(HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) that applies to the host, a URL that is neither http nor https or
carries a user name or a query, and a redirect (the request is then sent again through the SDK, which
follows it). It asks for an identity body (Accept-Encoding: identity); a server that still codes the body
fails the call as a connection error.

Connections are kept per event loop and origin (scheme, host, port), at most IDLE_PER_ORIGIN idle ones
for at most IDLE_SECONDS; a connection goes back only after a whole answer on a connection both sides
keep alive, and is dropped on any error, an interrupted read, or when the server closes it.
"""

import asyncio
import functools
import json
import ssl
import urllib.parse
import urllib.request
import weakref
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import httptools

if TYPE_CHECKING:
    import openai

# Idle connections kept per origin and loop: enough for the replies a worker streams at once (at most
# CHATCORE_MAX_REQUESTS_IN_FLIGHT, 128 by default), which end about together under load and are followed at
# once by the next ones; with fewer kept, most of those replies opened a connection of their own (about 80 us
# of the worker's CPU each, and the model server's accept).
IDLE_PER_ORIGIN = 128
# An idle connection is used again within this many seconds, as the SDK's HTTP library keeps one: a server
# closes idle connections after a while (5 s for uvicorn), and a request sent as it closes would be lost.
IDLE_SECONDS = 5.0
# A timer may fire this much before its time (the event loop's timers count whole milliseconds): a wait whose
# deadline is that close has timed out, as a timer set for that wait alone would have fired then.
TIMER_SLACK_SECONDS = 0.001
PAUSE_BYTES = 1 << 20  # received but unread body past which the socket is not read until the reader catches up
ERROR_BODY_MAX_BYTES = 1 << 20  # an error answer's body read for its message, at most this much
ROUTE = "/chat/completions"


class TransportTimeout(TimeoutError):
    """Connecting or a read took longer than the model's timeout."""


# What a server's close means, in the words the SDK's transport (httpx) records for the same faults.
DISCONNECTED_BEFORE_ANSWER = "Server disconnected without sending a response."
CLOSED_BEFORE_BODY_ENDED = "peer closed connection without sending complete message body"


class TransportError(OSError):
    """The connection failed, closed too early, or the answer was not HTTP/1.1 we can read."""


class Redirected(Exception):
    """The server answered with a redirect: the SDK's request follows it."""


def _expire(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_exception(TransportTimeout("the model did not answer in time"))


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection; the protocol feeds httptools, whose callbacks fill the current answer."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.closed = False  # the server closed, the connection failed, or we dropped it
        self.failure: BaseException | None = None
        self._waiter: asyncio.Future | None = None
        self._paused = False
        # One timer for the connection's waits (see `wait`), and when the current wait times out.
        self._timer: asyncio.TimerHandle | None = None
        self._deadline = 0.0
        self._reset()

    def _reset(self) -> None:
        self._timer_stop()
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_done = self.complete = False
        self.received = False  # a byte of this answer came
        self.pieces: list[bytes] = []
        self.buffered = 0
        self.keep_alive = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio's classes

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._fail(TransportError(f"the model's answer is not HTTP we can read: {error}"))
            return
        if self.buffered > PAUSE_BYTES and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if exc is not None and self.failure is None:
            self.failure = exc
        self._wake()

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()
        self.head_done = True

    def on_body(self, body: bytes) -> None:
        self.pieces.append(body)
        self.buffered += len(body)

    def on_message_complete(self) -> None:
        self.complete = True

    def _fail(self, error: BaseException) -> None:
        self.failure = error
        self.drop()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def drop(self) -> None:
        self._timer_stop()
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def header(self, name: bytes) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value.decode("latin-1")
        return None

    def _framed(self) -> bool:
        """Whether the body's end is marked (a length or chunks) rather than the connection's close."""
        return self.header(b"content-length") is not None or "chunked" in (self.header(b"transfer-encoding") or "")

    def wait(self, timeout: float) -> asyncio.Future:
        """To await until something arrives or the connection ends; TransportTimeout after `timeout` seconds.

        A stream waits once per read (per token of a reply), so a timer is not made and cancelled for each
        wait: the connection keeps one, which a wait moves only to an earlier time; when it fires before the
        current wait's deadline (a later wait began since it was set) it is set again for that deadline.
        The future itself is awaited (no coroutine of its own: a frame less to resume per read); once done it
        stays as `_waiter` until the next wait, which nothing minds (waking and expiring skip a done one)."""
        loop = self.loop
        waiter = self._waiter = loop.create_future()
        deadline = self._deadline = loop.time() + timeout
        timer = self._timer
        if timer is None or timer.when() > deadline:
            if timer is not None:
                timer.cancel()
            self._timer = loop.call_at(deadline, self._timer_due)
        return waiter

    def _timer_due(self) -> None:
        self._timer = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return  # no wait is under way: the next one sets the timer again
        if self.loop.time() >= self._deadline - TIMER_SLACK_SECONDS:
            _expire(waiter)
        else:
            self._timer = self.loop.call_at(self._deadline, self._timer_due)

    def _timer_stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def head(self, timeout: float) -> None:
        while not self.head_done:
            self._check()
            await self.wait(timeout)

    def take(self) -> bytes:
        """What has arrived of the body since the last take (may be empty)."""
        pieces, self.pieces, self.buffered = self.pieces, [], 0
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def ended(self) -> bool:
        """Whether the body is over: complete, or (unframed) ended by the server's close."""
        if self.complete:
            return True
        if self.closed and self.failure is None and self.head_done and not self._framed():
            return True
        return False

    def _check(self) -> None:
        if self.failure is not None:
            if isinstance(self.failure, TransportError):
                raise self.failure
            raise TransportError(str(self.failure) or type(self.failure).__name__) from self.failure
        if self.closed:
            # Worded as the SDK's transport words the same fault, so that a usage row's cause reads the same
            # whichever of the two carried the call.
            if not self.head_done:
                raise TransportError(DISCONNECTED_BEFORE_ANSWER)
            raise TransportError(CLOSED_BEFORE_BODY_ENDED)

    def piece_or_wait(self, timeout: float) -> bytes | asyncio.Future | None:
        """What has arrived of the body (never empty), else a future to await before asking again (`wait`), or
        None once the body is over; TransportError when the connection failed or closed before its end. What
        `body_pieces` does per step, for a reader that calls it in its own loop (no generator to resume)."""
        if self.pieces:
            piece = self.take()
            if piece:
                return piece
        if not (self.complete or self.closed or self.failure is not None):
            return self.wait(timeout)  # what the checks below come to while the answer is under way
        if self.ended():
            return None
        self._check()
        return self.wait(timeout)

    async def body_pieces(self, timeout: float) -> AsyncIterator[bytes]:
        while True:
            step = self.piece_or_wait(timeout)
            if step is None:
                return
            if isinstance(step, bytes):
                yield step
            else:
                await step


class _Pool:
    """The idle connections of one event loop, by origin, each with the time it went idle."""

    def __init__(self) -> None:
        self.idle: dict[tuple[str, str, int], list[tuple[_Connection, float]]] = {}

    def get(self, origin: tuple[str, str, int]) -> _Connection | None:
        idle = self.idle.get(origin)
        while idle:
            connection, since = idle.pop()
            fresh = connection.loop.time() - since < IDLE_SECONDS
            if fresh and not connection.closed and connection.transport is not None:
                if not connection.transport.is_closing():
                    return connection
            connection.drop()
        return None

    def put(self, origin: tuple[str, str, int], connection: _Connection) -> None:
        idle = self.idle.setdefault(origin, [])
        # The oldest first (`get` takes the newest): those idle too long, or closed by the server, go, so that
        # they do not hold places once the load has dropped.
        now = connection.loop.time()
        while idle and (idle[0][0].closed or now - idle[0][1] >= IDLE_SECONDS):
            idle.pop(0)[0].drop()
        if len(idle) >= IDLE_PER_ORIGIN:
            connection.drop()
            return
        connection._reset()
        idle.append((connection, connection.loop.time()))


_pools: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pool]" = weakref.WeakKeyDictionary()
_transports: "weakref.WeakKeyDictionary[Any, Transport | None]" = weakref.WeakKeyDictionary()
_ssl_context: ssl.SSLContext | None = None


def _tls(http: Any) -> ssl.SSLContext:
    """The verified context the SDK's HTTP library makes (its CA bundle, SSL_CERT_FILE / SSL_CERT_DIR)."""
    global _ssl_context
    if _ssl_context is None:
        _ssl_context = http.create_ssl_context(trust_env=True)
    return _ssl_context


class Response:
    """An answer being read: what `llm_stream._Body` reads of an SDK response, and nothing more."""

    timeouts = TransportTimeout
    failures = (TransportError,)

    def __init__(self, transport: "Transport", connection: _Connection, timeout: float) -> None:
        self._transport, self._connection, self._timeout = transport, connection, timeout
        self.headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in connection.headers}
        self.is_closed = False

    @property
    def request(self) -> Any:
        """The SDK's request object, which its errors carry (made only for an error)."""
        return self._transport.sdk_request()

    def body_step(self) -> Callable[[], bytes | asyncio.Future | None]:
        """The body's next step, for a reader that loops itself: a callable made once per answer (the
        connection's `piece_or_wait` with this answer's timeout), called for each step without a frame of ours."""
        return functools.partial(self._connection.piece_or_wait, self._timeout)

    def aiter_raw(self) -> AsyncIterator[bytes]:
        return self._connection.body_pieces(self._timeout)

    async def read(self) -> bytes:
        """The whole body (an answer awaited whole), then the response closed: its connection goes back to
        the pool when both sides keep it alive. TransportTimeout or TransportError when the read fails."""
        pieces = [piece async for piece in self.aiter_raw()]
        await self.aclose()
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    async def aclose(self) -> None:
        if self.is_closed:
            return
        self.is_closed = True
        connection = self._connection
        if connection.complete and connection.keep_alive and not connection.closed and not connection.pieces:
            _pools.setdefault(connection.loop, _Pool()).put(self._transport.origin, connection)
        else:
            connection.drop()


class Transport:
    """How to reach one SDK client's endpoint without the SDK (see the module's docstring)."""

    def __init__(self, client: "openai.AsyncOpenAI", url: urllib.parse.SplitResult) -> None:
        self.client = client
        # The SDK's HTTP library (httpx, or httpx2 for the newer SDK): its request, response and TLS context.
        from openai import _base_client

        self._http: Any = getattr(_base_client, "httpx2", None) or getattr(_base_client, "httpx")  # noqa: B009
        self.url = f"{url.scheme}://{url.netloc}{url.path}"
        self.scheme, self.host = url.scheme, url.hostname or ""
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.origin = (self.scheme, self.host, self.port)
        host = url.netloc.rpartition("@")[2]
        timeout = client.timeout
        self.timeout = float(timeout if isinstance(timeout, int | float) else (timeout.read or 0) or 600)  # type: ignore[union-attr]
        self.connect_timeout = float(
            timeout if isinstance(timeout, int | float) else (timeout.connect or 0) or self.timeout  # type: ignore[union-attr]
        )
        self.max_retries = int(client.max_retries)
        fixed = {
            **{name: value for name, value in client.default_headers.items() if isinstance(value, str)},
            **client.auth_headers,
            "Accept-Encoding": "identity",
            "x-stainless-read-timeout": str(self.timeout),
        }
        self._head = f"POST {url.path} HTTP/1.1\r\nHost: {host}\r\n".encode("latin-1")
        self._fixed = fixed

    def sdk_request(self) -> Any:
        return self._http.Request("POST", self.url)

    def _encode(self, body: dict, headers: dict[str, str], retries_taken: int) -> bytes:
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        merged = {**self._fixed, **headers, "x-stainless-retry-count": str(retries_taken)}
        lines = "".join(f"{name}: {value}\r\n" for name, value in merged.items())
        return self._head + f"{lines}Content-Length: {len(content)}\r\n\r\n".encode("latin-1") + content

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> _Connection:
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, protocol = await loop.create_connection(
                    lambda: _Connection(loop),
                    self.host,
                    self.port,
                    ssl=_tls(self._http) if self.scheme == "https" else None,
                    server_hostname=self.host if self.scheme == "https" else None,
                )
        except TimeoutError as error:
            raise TransportTimeout("connecting to the model took too long") from error
        except (OSError, ssl.SSLError) as error:
            raise TransportError(str(error) or type(error).__name__) from error
        return protocol

    async def _send(self, payload: bytes) -> _Connection:
        """The answer's head, on an idle connection if there is one. A kept-alive connection that the
        server closed as the request went out (before a byte of the answer) is replaced by a new one
        once: that race belongs to reusing connections, not to the model."""
        loop = asyncio.get_running_loop()
        connection = _pools.setdefault(loop, _Pool()).get(self.origin)
        reused = connection is not None
        while True:
            if connection is None:
                connection = await self._connect(loop)
            try:
                assert connection.transport is not None
                connection.transport.write(payload)
                await connection.head(self.timeout)
            except TransportError:
                connection.drop()
                if not (reused and not connection.received):
                    raise
                connection, reused = None, False
                continue
            except BaseException:
                connection.drop()
                raise
            return connection

    async def _error_body(self, connection: _Connection) -> bytes:
        pieces: list[bytes] = []
        size = 0
        try:
            async for piece in connection.body_pieces(self.timeout):
                pieces.append(piece)
                size += len(piece)
                if size > ERROR_BODY_MAX_BYTES:
                    break
        finally:
            connection.drop()
        return b"".join(pieces)

    async def _status_error(self, connection: _Connection, remaining: int) -> Any:
        """An error status's answer as the SDK's response, to retry; its error raised when it is not retried."""
        import openai

        try:
            content = await self._error_body(connection)
        except TransportTimeout as error:
            raise openai.APITimeoutError(request=self.sdk_request()) from error
        except TransportError as error:
            raise openai.APIConnectionError(request=self.sdk_request()) from error
        sdk_response = self._http.Response(
            connection.status,
            headers=[(key.decode("latin-1"), value.decode("latin-1")) for key, value in connection.headers],
            content=content,
            request=self.sdk_request(),
        )
        if remaining <= 0 or not self.client._should_retry(sdk_response):
            raise self.client._make_status_error_from_response(sdk_response) from None
        return sdk_response

    async def open(self, body: dict, headers: dict[str, str]) -> Response:
        """The answer's head read, with the SDK's retries; its errors as the SDK raises them."""
        response, _ = await self._exchange(body, headers, whole=False)
        return response

    async def complete(self, body: dict, headers: dict[str, str]) -> tuple[Response, bytes]:
        """The whole answer (a call not streamed): the head and the body, read within the SDK's retries as the
        SDK reads a body it does not stream (a timeout or a broken connection while reading is retried)."""
        response, content = await self._exchange(body, headers, whole=True)
        assert content is not None
        return response, content

    async def _exchange(self, body: dict, headers: dict[str, str], *, whole: bool) -> tuple[Response, bytes | None]:
        import openai
        from openai._models import FinalRequestOptions

        retries_taken = 0
        while True:
            remaining = self.max_retries - retries_taken
            sdk_response = None
            try:
                connection = await self._send(self._encode(body, headers, retries_taken))
            except TransportTimeout as error:
                if remaining <= 0:
                    raise openai.APITimeoutError(request=self.sdk_request()) from error
            except TransportError as error:
                if remaining <= 0:
                    raise openai.APIConnectionError(request=self.sdk_request()) from error
            else:
                if 300 <= connection.status < 400:
                    connection.drop()
                    raise Redirected()
                if connection.status < 400:
                    if (connection.header(b"content-encoding") or "identity").lower() != "identity":
                        connection.drop()  # asked for identity: a coded body is the server's fault
                        raise openai.APIConnectionError(request=self.sdk_request())
                    response = Response(self, connection, self.timeout)
                    if not whole:
                        return response, None
                    try:
                        return response, await response.read()
                    except TransportTimeout as error:
                        connection.drop()
                        if remaining <= 0:
                            raise openai.APITimeoutError(request=self.sdk_request()) from error
                    except TransportError as error:
                        connection.drop()
                        if remaining <= 0:
                            raise openai.APIConnectionError(request=self.sdk_request()) from error
                    except BaseException:
                        connection.drop()
                        raise
                else:
                    sdk_response = await self._status_error(connection, remaining)
            options = FinalRequestOptions.construct(method="post", url=ROUTE)
            await asyncio.sleep(
                self.client._calculate_retry_timeout(
                    remaining, options, sdk_response.headers if sdk_response is not None else None
                )
            )
            retries_taken += 1


def _proxied(scheme: str, host: str) -> bool:
    """Whether the environment sends this host's requests through a proxy (as the SDK's HTTP library reads it)."""
    proxies = urllib.request.getproxies()
    if not (proxies.get(scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(host)


def transport_for(client: "openai.AsyncOpenAI") -> Transport | None:
    """The SDK client's endpoint reached directly, or None when the SDK's request must be used."""
    try:
        return _transports[client]
    except KeyError:
        pass
    url = urllib.parse.urlsplit(str(client.base_url).rstrip("/") + ROUTE)
    usable = url.scheme in ("http", "https") and bool(url.hostname) and not url.query and not url.username
    transport = Transport(client, url) if usable and not _proxied(url.scheme, url.hostname or "") else None
    _transports[client] = transport
    return transport
