"""The services' errors in the protocol's terms: one mapping (compaction.gateway.errors), as the REST
API has one exception handler."""

import pytest
from django.core.exceptions import ValidationError

from chatcore.errors import Conflict, ModelCallFailed, NotFound, PermissionDenied, Throttled, Unprocessable
from compaction.gateway.errors import error_from_validation, protocol_error


def answered(error) -> tuple[int, dict, dict]:
    protocol = protocol_error(error)
    return protocol.status, protocol.body()["error"], protocol.headers


def body(message: str, kind: str, code: str, param: str | None = None) -> dict:
    return {"message": message, "type": kind, "param": param, "code": code}


FAILED = "The model call failed: m: slow down"
REFUSED = body(f"The model's provider refused the request: {FAILED}", "invalid_request_error", "upstream_rejected")


@pytest.mark.parametrize(
    ("upstream_status", "status", "expected"),
    [
        (429, 429, body(FAILED, "requests", "rate_limit_exceeded")),
        (400, 400, REFUSED),
        (413, 400, REFUSED),
        (500, 502, body(FAILED, "server_error", "upstream_error")),
        (None, 502, body(FAILED, "server_error", "upstream_error")),
    ],
)
def test_the_answering_model_s_failure_follows_what_its_provider_said(upstream_status, status, expected):
    error = ModelCallFailed(FAILED, upstream_status=upstream_status)
    assert answered(error) == (status, expected, {})


def test_a_model_call_of_the_service_s_own_work_fails_with_its_own_code():
    error = ModelCallFailed("Compacting failed: m: timeout", code="compaction_failed", upstream_status=429)
    assert answered(error) == (502, body("Compacting failed: m: timeout", "server_error", "compaction_failed"), {})


def test_the_person_s_limit_is_a_rate_limit_with_its_wait():
    error = Throttled("Too many requests; try again in 7 seconds.", retry_after=7)
    expected = body("Too many requests; try again in 7 seconds.", "requests", "rate_limit_exceeded")
    assert answered(error) == (429, expected, {"Retry-After": "7"})


def test_a_conflict_with_a_retry_hint_is_503_and_one_without_is_409():
    busy = Conflict("Busy; try again.", code="compaction_in_progress", retry_after=5)
    assert answered(busy) == (
        503,
        body("Busy; try again.", "server_error", "compaction_in_progress"),
        {"Retry-After": "5"},
    )
    moved = Conflict("The channel changed.", code="channel_changed")
    assert answered(moved) == (409, body("The channel changed.", "invalid_request_error", "channel_changed"), {})


def test_the_field_an_error_is_about_is_its_param():
    missing = NotFound("No such model.", code="model_not_found", extra={"field": "model"})
    assert answered(missing) == (404, body("No such model.", "invalid_request_error", "model_not_found", "model"), {})
    too_long = Unprocessable("Too long.", code="context_length_exceeded", extra={"field": "messages", "tokens": 9})
    expected = body("Too long.", "invalid_request_error", "context_length_exceeded", "messages")
    assert answered(too_long) == (400, expected, {})  # the protocol has no 422
    refused = PermissionDenied("Staff only.")
    assert answered(refused) == (403, body("Staff only.", "invalid_request_error", "forbidden"), {})


def test_a_validation_error_names_its_field():
    protocol = error_from_validation(ValidationError({"title": "Give the channel a title."}))
    assert (protocol.status, protocol.body()["error"]) == (
        400,
        body("title: Give the channel a title.", "invalid_request_error", "invalid_value", "title"),
    )
