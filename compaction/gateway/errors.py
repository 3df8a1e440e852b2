"""The error objects of the OpenAI protocol, and the one place the gateway turns a service's
failure into one (as the REST API's exception handler does for /api/): the services raise
domain errors (`chatcore.errors`, Django's ValidationError) and the views answer them here."""

from django.core.exceptions import ValidationError

from chatcore.errors import BudgetExhausted, Conflict, ModelCallFailed, ServiceError, Throttled, Unprocessable
from chatcore.observability.metrics import throttled

# The protocol's error type for each status a service error may carry; any other 5xx is a server_error.
_KINDS = {401: "invalid_request_error", 404: "invalid_request_error", 429: "requests"}
# A provider's answers that say the request was wrong (not the provider): passed on as the client's fault.
_REQUEST_FAULTS = (400, 404, 413, 422)


class ProtocolError(Exception):
    """An error object of the OpenAI protocol: {"error": {"message", "type", "param", "code"}} with a status."""

    def __init__(
        self, message: str, *, status: int = 400, type: str = "invalid_request_error", code: str | None = None,
        param: str | None = None, headers: dict | None = None,
    ):  # fmt: skip
        super().__init__(message)
        self.message, self.status, self.type, self.code, self.param = message, status, type, code, param
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def _retry_after(error: ServiceError) -> dict[str, str]:
    return {"Retry-After": str(error.retry_after)} if error.retry_after is not None else {}


def _model_failed(error: ModelCallFailed) -> ProtocolError:
    """The answering model's failure by what its provider said (the usage rows say what each attempt did);
    a model call the service made for its own work (a compaction) fails with its own code."""
    status = error.upstream_status
    if error.code != ModelCallFailed.code:
        return ProtocolError(error.message, status=502, type="server_error", code=error.code)
    if status == 429:
        return ProtocolError(error.message, status=429, type="requests", code="rate_limit_exceeded")
    if status in _REQUEST_FAULTS:
        return ProtocolError(f"The model's provider refused the request: {error.message}", code="upstream_rejected")
    return ProtocolError(error.message, status=502, type="server_error", code="upstream_error")


def protocol_error(error: ServiceError) -> ProtocolError:
    """A service's failure as the protocol reports it. Its `field` (in `extra`) is the `param`; a retry hint
    is a Retry-After header."""
    if isinstance(error, ModelCallFailed):
        return _model_failed(error)
    if isinstance(error, BudgetExhausted):  # the team's monthly budget, as OpenAI reports a spent quota
        return ProtocolError(
            error.message, status=429, type="insufficient_quota", code="insufficient_quota", headers=_retry_after(error)
        )
    if isinstance(error, Throttled):  # the person's limit on model calls, as OpenAI reports a rate limit
        throttled.labels(interface="v1").inc()
        return ProtocolError(
            error.message, status=429, type="requests", code="rate_limit_exceeded", headers=_retry_after(error)
        )
    param = error.extra.get("field")
    if isinstance(error, Conflict) and error.retry_after is not None:  # busy for now: OpenAI's overloaded answer
        return ProtocolError(
            error.message, status=503, type="server_error", code=error.code, headers=_retry_after(error)
        )
    if isinstance(error, Unprocessable):  # the protocol has no 422: a request that cannot be served is a 400
        return ProtocolError(error.message, code=error.code, param=param)
    status = error.status_code
    kind = _KINDS.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return ProtocolError(error.message, status=status, type=kind, code=error.code, param=param)


def error_from_validation(error: ValidationError) -> ProtocolError:
    """A service's ValidationError as a 400 error object naming the field."""
    if hasattr(error, "error_dict"):
        field, errors = next(iter(error.error_dict.items()))
        return ProtocolError(f"{field}: {errors[0].messages[0]}", param=field, code="invalid_value")
    return ProtocolError(error.messages[0] if error.messages else "Invalid request.", code="invalid_value")
