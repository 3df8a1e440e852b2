"""One place that turns service errors into HTTP responses.

Every error body has `detail` (a sentence for people) and `code` (for
programs); validation errors add `errors`, a field → messages map.
"""

import math

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from chatcore.errors import ServiceError, Throttled
from chatcore.observability.metrics import throttled


def _validation_errors(error: DjangoValidationError) -> dict:
    if hasattr(error, "error_dict"):
        return {field: [m for e in errors for m in e.messages] for field, errors in error.error_dict.items()}
    return {"non_field_errors": error.messages}


def _first_message(errors) -> str:
    if isinstance(errors, dict):
        for field, value in errors.items():
            message = _first_message(value)
            return message if field == "non_field_errors" else f"{field}: {message}"
    if isinstance(errors, list) and errors:
        return _first_message(errors[0])
    return str(errors)


def too_large_body() -> dict:
    """The 413 body: the request was refused before it was read, so nothing was written."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return {
        "detail": f"The request body is larger than the server accepts ({limit:,} bytes at most); nothing was written.",
        "code": "too_large",
    }


def exception_handler(exc, context):
    if isinstance(exc, RequestDataTooBig):  # Django refuses to read a body over DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(too_large_body(), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, ServiceError):
        if isinstance(exc, Throttled):
            throttled.labels(interface="api").inc()
        body = {"detail": exc.message, "code": exc.code, **exc.extra}
        service_response = Response(body, status=exc.status_code)
        if exc.status_code == 429 and exc.extra.get("retry_after"):
            service_response["Retry-After"] = str(exc.extra["retry_after"])
        return service_response
    if isinstance(exc, DjangoValidationError):
        errors = _validation_errors(exc)
        return Response(
            {"detail": _first_message(errors), "code": "invalid", "errors": errors}, status=status.HTTP_400_BAD_REQUEST
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found.")
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        errors = response.data if isinstance(response.data, dict) else {"non_field_errors": response.data}
        response.data = {"detail": _first_message(errors), "code": "invalid", "errors": errors}
    elif isinstance(exc, exceptions.APIException):
        detail = response.data.get("detail", str(exc)) if isinstance(response.data, dict) else str(exc)
        response.data = {
            "detail": str(detail),
            "code": exc.get_codes() if isinstance(exc.get_codes(), str) else exc.default_code,
        }
        wait = getattr(exc, "wait", None) if isinstance(exc, exceptions.Throttled) else None
        if wait is not None:
            response.data["retry_after"] = int(math.ceil(wait))
    return response
