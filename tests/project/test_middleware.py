"""The site's middleware: the static files, which no view test reaches on its own, and Django's middleware
with its hooks in the event loop."""

import asyncio
import secrets
import threading

import csp.middleware as csp_middleware
import pytest
from asgiref.sync import async_to_sync, iscoroutinefunction
from django.conf import settings
from django.contrib import messages
from django.contrib.messages.storage.cookie import CookieStorage
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.models import Session
from django.http import HttpResponse
from django.test import AsyncRequestFactory, RequestFactory, override_settings
from django.utils.functional import empty

from project.middleware import (
    CSPMiddleware,
    InlineMiddleware,
    MessageMiddleware,
    SessionMiddleware,
    StaticFilesMiddleware,
)


def _middleware(tmp_path, get_response):
    (tmp_path / "app.css").write_text("body { margin: 0 }")
    middleware = StaticFilesMiddleware(get_response)
    middleware.add_files(str(tmp_path), prefix="static/")
    return middleware


def test_static_files_are_served_in_the_event_loop_and_the_rest_goes_on(tmp_path):
    async def view(request):
        return HttpResponse("the view")

    middleware = _middleware(tmp_path, view)
    assert iscoroutinefunction(middleware)  # Django calls it without a thread hop
    factory = AsyncRequestFactory()
    served = asyncio.run(middleware(factory.get("/static/app.css")))
    passed = asyncio.run(middleware(factory.get("/api/channels/")))
    assert served.status_code == 200 and b"".join(served.streaming_content) == b"body { margin: 0 }"
    assert passed.content == b"the view"


def test_under_wsgi_it_is_whitenoise_as_it_was(tmp_path):
    middleware = _middleware(tmp_path, lambda request: HttpResponse("the view"))
    assert not iscoroutinefunction(middleware)
    served = middleware(RequestFactory().get("/static/app.css"))
    assert served.status_code == 200 and b"".join(served.streaming_content) == b"body { margin: 0 }"
    assert middleware(RequestFactory().get("/api/channels/")).content == b"the view"


class _Recorded(InlineMiddleware):
    """Records the thread each hook runs in."""

    def __init__(self, get_response):
        super().__init__(get_response)
        self.threads: list[int] = []

    def process_request(self, request):
        self.threads.append(threading.get_ident())

    def process_response(self, request, response):
        self.threads.append(threading.get_ident())
        return response


def test_inline_hooks_run_in_the_event_loop():
    loop_thread = []

    async def view(request):
        loop_thread.append(threading.get_ident())
        return HttpResponse("the view")

    middleware = _Recorded(view)
    assert iscoroutinefunction(middleware)
    assert asyncio.run(middleware(AsyncRequestFactory().get("/"))).content == b"the view"
    assert middleware.threads == loop_thread * 2


def _with_session(view):
    return SessionMiddleware(view)


@pytest.mark.django_db
def test_a_session_left_alone_is_not_saved_and_a_changed_one_is_saved_in_a_thread():
    """The database is read in a thread: inline in the event loop, Django refuses it
    (SynchronousOnlyOperation), so the saved row shows the hook ran in one."""

    async def reads(request):
        return HttpResponse("read")

    async def writes(request):
        request.session["seen"] = True
        return HttpResponse("written")

    assert not async_to_sync(_with_session(reads))(AsyncRequestFactory().get("/")).cookies
    response = async_to_sync(_with_session(writes))(AsyncRequestFactory().get("/"))
    key = response.cookies[settings.SESSION_COOKIE_NAME].value
    assert Session.objects.get(session_key=key).get_decoded() == {"seen": True}


@pytest.mark.django_db
def test_a_message_that_does_not_fit_its_cookie_goes_to_the_session():
    """The message storage falls back on the session (read from the database, in a thread) when the
    cookie would be too large."""

    async def view(request):
        messages.info(request, secrets.token_hex(4_000))  # incompressible: too large for the cookie
        return HttpResponse("told")

    response = async_to_sync(_with_session(MessageMiddleware(view)))(AsyncRequestFactory().get("/"))
    key = response.cookies[settings.SESSION_COOKIE_NAME].value
    assert "_messages" in Session.objects.get(session_key=key).get_decoded()


@pytest.mark.django_db
def test_the_message_storage_is_made_only_for_a_request_that_uses_it():
    """A request that neither adds nor reads a message gets no storage (nothing to save, no cookie); one
    that adds a message gets Django's: the message in its cookie, read back by the next request."""
    made = []

    async def quiet(request):
        return HttpResponse("quiet")

    async def tells(request):
        messages.info(request, "Saved.")
        made.append(request._messages._wrapped)
        return HttpResponse("told")

    request = AsyncRequestFactory().get("/")
    response = async_to_sync(_with_session(MessageMiddleware(quiet)))(request)
    assert request._messages._wrapped is empty and not response.cookies
    response = async_to_sync(_with_session(MessageMiddleware(tells)))(AsyncRequestFactory().get("/"))
    assert isinstance(made[0], FallbackStorage) and CookieStorage.cookie_name in response.cookies
    seen = []

    async def reads(request):
        seen.extend(str(message) for message in messages.get_messages(request))
        return HttpResponse("read")

    later = AsyncRequestFactory().get("/")
    later.COOKIES[CookieStorage.cookie_name] = response.cookies[CookieStorage.cookie_name].value
    response = async_to_sync(_with_session(MessageMiddleware(reads)))(later)
    assert seen == ["Saved."] and response.cookies[CookieStorage.cookie_name].value == ""  # read: cleared


def _csp_headers(middleware, *, nonce: bool = False, decorate=None) -> dict[str, str]:
    request = RequestFactory().get("/api/anything")
    middleware.process_request(request)
    if nonce:
        str(request.csp_nonce)
    response = HttpResponse("x")
    if decorate is not None:
        decorate(response)
    middleware.process_response(request, response)
    return {name: value for name, value in response.items() if name.startswith("Content-Security-Policy")}


def test_the_settings_csp_policy_is_django_csp_s_built_once_and_rebuilt_when_the_setting_changes():
    ours, theirs = CSPMiddleware(lambda request: None), csp_middleware.CSPMiddleware(lambda request: None)
    assert _csp_headers(ours) == _csp_headers(theirs) != {}
    assert _csp_headers(ours) == _csp_headers(theirs)  # from what was built at the first response

    def replaced(response):
        response._csp_replace = {"img-src": ["https://example.com"]}

    assert _csp_headers(ours, decorate=replaced) == _csp_headers(theirs, decorate=replaced) != _csp_headers(ours)
    # A response whose page asked for a nonce is built as django-csp builds it (the settings place no nonce).
    assert _csp_headers(ours, nonce=True) == _csp_headers(theirs, nonce=True)

    changed = {**settings.CONTENT_SECURITY_POLICY, "DIRECTIVES": {"default-src": ["'none'"]}}
    with override_settings(CONTENT_SECURITY_POLICY=changed):
        assert _csp_headers(ours) == _csp_headers(theirs) == {"Content-Security-Policy": "default-src 'none'"}
    assert _csp_headers(ours) == _csp_headers(theirs)
