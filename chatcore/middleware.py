"""The one check of text that enters (chatcore.characters), at the edge, for what no parser of ours reads:
query strings and form fields, of every page, the admin and the log-in form (JSON bodies are checked where
they are parsed, by the API's parsers and the /v1 gateway). The first field holding a NUL is answered with a
400 naming it, before any view, form or log-in throttle touches it; a browser gets a page, any other client the
API's error body. (A form cannot carry a lone surrogate: its bytes are read as U+FFFD.)"""

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.http.response import HttpResponseBase
from django.utils.html import format_html

from chatcore.api.exceptions import too_large_body
from chatcore.characters import unstorable_field

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _refusal(
    request: HttpRequest, field: str, message: str, *, status: int = 400, code: str = "invalid"
) -> HttpResponse:
    detail = f"{field}: {message}" if field else message
    if "text/html" in request.headers.get("Accept", "") or request.headers.get("HX-Request"):
        page = format_html(
            "<!doctype html><html lang=en><title>Bad request</title><h1>Nothing was saved</h1><p>{}</p></html>",
            detail,
        )
        return HttpResponse(page, status=status)
    body: dict[str, Any] = {"detail": detail, "code": code}
    if field:
        body["errors"] = {field: [message]}
    return JsonResponse(body, status=status)


def _form(request: HttpRequest) -> Any:
    """The form fields, parsed as the view would (the view then reads them from here). A body Django refuses
    to read is answered as the API answers it (413, or 400 saying why), since the view could no longer."""
    try:
        return request.POST
    except RequestDataTooBig:
        return _refusal(request, "", too_large_body()["detail"], status=413, code="too_large")
    except (MultiPartParserError, SuspiciousOperation) as error:
        return _refusal(request, "", f"The form could not be read: {error}", code="parse_error")


def unstorable_refusal(request: HttpRequest) -> HttpResponse | None:
    """The 400 for the first query parameter or form field (its name or a value) holding a NUL; None if none."""
    # No query string, no query parameter: the request's QueryDict is not built for nothing (most API requests).
    queried = request.META.get("QUERY_STRING") or "GET" in request.__dict__
    found = unstorable_field(request.GET) if queried else None
    if found is None and request.content_type in FORM_TYPES:
        form = _form(request)
        if isinstance(form, HttpResponse):
            return form
        found = unstorable_field(form)
    if found is None:
        return None
    field, message = found
    return _refusal(request, field or "query", message)


class EdgeMiddleware:
    """A middleware that looks at the request before the view (`before`: a response answers at once) and at
    the response after it (`after`), sync and async alike without a thread hop: both are plain CPU work on
    what Django has read, so an async view's request stays in the event loop."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def before(self, request: HttpRequest) -> HttpResponseBase | None:
        return None

    def after(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        return response

    def __call__(self, request: HttpRequest) -> Any:
        if self.async_mode:
            return self._acall(request)
        return self.before(request) or self.after(request, self.get_response(request))

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        return self.before(request) or self.after(request, await self.get_response(request))


class UnstorableTextMiddleware(EdgeMiddleware):
    """A refusal before anything reads the text."""

    def before(self, request: HttpRequest) -> HttpResponseBase | None:
        return unstorable_refusal(request)
