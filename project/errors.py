"""Error pages that fit the caller: JSON under /api/ (the same body as every
other API error: `detail` and `code`), Django's pages elsewhere.

They serve requests that never reached a DRF view: a path that matches no
route (such as /api/channels/-1/) or a crash outside one.
"""

from django.http import JsonResponse
from django.views import defaults


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def not_found(request, exception=None):
    if _is_api(request):
        return JsonResponse({"detail": "Not found: no API endpoint at this address.", "code": "not_found"}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if _is_api(request):
        return JsonResponse(
            {"detail": "Server error: the request could not be completed; it has been logged.", "code": "server_error"},
            status=500,
        )
    return defaults.server_error(request)
