"""Every request gets an id: the one a trusted proxy sent in `X-Request-ID`, else a new one.

It is returned in the response's `X-Request-ID`, set on the work context (so every log line of
the request carries it, and the tasks it enqueues and the model calls it makes pass it on), and
closes the request with one log line (method, path, status, duration). Views marked `quiet`
(health probes, called every second by each balancer) log that line at DEBUG instead of INFO.

Place it first in MIDDLEWARE: redirects and refusals of the middleware after it get an id too.
"""

import ipaddress
import logging
import time
from collections.abc import Callable, Iterable

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.utils.functional import SimpleLazyObject

from chatcore import conf
from chatcore.middleware import EdgeMiddleware
from chatcore.observability.context import WorkContext, work_begin, work_note

HEADER = "X-Request-ID"
logger = logging.getLogger("chatcore.requests")


def quiet(view: Callable) -> Callable:
    """Mark a view whose requests are logged at DEBUG (probes that would drown the log)."""
    view.log_quietly = True  # type: ignore[attr-defined]
    return view


def address_listed(address: str, networks: Iterable[str]) -> bool:
    """Whether `address` is one of `networks` (addresses or CIDR networks, IPv4 or IPv6)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    for network in networks:
        try:
            if ip in ipaddress.ip_network(network.strip(), strict=False):
                return True
        except ValueError:
            continue
    return False


def request_id_from(request: HttpRequest) -> str | None:
    """The proxy's id, when the connection comes from a listed proxy (anyone else could forge it)."""
    incoming = request.headers.get(HEADER)
    if not incoming:
        return None
    if not address_listed(request.META.get("REMOTE_ADDR", ""), conf.REQUEST_ID_TRUSTED_PROXIES):
        return None
    return incoming


class RequestIdMiddleware(EdgeMiddleware):
    def __init__(self, get_response: Callable) -> None:
        super().__init__(get_response)
        if self.async_mode:
            # Django runs a plain `process_view` of an async stack in a thread: a hop for two attribute writes.
            self.process_view = self._aprocess_view  # type: ignore[method-assign,assignment]

    async def _aprocess_view(
        self, request: HttpRequest, view_func: Callable, view_args: tuple, view_kwargs: dict
    ) -> None:
        RequestIdMiddleware.process_view(self, request, view_func, view_args, view_kwargs)

    def before(self, request: HttpRequest) -> None:
        context = work_begin(request_id=request_id_from(request))
        request.request_id = context.request_id  # type: ignore[attr-defined]
        request.work_context = context  # type: ignore[attr-defined]
        return None

    def process_view(self, request: HttpRequest, view_func: Callable, view_args: tuple, view_kwargs: dict) -> None:
        request.log_quietly = getattr(view_func, "log_quietly", False)  # type: ignore[attr-defined]
        channel_id = view_kwargs.get("channel_id")
        if isinstance(channel_id, int):
            work_note(channel_id=channel_id)

    def after(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        context: WorkContext = request.work_context  # type: ignore[attr-defined]
        response[HEADER] = context.request_id
        # A user that authentication set (API tokens, the gateway), never the session's lazy one: reading
        # that would cost a query for a request that did not need the user.
        user = request.__dict__.get("user")
        if user is not None and not isinstance(user, SimpleLazyObject) and user.is_authenticated:
            work_note(user_id=user.pk)
        duration_ms = round((time.monotonic() - context.started) * 1000, 2)
        level = logging.DEBUG if getattr(request, "log_quietly", False) else logging.INFO
        logger.log(
            level, "%s %s %s", request.method, request.path, response.status_code, extra={"duration_ms": duration_ms}
        )
        return response
