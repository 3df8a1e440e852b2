"""The site's ASGI handler: Django's, with some of its per-request costs taken out.

- Its middleware: Django's security, CSRF and clickjacking middleware stay listed in MIDDLEWARE by their own
  dotted paths, where `check --deploy` looks for them, and are loaded as project.middleware's inline classes
  (`INLINE_SUBSTITUTES`): the same hooks, run in the event loop instead of one thread hop each.
- The request's thread: Django runs each request's synchronous steps on a thread of the request's own
  (`ThreadSensitiveContext`), a thread started for every request and joined by another at its end. Here the
  request's steps still run on one thread that no other request uses meanwhile, but the threads are kept
  between requests: a request takes an idle single-thread executor, or makes one, and gives it back when it
  ends.
- The request's signals: Django sends `request_started` through a thread hop of its own before the request,
  and closes the response (which sends `request_finished`) through another after it. Their receivers
  (Django's: the thread's database connections and the caches) concern the request's thread, so here they
  run there without a hop of their own: `request_started`'s just before the request's first synchronous step
  (in the same task of the thread, `RequestThread.before_next`), and the response's close queued on the
  thread as the request ends, which the event loop does not wait for (the thread runs it before any step of
  the next request it serves).
- The URL's resolution: Django walks the URLconf's patterns for every request (a regular expression per pattern
  tried, an exception per include that does not match), for paths that resolve the same way each time (the
  site's routes depend on nothing but the path: no translated routes, no converters with side effects). Here a
  path's match is kept (the most recent RESOLVED_PATHS_KEPT paths, per URLconf) and each request gets a copy of
  it with its own arguments and lists, as if resolved again. Only a named route's match of a path of at most
  KEPT_PATH_MAX_CHARS is kept: a path that matches nothing, or only a route that answers any path (the API's
  and the gateway's not-found answers, the admin's unnamed catch-all), is resolved anew each time, so that
  made-up paths neither push the served ones out nor hold memory.
- A streamed response's pieces: Django reads an async `StreamingHttpResponse` through two generators of its
  own (`__aiter__` around `streaming_content`'s wrapper, which passes each piece through `make_bytes`) and a
  third that cuts each piece into `chunk_size` slices, for every piece of every stream (a streamed reply's
  every token). Here the response's iterator is read directly, each piece sent as it is when it is already
  bytes no longer than a slice (`make_bytes` and the slicing otherwise, as Django applies them).
"""

import asyncio
import contextvars
import functools
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import aclosing
from typing import Any

from asgiref.sync import ThreadSensitiveContext
from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers import asgi
from django.http import HttpRequest
from django.http.response import HttpResponseBase, StreamingHttpResponse
from django.urls import ResolverMatch, URLResolver, get_resolver, set_script_prefix

from chatcore.overload import Receive, Scope, Send
from project.middleware import INLINE_SUBSTITUTES

logger = logging.getLogger("django.request")

# Idle request threads a worker keeps (the others end once their request has): enough for the requests a
# worker serves at once at its limit, few enough that a burst does not leave hundreds of threads behind.
IDLE_THREADS_KEPT = 256
# Paths whose URL resolution is kept: more than the distinct paths a worker serves within seconds under load (each
# conversation's reply path is one), few enough to bound the memory.
RESOLVED_PATHS_KEPT = 4096
# The longest path whose resolution is kept: the site's own routes with their ids are far shorter, and the bound
# keeps the kept paths' memory small however long the paths clients send.
KEPT_PATH_MAX_CHARS = 256
# The named routes that answer any path under their prefix (a not-found answer in the API's or the protocol's
# shape): their matches are not kept, like those of unnamed routes.
ANY_PATH_ROUTES = frozenset({"not-found", "unknown-url"})


class RequestThread(ThreadPoolExecutor):
    """A request's single thread. `before_next`: work that runs in the thread ahead of the next task
    submitted to it, in the same task (no hop of its own); `run_pending` submits it alone when no task came."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="request")
        self._before: Callable[[], None] | None = None

    def before_next(self, work: Callable[[], None]) -> None:
        self._before = work

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        before, self._before = self._before, None
        if before is None:
            return super().submit(fn, *args, **kwargs)
        return super().submit(_after, before, fn, *args, **kwargs)

    def run_pending(self) -> None:
        before, self._before = self._before, None
        if before is not None:
            super().submit(before)


def _after(before: Callable[[], None], fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    before()
    return fn(*args, **kwargs)


def _in_context(context: contextvars.Context, work: Callable[[], None], what: str) -> Callable[[], None]:
    """`work` run in the request's context (its caches live in context-local storage), its failure logged:
    nothing awaits it."""

    def run() -> None:
        try:
            context.run(work)
        except Exception:
            logger.exception("The request's %s failed", what)

    return run


class ASGIHandler(asgi.ASGIHandler):
    def __init__(self) -> None:
        self._idle: list[RequestThread] = []
        super().__init__()

    def load_middleware(self, is_async: bool = False) -> None:
        listed = settings.MIDDLEWARE
        # Django's loader imports each dotted path of the setting; it reads it once, here, as the worker starts.
        settings.MIDDLEWARE = [INLINE_SUBSTITUTES.get(path, path) for path in listed]
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = listed

    def resolve_request(self, request: HttpRequest) -> ResolverMatch:
        """Django's, with the match of a path resolved before taken from `_resolved` (see the module's docstring);
        a request that sets its own URLconf is resolved by Django's as it always is."""
        path = request.path_info
        if hasattr(request, "urlconf") or len(path) > KEPT_PATH_MAX_CHARS:
            return super().resolve_request(request)
        try:
            kept = _resolved(get_resolver(), path)
        except _NotKept as fresh:
            request.resolver_match = fresh.match
            return fresh.match
        match = ResolverMatch.__new__(ResolverMatch)  # a copy (the class refuses copy.copy, which pickles)
        match.__dict__.update(kept.__dict__)
        # The request's own mutable parts, as resolving again gives them (its args are a tuple).
        match.kwargs = dict(kept.kwargs)
        match.captured_kwargs = None if kept.captured_kwargs is None else dict(kept.captured_kwargs)
        match.extra_kwargs = None if kept.extra_kwargs is None else dict(kept.extra_kwargs)
        match.app_names = list(kept.app_names)
        match.namespaces = list(kept.namespaces)
        request.resolver_match = match
        return match

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        thread = self._idle.pop() if self._idle else RequestThread()
        try:
            async with ThreadSensitiveContext(executor=thread):
                await self._handle(scope, receive, send, thread)
        finally:
            thread.run_pending()  # a request that never reached its thread still has its signal's receivers run
            if len(self._idle) < IDLE_THREADS_KEPT:
                self._idle.append(thread)
            else:
                thread.shutdown(wait=False)

    async def _handle(self, scope: Any, receive: Any, send: Any, thread: RequestThread) -> None:
        """Django's `ASGIHandler.handle` (5.2), but for where `request_started` and the response's close run
        (see the module's docstring)."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(asgi.get_script_prefix(scope))
        context = contextvars.copy_context()

        def started() -> None:
            signals.request_started.send(sender=self.__class__, scope=scope)

        thread.before_next(_in_context(context, started, "request_started signal"))
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            assert error_response is not None
            body_file.close()
            await self.send_response(error_response, send)
            self._close_later(thread, error_response)
            return

        async def process_request(request: Any, send: Any) -> HttpResponseBase:
            response = await self.run_get_response(request)
            try:
                await self.send_response(response, send)
            except asyncio.CancelledError:
                pass  # the client disconnected during send_response
            return response

        # Django's: a disconnect is watched for while the response is made and sent.
        tasks = [
            asyncio.create_task(self.listen_for_disconnect(receive)),
            asyncio.create_task(process_request(request, send)),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
        try:
            response = tasks[1].result()
        except asyncio.CancelledError:
            # Django sends `request_finished` here (no response to close): in the request's thread too.
            def finished() -> None:
                signals.request_finished.send(sender=self.__class__)

            thread.submit(_in_context(contextvars.copy_context(), finished, "request_finished signal"))
        else:
            assert response is not None
            self._close_later(thread, response)
        body_file.close()

    async def send_response(self, response: HttpResponseBase, send: Any) -> None:
        """Django's, but for an async stream read as the module's docstring says."""
        if not _direct_stream(response):
            await super().send_response(response, send)
            return
        assert isinstance(response, StreamingHttpResponse)
        await send({"type": "http.response.start", "status": response.status_code, "headers": _headers(response)})
        chunk_size = self.chunk_size
        async with aclosing(response._iterator) as content:  # type: ignore[attr-defined]
            async for part in content:
                if type(part) is not bytes:
                    part = response.make_bytes(part)
                if len(part) <= chunk_size:
                    await send({"type": "http.response.body", "body": part, "more_body": True})
                    continue
                for chunk, _ in self.chunk_bytes(part):
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body"})

    @staticmethod
    def _close_later(thread: RequestThread, response: HttpResponseBase) -> None:
        """The response closed (`request_finished` sent) in the request's thread, after the steps queued there."""
        thread.submit(_in_context(contextvars.copy_context(), response.close, "response close"))


class _NotKept(Exception):
    """A path's match that is not to be kept (see the module's docstring): raised through the cache, which keeps
    no exception, with the match for this request."""

    def __init__(self, match: ResolverMatch) -> None:
        super().__init__(match.route)
        self.match = match


@functools.lru_cache(maxsize=RESOLVED_PATHS_KEPT)
def _resolved(resolver: URLResolver, path: str) -> ResolverMatch:
    """The URLconf's match for a path (Resolver404 when none, _NotKept for a route that answers any path; neither
    is kept): the URLconf's resolver is part of the key, so a changed ROOT_URLCONF (a new resolver) resolves
    afresh."""
    match = resolver.resolve(path)
    if match.url_name is None or match.url_name in ANY_PATH_ROUTES:
        raise _NotKept(match)
    return match


def _direct_stream(response: HttpResponseBase) -> bool:
    """An async StreamingHttpResponse whose iteration is Django's own (no subclass changes how it is read)."""
    kind = type(response)
    return (
        response.streaming
        and getattr(response, "is_async", False)
        and kind.__aiter__ is StreamingHttpResponse.__aiter__  # type: ignore[attr-defined]
        and kind.streaming_content is StreamingHttpResponse.streaming_content  # type: ignore[attr-defined]
        and kind.make_bytes is StreamingHttpResponse.make_bytes
    )


def _headers(response: HttpResponseBase) -> list[tuple[bytes, bytes]]:
    """The response's headers and cookies as Django's `send_response` encodes them."""
    headers: list[tuple[bytes, bytes]] = []
    for name, value in response.items():
        encoded_name = name.encode("ascii") if isinstance(name, str) else name
        encoded_value = value.encode("latin1") if isinstance(value, str) else value
        headers.append((bytes(encoded_name), bytes(encoded_value)))
    for cookie in response.cookies.values():
        headers.append((b"Set-Cookie", cookie.output(header="").encode("ascii").strip()))
    return headers
