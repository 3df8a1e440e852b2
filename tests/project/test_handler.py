"""The site's ASGI handler (project/handler.py): Django's security, CSRF and clickjacking middleware with
their hooks in the event loop, and request threads kept between requests."""

import asyncio
import collections
from http.cookies import SimpleCookie

import pytest
from asgiref import sync as asgiref_sync
from django.conf import settings

from project.handler import ASGIHandler
from project.middleware import INLINE_SUBSTITUTES


def _scope(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


async def _request(handler, method: str, path: str, *, headers=(), body: bytes = b"") -> tuple[int, dict, bytes]:
    sent: list[dict] = []
    finished = asyncio.Event()
    delivered = False

    async def receive() -> dict:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            finished.set()

    await handler(_scope(method, path, list(headers)), receive, send)
    start = sent[0]
    response_headers: dict[bytes, list[bytes]] = collections.defaultdict(list)
    for name, value in start["headers"]:
        response_headers[name.lower()].append(value)
    return start["status"], response_headers, b"".join(message.get("body", b"") for message in sent[1:])


@pytest.fixture
def hops(monkeypatch):
    """The functions run through `sync_to_async` (a thread hop each), by name."""
    called: collections.Counter = collections.Counter()
    original = asgiref_sync.SyncToAsync.__call__

    def counted(self, *args, **kwargs):
        called[getattr(self.func, "__qualname__", repr(self.func))] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(asgiref_sync.SyncToAsync, "__call__", counted)
    return called


@pytest.mark.django_db(transaction=True)
def test_django_s_middleware_keeps_its_paths_and_runs_its_hooks_in_the_event_loop(hops):
    # `check --deploy` looks for these by their paths.
    assert set(INLINE_SUBSTITUTES) <= set(settings.MIDDLEWARE)
    status, headers, body = asyncio.run(_request(ASGIHandler(), "GET", "/login/"))

    assert status == 200 and b"csrfmiddlewaretoken" in body
    # Clickjacking's, security's and CSRF's response hooks did their work.
    assert headers[b"x-frame-options"] == [b"DENY"] and headers[b"x-content-type-options"] == [b"nosniff"]
    assert any(cookie.startswith(settings.CSRF_COOKIE_NAME.encode()) for cookie in headers[b"set-cookie"])
    assert not [name for name in hops if "Middleware" in name]


@pytest.mark.django_db(transaction=True)
def test_a_form_posted_without_its_csrf_token_is_refused_and_with_it_goes_through(hops):
    handler = ASGIHandler()
    _status, headers, _body = asyncio.run(_request(handler, "GET", "/login/"))
    cookie = SimpleCookie()
    for value in headers[b"set-cookie"]:
        cookie.load(value.decode())
    secret = cookie[settings.CSRF_COOKIE_NAME].value
    form = [(b"content-type", b"application/x-www-form-urlencoded")]
    with_cookie = [*form, (b"cookie", f"{settings.CSRF_COOKIE_NAME}={secret}".encode())]

    refused, _, _ = asyncio.run(_request(handler, "POST", "/login/", headers=form, body=b"username=a&password=b"))
    posted = f"username=a&password=b&csrfmiddlewaretoken={secret}".encode()
    accepted, _, body = asyncio.run(_request(handler, "POST", "/login/", headers=with_cookie, body=posted))

    assert refused == 403
    assert accepted == 200 and b"csrfmiddlewaretoken" in body  # the form again, with its errors
    assert hops["CsrfViewMiddleware.process_view"] == 2  # the check itself, in a thread, as Django runs it


@pytest.mark.django_db(transaction=True)
def test_request_threads_are_kept_and_requests_at_once_get_one_each():
    handler = ASGIHandler()
    asyncio.run(_request(handler, "GET", "/login/"))
    (kept,) = handler._idle
    asyncio.run(_request(handler, "GET", "/login/"))
    assert handler._idle == [kept]  # the same thread served the next request

    async def together() -> None:
        await asyncio.gather(*(_request(handler, "GET", "/login/") for _ in range(3)))

    asyncio.run(together())
    assert len(handler._idle) == 3 and kept in handler._idle
