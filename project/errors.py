"""Error pages that fit the caller: JSON under /api/ (the same body as every
other API error: `detail` and `code`), Django's pages elsewhere.

The handlers serve requests that never reached a DRF view: a path that
matches no route (such as /api/channels/-1/) or a crash outside one. With
DEBUG on, Django answers those with its own HTML pages instead of calling the
handlers, and a few errors never reach them at all (a body Django refuses to
read, a CSRF failure), so `ApiJsonErrorsMiddleware`, around every other
middleware but the security and static-file ones, turns any
error under /api/ that is not JSON yet into the same body, in DEBUG too.
Under /v1 (the OpenAI-compatible gateway) it is the protocol's error object
instead, as OpenAI answers a path it does not serve:
`{"error": {"message": "Invalid URL (POST /v1/embeddings)", "type", "param", "code": "unknown_url"}}`.
"""

import json

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.views import defaults

from chatcore.api.errors import NOT_FOUND
from chatcore.api.exceptions import too_large_body
from chatcore.middleware import EdgeMiddleware
from chatcore.overload import OVERLOADED_DETAIL, api_refusal

SERVER_ERROR = {
    "detail": "Server error: the request could not be completed; it has been logged.",
    "code": "server_error",
}
KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def _is_gateway(request) -> bool:
    return request.path == "/v1" or request.path.startswith("/v1/")


def not_found(request, exception=None):
    if _is_api(request):
        return JsonResponse(NOT_FOUND, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if _is_api(request):
        return JsonResponse(SERVER_ERROR, status=500)
    return defaults.server_error(request)


def api_error_body(request: HttpRequest, response: HttpResponseBase) -> dict:
    """The API's error body for a status that something other than the API's handlers answered."""
    status = response.status_code
    if status >= 500:
        return SERVER_ERROR
    known = {
        400: {"detail": "Bad request: the server could not read this request.", "code": "bad_request"},
        403: {"detail": "Forbidden: this request was refused (a missing CSRF token?).", "code": "forbidden"},
        404: NOT_FOUND,
        405: {"detail": f"Method {request.method} is not allowed at this address.", "code": "method_not_allowed"},
        413: too_large_body(),
    }
    reason = response.reason_phrase or "Error"
    return known.get(status) or {"detail": f"{reason}.", "code": reason.lower().replace(" ", "_")}


def gateway_error_body(request: HttpRequest, response: HttpResponseBase) -> dict:
    """The OpenAI protocol's error object for an error /v1's own views did not answer."""
    status = response.status_code
    if status == 404:
        message, code = f"Invalid URL ({request.method} {request.path})", "unknown_url"
    else:
        message = str(api_error_body(request, response)["detail"])
        code = str(api_error_body(request, response)["code"])
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class ApiJsonErrorsMiddleware(EdgeMiddleware):
    """Every error answered under /api/ and /v1 is JSON: Django's HTML error pages (DEBUG's included)
    are replaced by the API's error body, with the same status and the headers a client acts on.
    Sync and async alike, without a thread hop: it only looks at the response (no I/O), so an
    async view's request stays in the event loop."""

    def after(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if (
            not (_is_api(request) or _is_gateway(request))
            or response.status_code < 400
            or response.streaming
            or "json" in response.get("Content-Type", "")
        ):
            return response
        body = gateway_error_body(request, response) if _is_gateway(request) else api_error_body(request, response)
        replaced: HttpResponse = JsonResponse(body, status=response.status_code)
        for name in KEPT_HEADERS:
            if response.has_header(name):
                replaced[name] = response[name]
        return replaced


def overload_refusal(path: str) -> tuple[str, bytes]:
    """The body of the 503 a full web process answers (chatcore.overload.InFlightLimit): the protocol's error
    object under /v1, the API's JSON under /api/, a short page elsewhere."""
    if path == "/v1" or path.startswith("/v1/"):
        error = {"message": OVERLOADED_DETAIL, "type": "server_error", "param": None, "code": "overloaded"}
        return "application/json", json.dumps({"error": error}).encode()
    if path.startswith("/api/"):
        return api_refusal(path)
    page = f"<!doctype html><html lang=en><title>Busy</title><h1>The server is busy</h1><p>{OVERLOADED_DETAIL}</p>"
    return "text/html; charset=utf-8", page.encode()
