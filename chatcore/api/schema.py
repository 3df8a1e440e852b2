"""The OpenAPI schema's conventions, in one place.

Every operation documents the errors it can answer, each with the one error
shape (`Error`, or `ValidationError` for 400) and an example body. Most are
implied by what the view is: 401 unless it is public, 403 for writes (CSRF
on a session, staff-only actions), 404 when the path names an object, 400
and 413 when there is a request body. The rest (409, 422, 502, and 429 where
a service counts the call against the limit on model calls) a view declares
per method in `schema_errors`.
"""

from typing import Any

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import AllowAny, IsAdminUser


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="A sentence for people.")
    code = serializers.CharField(help_text="A stable identifier for programs, e.g. `not_found`, `in_progress`.")

    class Meta:
        ref_name = "Error"


class ValidationErrorSerializer(ErrorSerializer):
    errors = serializers.DictField(  # type: ignore[assignment]  # a field named "errors", as in the bodies
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Field → messages; `non_field_errors` for the input as a whole.",
    )

    class Meta:
        ref_name = "ValidationError"


def _error(description: str, detail: str, code: str, serializer=ErrorSerializer, **extra: Any) -> OpenApiResponse:
    example = {"detail": detail, "code": code, **extra}
    return OpenApiResponse(
        response=serializer,
        description=description,
        examples=[OpenApiExample(code, value=example, response_only=True)],
    )


ERRORS: dict[int, OpenApiResponse] = {
    400: _error(
        "The input is invalid; nothing was written. `errors` maps each field to its messages.",
        "title: This field may not be blank.",
        "invalid",
        ValidationErrorSerializer,
        errors={"title": ["This field may not be blank."]},
    ),
    401: _error(
        "No credentials, or a token that is wrong, expired or revoked. "
        "Send `Authorization: Bearer <token>` or sign in.",
        "Authentication credentials were not provided.",
        "not_authenticated",
    ),
    403: _error(
        "Refused: a write with a session but no CSRF token, or an action for staff only.",
        "Only staff can change compaction profiles.",
        "forbidden",
    ),
    404: _error(
        "No such object, or not yours (another person's objects are never disclosed).",
        "Channel not found.",
        "not_found",
    ),
    409: _error(
        "The state does not allow it now, e.g. a compaction of this channel is already in progress "
        "(`in_progress`) or the channel changed underneath (`channel_changed`); nothing was written.",
        "A compaction of this channel is already in progress; try again when it has finished.",
        "in_progress",
    ),
    413: _error(
        "The request body is larger than the server accepts; nothing was written.",
        "The request body is too large.",
        "too_large",
    ),
    422: _error(
        "Understood but not possible, e.g. too few messages to compact; the body says why, with the values in "
        "force (`keep_recent`, `profile`, counts).",
        "Nothing to compact: 5 message(s) since the start, of which the newest 5 are kept as they are "
        "(keep_recent 6), leaves 0 to summarize; at least 4 are needed.",
        "nothing_to_compact",
        reason="too_few_messages",
        new_messages=5,
        keep_recent=6,
        kept=5,
        would_summarize=0,
        minimum=4,
        profile="structured",
    ),
    429: _error(
        "Too many model-calling requests; `retry_after` (and the Retry-After header) says when to try again.",
        "Too many requests that call a model: at most 30 a minute. Nothing was done; try again in 12 seconds.",
        "throttled",
        retry_after=12,
    ),
    502: _error(
        "The language model failed (and its fallback); nothing was lost (your message is kept) and "
        "`errors` lists each model's cause.",
        "The model call failed: gpt-4o: OPENAI_API_KEY is not set",
        "model_failed",
        errors=["gpt-4o: OPENAI_API_KEY is not set"],
    ),
}

WRITES = {"POST", "PUT", "PATCH", "DELETE"}


class AutoSchema(SpectacularAutoSchema):
    def _implied_errors(self) -> set[int]:
        view = self.view
        codes: set[int] = set()
        permissions = list(getattr(view, "permission_classes", []))
        if not any(p is AllowAny for p in permissions):
            codes.add(401)
        if self.method in WRITES or any(p is IsAdminUser for p in permissions):
            codes.add(403)
        if "{" in self.path:
            codes.add(404)
        if self.method in {"POST", "PUT", "PATCH"} and self.get_request_serializer() is not None:
            codes |= {400, 413}
        declared = getattr(view, "schema_errors", {}).get(self.method.lower(), ())
        return codes | set(declared)

    def _get_response_bodies(self, direction="response") -> dict:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code in sorted(self._implied_errors()):
            if str(code) not in responses:
                responses[str(code)] = self._get_response_for_code(ERRORS[code], str(code), direction=direction)
        return responses
