"""The site's own middleware: WhiteNoise, the site's static file server (the `site` extra), made
async-capable, and Django's (and django-csp's) middleware with their hooks run in the event loop rather than
in a thread each (`InlineMiddleware`). It lives here, not in the apps, because the apps do not depend on
WhiteNoise: a host site serves its static files and orders its middleware as it chooses."""

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, cast

import csp.middleware as csp
from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings as django_settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.messages.storage import default_storage
from django.contrib.sessions import middleware as sessions
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.middleware import clickjacking, common, csrf, security
from django.utils.deprecation import MiddlewareMixin
from django.utils.functional import SimpleLazyObject, empty
from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise, async-capable. WhiteNoise's own middleware is sync-only, so under ASGI Django ran it in a
    thread (`sync_to_async`) and the async middleware and views inside it back through `async_to_sync`: two
    thread hops for every request, static or not. Its lookup is a dict read (the files are indexed when the
    worker starts), so it runs in the event loop here; what it answers is WhiteNoise's own response."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable, settings: Any = django_settings) -> None:
        super().__init__(get_response, settings=settings)
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.async_mode:
            return self._acall(request)
        return super().__call__(request)

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        # With autorefresh (development only) WhiteNoise looks on disk at each request, as its own middleware does.
        path = request.path_info
        static_file = self.find_file(path) if self.autorefresh else self.files.get(path)
        if static_file is not None:
            return self.serve(static_file, request)
        return await self.get_response(request)


class InlineMiddleware(MiddlewareMixin):
    """Django's `MiddlewareMixin`, its hooks run in the event loop under ASGI. Django's own mixin runs
    `process_request` and `process_response` each in a thread (`sync_to_async`), since a hook may read the
    database: two thread hops per middleware for every request. The hooks of the classes below read and
    write only the request and the response (headers, cookies, a lazy user), so they run inline; a hook that
    would reach the database this time says so in `needs_thread` and runs in a thread as Django runs it.
    (Django's security, CSRF and clickjacking middleware stay Django's own: `check --deploy` looks for them
    by their dotted paths in MIDDLEWARE.)"""

    def needs_thread(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        """Whether `process_response` may reach the database for this response (then it runs in a thread)."""
        return False

    def request_needs_thread(self, request: HttpRequest) -> bool:
        """Whether `process_request` may reach the database for this request (then it runs in a thread)."""
        return False

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        response = None
        process_request = getattr(self, "process_request", None)
        if process_request is not None:
            if self.request_needs_thread(request):
                response = await sync_to_async(process_request, thread_sensitive=True)(request)
            else:
                response = process_request(request)
        response = response or await cast(Awaitable[HttpResponseBase], self.get_response(request))
        process_response = getattr(self, "process_response", None)
        if process_response is not None:
            if self.needs_thread(request, response):
                return await sync_to_async(process_response, thread_sensitive=True)(request, response)
            response = process_response(request, response)
        return response


class CSPMiddleware(InlineMiddleware, csp.CSPMiddleware):
    """The Content-Security-Policy header (and its nonce). A response without a nonce and without a view's
    own policy (`csp.decorators`) gets the settings' policy, the same string every time: it is built once per
    setting (`_settings_policies`, emptied when the setting changes) instead of at every response."""

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        # django-csp's own, with `build_policy(**asdict(parts))` read through `_policy`.
        if response.status_code in CSP_DEBUG_EXEMPT and django_settings.DEBUG:
            return response
        for report_only, header, exempt, setting in CSP_HEADERS:
            policy = self._policy(
                self.get_policy_parts(request=request, response=response, report_only=report_only), report_only
            )
            if not policy or header in response or getattr(response, exempt, False) is not False:
                continue
            prefixes = (getattr(django_settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES", None) or ()
            if not request.path_info.startswith(tuple(prefixes)):
                response[header] = policy
        if getattr(request, "_csp_nonce", None) is None:
            request.csp_nonce = csp.CheckableLazyObject(self._csp_nonce_post_response)  # type: ignore[attr-defined]
        return response

    @staticmethod
    def _policy(parts: csp.PolicyParts, report_only: bool) -> str:
        if parts.config is None and parts.update is None and parts.replace is None and parts.nonce is None:
            policy = _settings_policies.get(report_only)
            if policy is None:
                policy = _settings_policies[report_only] = csp.build_policy(report_only=report_only)
            return policy
        return csp.build_policy(parts.config, parts.update, parts.replace, parts.nonce, report_only=report_only)


# django-csp's: a 500 or 404 page under DEBUG keeps its own policy (the debug pages' inline styles).
CSP_DEBUG_EXEMPT = frozenset({500, 404})
# Each header: report-only or not, its name, the response's attribute exempting it, its setting.
CSP_HEADERS = (
    (False, csp.HEADER, "_csp_exempt", "CONTENT_SECURITY_POLICY"),
    (True, csp.HEADER_REPORT_ONLY, "_csp_exempt_ro", "CONTENT_SECURITY_POLICY_REPORT_ONLY"),
)
# The settings' policy (by report-only), built at its first response.
_settings_policies: dict[bool, str] = {}


@receiver(setting_changed)
def _settings_policy_forget(*, setting: str, **kwargs: Any) -> None:
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _settings_policies.clear()


class CommonMiddleware(InlineMiddleware, common.CommonMiddleware):
    """The slash redirect (the URLconf, in memory) and Content-Length."""


class AuthenticationMiddleware(InlineMiddleware, auth.AuthenticationMiddleware):
    """A lazy user: the session is read when something asks for the user, in the thread that asks."""


class SessionMiddleware(InlineMiddleware, sessions.SessionMiddleware):
    """A lazy session; its response hook saves it (the database, or the cache) only when it changed, in a
    thread then."""

    def needs_thread(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        session = getattr(request, "session", None)
        return session is not None and (session.modified or django_settings.SESSION_SAVE_EVERY_REQUEST)


class MessageMiddleware(InlineMiddleware, messages.MessageMiddleware):
    """Messages kept in a cookie, or in the session when they do not fit: the session is read then (its
    store may be the database), in a thread. The storage is made when something first adds or reads a
    message (`SimpleLazyObject`): Django's makes it for every request, a cookie signer with it, while most
    requests (every API call, every stream) neither add nor read one. A storage never made has nothing to
    save, as Django's would have nothing (neither used nor added to)."""

    def process_request(self, request: HttpRequest) -> None:
        request._messages = SimpleLazyObject(partial(default_storage, request))  # type: ignore[attr-defined]

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if _storage_made(request):
            return super().process_response(request, response)
        return response

    def needs_thread(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        if not _storage_made(request):
            return False
        storage = request._messages  # type: ignore[attr-defined]
        return bool(storage.used or storage.added_new)


def _storage_made(request: HttpRequest) -> bool:
    """Whether the request has a message storage that was made (a storage set by other code counts as made)."""
    storage = getattr(request, "_messages", None)
    if storage is None:
        return False
    return not isinstance(storage, SimpleLazyObject) or storage._wrapped is not empty  # type: ignore[attr-defined]


class SecurityMiddleware(InlineMiddleware, security.SecurityMiddleware):
    """Django's: the HTTPS redirect and the security headers, from the settings and the request's headers.
    MIDDLEWARE keeps Django's dotted path (`check --deploy` looks for it there); the site's ASGI handler
    (project.handler) loads this class in its place."""


class XFrameOptionsMiddleware(InlineMiddleware, clickjacking.XFrameOptionsMiddleware):
    """Django's X-Frame-Options header, from the settings and the response; loaded as SecurityMiddleware is."""


# The methods Django's CSRF check lets through without reading the body or the session.
CSRF_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


class CsrfViewMiddleware(InlineMiddleware, csrf.CsrfViewMiddleware):
    """Django's CSRF protection, loaded as SecurityMiddleware is. With the secret in a cookie its request and
    response hooks read and write only cookies and headers, so they run inline; with CSRF_USE_SESSIONS they
    read the session (maybe the database) and run in a thread. The view hook runs inline where Django's
    accepts at once (an exempt view such as every API view, a safe method, a request already checked); the
    check itself (the form's body, a refusal rendered by CSRF_FAILURE_VIEW) runs in a thread, as Django runs it."""

    def __init__(self, get_response: Callable) -> None:
        super().__init__(get_response)
        if self.async_mode:
            # Django runs a plain `process_view` of an async stack in a thread: a hop per request.
            self.process_view = self._aprocess_view  # type: ignore[method-assign,assignment]

    def request_needs_thread(self, request: HttpRequest) -> bool:
        return bool(django_settings.CSRF_USE_SESSIONS)

    def needs_thread(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        return bool(django_settings.CSRF_USE_SESSIONS)

    async def _aprocess_view(
        self, request: HttpRequest, callback: Callable, callback_args: tuple, callback_kwargs: dict
    ) -> HttpResponseBase | None:
        accepted_at_once = not django_settings.CSRF_USE_SESSIONS and (
            getattr(request, "csrf_processing_done", False)
            or getattr(callback, "csrf_exempt", False)
            or request.method in CSRF_SAFE_METHODS
        )
        check = csrf.CsrfViewMiddleware.process_view
        if accepted_at_once:
            return check(self, request, callback, callback_args, callback_kwargs)
        return await sync_to_async(check, thread_sensitive=True)(
            self, request, callback, callback_args, callback_kwargs
        )


# Django's middleware listed by its own dotted path in MIDDLEWARE (where its deployment checks look for it)
# and loaded as the inline class beside it by the site's ASGI handler.
INLINE_SUBSTITUTES = {
    "django.middleware.security.SecurityMiddleware": "project.middleware.SecurityMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware": "project.middleware.CsrfViewMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware": "project.middleware.XFrameOptionsMiddleware",
}
