"""The site's ASGI handler (project/handler.py): Django's security, CSRF and clickjacking middleware with
their hooks in the event loop, and request threads kept between requests."""

import asyncio
import collections
import json
import threading
from http.cookies import SimpleCookie

import pytest
from asgiref import sync as asgiref_sync
from django.conf import settings
from django.core import signals
from django.core.handlers import asgi
from django.http import StreamingHttpResponse
from django.test import RequestFactory
from django.urls import get_resolver

from project import handler as handler_module
from project.handler import ASGIHandler, RequestThread
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


@pytest.mark.django_db(transaction=True)
def test_the_request_signals_run_in_the_request_s_thread_without_hops_of_their_own(hops):
    ran: list[tuple[str, str]] = []

    def started(**kwargs) -> None:
        ran.append(("started", threading.current_thread().name))

    def finished(**kwargs) -> None:
        ran.append(("finished", threading.current_thread().name))

    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    try:
        handler = ASGIHandler()
        status, _headers, _body = asyncio.run(_request(handler, "GET", "/login/"))
        (thread,) = handler._idle
        thread.submit(lambda: None).result()  # the response's close is queued on the thread, not awaited
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)

    assert status == 200
    assert [event for event, _ in ran] == ["started", "finished"]
    assert len({name for _, name in ran}) == 1 and ran[0][1].startswith("request")
    # The view's step is the request's only hop: the signal and the close ride on its thread.
    assert not [name for name in hops if "send" in name or "close" in name], dict(hops)


def test_a_request_thread_runs_the_pending_work_ahead_of_its_next_task_or_alone():
    thread = RequestThread()
    ran: list[str] = []
    thread.before_next(lambda: ran.append("before"))
    assert thread.submit(lambda: ran.append("task") or len(ran)).result() == 2  # in the same task, first
    thread.before_next(lambda: ran.append("pending"))
    thread.run_pending()  # a request whose steps never reached its thread
    thread.run_pending()  # nothing left: nothing runs
    thread.submit(lambda: None).result()
    thread.shutdown()
    assert ran == ["before", "task", "pending"]


@pytest.mark.parametrize("pieces", [[b"event: delta\n\n", b"x" * 70_000, "text", memoryview(b"view"), b""], []])
def test_an_async_stream_is_sent_as_django_sends_it(pieces):
    """Read directly (no generators of Django's around it), an async stream sends what Django's handler
    sends: the same messages, a piece longer than a slice cut into slices, a str encoded; and its
    iterator is closed."""
    closed = []

    async def stream():
        try:
            for piece in pieces:
                yield piece
        finally:
            closed.append(True)

    async def sent_by(send_response) -> list[dict]:
        messages: list[dict] = []

        async def send(message: dict) -> None:
            messages.append(message)

        response = StreamingHttpResponse(stream(), content_type="text/event-stream", headers={"X-A": "b"})
        response.set_cookie("c", "d")
        await send_response(response, send)
        return messages

    handler = ASGIHandler()
    ours = asyncio.run(sent_by(handler.send_response))
    django_s = asyncio.run(sent_by(lambda response, send: asgi.ASGIHandler.send_response(handler, response, send)))
    assert ours == django_s and closed == [True, True]
    assert [len(message.get("body", b"")) for message in ours[1:]][:3] == ([14, 65_536, 4_464] if pieces else [0])


@pytest.mark.django_db(transaction=True)
def test_a_path_resolved_before_is_taken_from_the_kept_match_with_arguments_of_its_own(monkeypatch):
    handler_module._resolved.cache_clear()
    seen: list[dict] = []
    original = ASGIHandler.resolve_request

    def resolve(self, request):
        match = original(self, request)
        seen.append(match.kwargs)
        match.kwargs["channel_id"] = -1  # a middleware that changed its view's arguments
        return match

    monkeypatch.setattr(ASGIHandler, "resolve_request", resolve)
    handler = ASGIHandler()
    first = asyncio.run(_request(handler, "GET", "/api/channels/5/reply/"))
    second = asyncio.run(_request(handler, "GET", "/api/channels/5/reply/"))
    missing = [asyncio.run(_request(handler, "GET", "/nowhere/")) for _ in range(2)]

    assert first[0] == second[0] == 401  # resolved to the reply's view both times (not signed in)
    assert seen[0] is not seen[1] and seen[1] == {"channel_id": -1}  # each request its own arguments
    info = handler_module._resolved.cache_info()
    assert (info.hits, info.currsize) == (1, 1)  # the second request's match was the first's; a 404 is not kept
    assert [status for status, _, _ in missing] == [404, 404]
    match = handler_module._resolved(get_resolver(), "/api/channels/5/reply/")
    assert match.kwargs == {"channel_id": 5} and match.url_name == "reply"


@pytest.mark.django_db(transaction=True)
def test_the_matches_of_routes_that_answer_any_path_and_of_long_paths_are_resolved_anew(monkeypatch):
    handler_module._resolved.cache_clear()
    monkeypatch.setattr(handler_module, "KEPT_PATH_MAX_CHARS", 40)
    handler = ASGIHandler()
    long_path = "/api/channels/" + "7" * 30 + "/reply/"
    answers = [
        asyncio.run(_request(handler, "GET", path)) for path in ("/api/no/such/thing/", "/v1/no/such/", long_path)
    ]

    assert [status for status, _, _ in answers] == [404, 404, 401]
    assert json.loads(answers[0][2])["detail"] and json.loads(answers[1][2])["error"]["code"] == "unknown_url"
    assert handler_module._resolved.cache_info().currsize == 0
    with pytest.raises(handler_module._NotKept) as admin:
        handler_module._resolved(get_resolver(), "/admin/no/such/page/")  # the admin's unnamed catch-all
    assert admin.value.match.url_name is None and admin.value.match.app_name == "admin"


@pytest.mark.django_db(transaction=True)
def test_each_request_gets_its_own_lists_and_argument_dicts_of_a_kept_match():
    handler_module._resolved.cache_clear()
    handler = ASGIHandler()
    requests = [RequestFactory().get("/api/channels/5/reply/") for _ in range(2)]
    first, second = (handler.resolve_request(request) for request in requests)

    kept = handler_module._resolved(get_resolver(), "/api/channels/5/reply/")
    for part in ("kwargs", "captured_kwargs", "extra_kwargs", "app_names", "namespaces"):
        assert getattr(first, part) == getattr(second, part) == getattr(kept, part)
        assert getattr(first, part) is not getattr(second, part) and getattr(first, part) is not getattr(kept, part)
    assert first.url_name == second.url_name == "reply" and first.func is kept.func
