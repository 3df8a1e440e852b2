"""The site's own middleware: WhiteNoise, the site's static file server (the `site` extra), made
async-capable. It lives here, not in the apps, because the apps do not depend on WhiteNoise: a host site
serves its static files as it chooses."""

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings as django_settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase
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
