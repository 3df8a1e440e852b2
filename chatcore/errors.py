"""The one error class services raise besides Django's ValidationError.

Each subclass carries the HTTP status the API maps it to, so interfaces
never re-decide what a failure means; `error_text` is the one way any
interface (pages, admin, commands, logs) turns a failure into words.
"""

from typing import Any

from django.core.exceptions import ValidationError


class ServiceError(Exception):
    """A failure a service reports. Each kind states its HTTP status and stable code once, in its
    class line (`class NotFound(ServiceError, status_code=404, code="not_found")`); a raise may
    still give a more precise `code` (e.g. `in_progress` for a Conflict). `extra` holds the values
    behind it (`field`: the input it is about); `retry_after`, when given, the seconds after which
    the same request may succeed, which each interface says in its own way."""

    status_code = 400
    code = "invalid"

    def __init_subclass__(cls, *, status_code: int | None = None, code: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if status_code is not None:
            cls.status_code = status_code
        if code is not None:
            cls.code = code

    def __init__(
        self, message: str, *, code: str | None = None, extra: dict | None = None, retry_after: int | None = None
    ):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.extra = extra or {}
        self.retry_after = retry_after


class NotFound(ServiceError, status_code=404, code="not_found"):
    """No such object, or not the requester's: another person's objects are never disclosed."""


class PermissionDenied(ServiceError, status_code=403, code="forbidden"):
    """The requester may not do this, e.g. a change only staff may make."""


class Conflict(ServiceError, status_code=409, code="conflict"):
    """The state does not allow it now (a compaction in progress, the channel changed); nothing was written."""


class Unprocessable(ServiceError, status_code=422, code="unprocessable"):
    """Understood but not possible, e.g. too few messages to compact; `extra` says why, with the values."""


class Throttled(ServiceError, status_code=429, code="throttled"):
    """Too many model-calling requests in the window (chatcore.throttling); nothing was done.

    `retry_after` (seconds, at least 1) is sent as the Retry-After header by every interface.
    """

    retry_after: int

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message, extra={"retry_after": retry_after}, retry_after=retry_after)


class BudgetExhausted(Throttled, code="budget_exhausted"):
    """A team's monthly token or cost budget is spent (chatcore.teams.budgets): model calls for its channels are
    refused until the budget resets at the start of next month, which `retry_after` counts down to."""


class ModelCallFailed(ServiceError, status_code=502, code="model_failed"):
    """The language model did not give a usable answer; nothing was written.

    `extra["errors"]` says what each model tried did (shown to clients). `upstream_status` is the last
    HTTP status a model answered with (None for timeouts, connection failures and unusable answers),
    kept out of the body: a provider's 4xx is the request's fault, which an interface may tell apart
    from a failing provider (the /v1 gateway answers it as the provider's refusal).
    """

    def __init__(
        self, message: str, *, code: str | None = None, extra: dict | None = None, upstream_status: int | None = None
    ):
        super().__init__(message, code=code, extra=extra)
        self.upstream_status = upstream_status


def error_text(error: BaseException, *, separator: str = "; ", name_unexpected: bool = False) -> str:
    """A failure in words for a person: a ValidationError's messages (every field's, joined by
    `separator`), a ServiceError's message, else the exception's own text (after its class
    name with `name_unexpected`, for logs and records where the kind matters)."""
    if isinstance(error, ValidationError):
        return separator.join(error.messages)
    if isinstance(error, ServiceError):
        return error.message
    return f"{type(error).__name__}: {error}" if name_unexpected else str(error)
