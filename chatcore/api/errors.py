"""The API's answer to an address under it that matches no endpoint: its JSON error body, wherever the
apps are mounted (the last route of the API's include, compaction/urls.py), instead of the host's page."""

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

NOT_FOUND = {"detail": "Not found: no API endpoint at this address.", "code": "not_found"}


@csrf_exempt  # answers every method with the same 404; nothing is read or written
def api_not_found(request: HttpRequest, *args: object, **kwargs: object) -> JsonResponse:
    return JsonResponse(NOT_FOUND, status=404)
