"""Refusing early when a web process is full: a 503 with Retry-After, never a 500 later.

Under more load than a process can serve, requests that are let in anyway
queue for the database pool and the CPU until something times out deep
inside a view, which answers a 500 after having maybe written half of what
it meant to. `InFlightLimit` wraps the ASGI application and counts the HTTP
requests in flight in its process, from their first byte to the last byte of
the answer (a streamed reply counts until its stream ends, a client that
left until the application has let go of it); above
`CHATCORE_MAX_REQUESTS_IN_FLIGHT` a request is answered at once with a 503
and `Retry-After`, before Django reads it, so nothing of it is written. The
refusal closes its connection (`Connection: close`): a client's next try
opens a new one, which any of the site's processes may take, the least busy
first, instead of knocking again at the full one that keeps its connection
(several workers share a socket, and a kept-alive connection stays with the
worker that accepted it).

The count is a process's own capacity, not a shared decision (the limits
that are shared, such as a person's rate of model calls, live in the
database and the cache). The body of the refusal is the host's to choose
(the API's JSON, a protocol's error object, a page): the host passes a
function of the request's path.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any

from chatcore import conf

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
# A refusal's body for a path: (content type, bytes).
RefusalBody = Callable[[str], tuple[str, bytes]]

OVERLOADED_DETAIL = "The server is busy: too many requests in flight. Retry after the time Retry-After gives."


def api_refusal(path: str) -> tuple[str, bytes]:
    """The API's error body (`detail` and `code`), whatever the path: the default refusal."""
    return "application/json", json.dumps({"detail": OVERLOADED_DETAIL, "code": "overloaded"}).encode()


class InFlightLimit:
    """ASGI middleware: at most `CHATCORE_MAX_REQUESTS_IN_FLIGHT` HTTP requests at a time in this process
    (0: no limit); the others are refused with 503 and `Retry-After: CHATCORE_OVERLOAD_RETRY_AFTER_SECONDS`.
    Other scopes (lifespan, websockets) and the `uncounted` paths pass through uncounted: a liveness probe or a
    metrics scrape must be answered when the process is busiest, or a busy process looks dead. `in_flight` is
    the current count."""

    def __init__(self, app: ASGIApp, *, refusal: RefusalBody = api_refusal, uncounted: Collection[str] = ()) -> None:
        self.app = app
        self.refusal = refusal
        self.uncounted = frozenset(uncounted)
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self.uncounted:
            await self.app(scope, receive, send)
            return
        limit = conf.MAX_REQUESTS_IN_FLIGHT
        if limit and self.in_flight >= limit:
            await self._refuse(scope, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1

    async def _refuse(self, scope: Scope, send: Send) -> None:
        content_type, body = self.refusal(scope.get("path", ""))
        headers = [
            (b"content-type", content_type.encode("latin-1")),
            (b"content-length", str(len(body)).encode("latin-1")),
            (b"retry-after", str(conf.OVERLOAD_RETRY_AFTER_SECONDS).encode("latin-1")),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})
