"""The one error class services raise besides Django's ValidationError.

Each subclass carries the HTTP status the API maps it to, so interfaces
never re-decide what a failure means; `error_text` is the one way any
interface (pages, admin, commands, logs) turns a failure into words.
"""

from django.core.exceptions import ValidationError


class ServiceError(Exception):
    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, extra: dict | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.extra = extra or {}


class NotFound(ServiceError):
    status_code = 404
    code = "not_found"


class PermissionDenied(ServiceError):
    status_code = 403
    code = "forbidden"


class Conflict(ServiceError):
    status_code = 409
    code = "conflict"


class Unprocessable(ServiceError):
    status_code = 422
    code = "unprocessable"


class Throttled(ServiceError):
    """Too many model-calling requests in the window (chatcore.throttling); nothing was done.

    `retry_after` (seconds, at least 1) is sent as the Retry-After header by every interface.
    """

    status_code = 429
    code = "throttled"

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message, extra={"retry_after": retry_after})
        self.retry_after = retry_after


class ModelCallFailed(ServiceError):
    """The language model did not give a usable answer; nothing was written."""

    status_code = 502
    code = "model_failed"


def error_text(error: BaseException, *, separator: str = "; ", name_unexpected: bool = False) -> str:
    """A failure in words for a person: a ValidationError's messages (every field's, joined by
    `separator`), a ServiceError's message, else the exception's own text (after its class
    name with `name_unexpected`, for logs and records where the kind matters)."""
    if isinstance(error, ValidationError):
        return separator.join(error.messages)
    if isinstance(error, ServiceError):
        return error.message
    return f"{type(error).__name__}: {error}" if name_unexpected else str(error)
