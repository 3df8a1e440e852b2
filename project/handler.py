"""The site's ASGI handler: Django's, with two of its per-request costs taken out.

- Its middleware: Django's security, CSRF and clickjacking middleware stay listed in MIDDLEWARE by their own
  dotted paths, where `check --deploy` looks for them, and are loaded as project.middleware's inline classes
  (`INLINE_SUBSTITUTES`): the same hooks, run in the event loop instead of one thread hop each.
- The request's thread: Django runs each request's synchronous steps on a thread of the request's own
  (`ThreadSensitiveContext`), a thread started for every request and joined by another at its end. Here the
  request's steps still run on one thread that no other request uses meanwhile, but the threads are kept
  between requests: a request takes an idle single-thread executor, or makes one, and gives it back when it
  ends.
"""

from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext
from django.conf import settings
from django.core.handlers import asgi

from chatcore.overload import Receive, Scope, Send
from project.middleware import INLINE_SUBSTITUTES

# Idle request threads a worker keeps (the others end once their request has): enough for the requests a
# worker serves at once at its limit, few enough that a burst does not leave hundreds of threads behind.
IDLE_THREADS_KEPT = 256


class ASGIHandler(asgi.ASGIHandler):
    def __init__(self) -> None:
        self._idle: list[ThreadPoolExecutor] = []
        super().__init__()

    def load_middleware(self, is_async: bool = False) -> None:
        listed = settings.MIDDLEWARE
        # Django's loader imports each dotted path of the setting; it reads it once, here, as the worker starts.
        settings.MIDDLEWARE = [INLINE_SUBSTITUTES.get(path, path) for path in listed]
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = listed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self._idle.pop() if self._idle else ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            if len(self._idle) < IDLE_THREADS_KEPT:
                self._idle.append(executor)
            else:
                executor.shutdown(wait=False)
