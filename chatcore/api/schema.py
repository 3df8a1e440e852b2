"""The OpenAPI schema's conventions, in one place.

Every operation is documented by its method's docstring: the first
paragraph is the summary, the rest the description (`AutoSchema` reads
them); `extend_schema` on the method adds only what code cannot say (the
request and response shapes, a request example, parameters).

Every operation documents the errors it can answer, each with the one error
shape (`Error`, or `ValidationError` for 400) and an example body. Most are
implied by what the view is: 401 unless it is public, 403 for writes (CSRF
on a session, staff-only actions), 404 when the path names an object, 400
and 413 when there is a request body. The rest (409, 422, 502, and 429 where
a service counts the call against the limit on model calls) a view declares
per method in `schema_errors`.
"""

import inspect
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


def request_example(name: str, value: Any) -> OpenApiExample:
    """An example request body; every operation that takes a body shows one (test_api_schema checks)."""
    return OpenApiExample(name, value=value, request_only=True)


def _error(description: str, example: dict[str, Any], serializer=ErrorSerializer) -> OpenApiResponse:
    """An error response documented with one example body, written as the JSON it is (named by its code)."""
    return OpenApiResponse(
        response=serializer,
        description=description,
        examples=[OpenApiExample(example["code"], value=example, response_only=True)],
    )


ERRORS: dict[int, OpenApiResponse] = {
    400: _error(
        "The input is invalid; nothing was written. `errors` maps each field to its messages.",
        {
            "detail": "title: This field may not be blank.",
            "code": "invalid",
            "errors": {"title": ["This field may not be blank."]},
        },
        ValidationErrorSerializer,
    ),
    401: _error(
        "No credentials, or a token that is wrong, expired or revoked. "
        "Send `Authorization: Bearer <token>` or sign in.",
        {"detail": "Authentication credentials were not provided.", "code": "not_authenticated"},
    ),
    403: _error(
        "Refused: a write with a session but no CSRF token, or an action for staff only.",
        {"detail": "Only staff can change compaction profiles.", "code": "forbidden"},
    ),
    404: _error(
        "No such object, or not yours (another person's objects are never disclosed).",
        {"detail": "Channel not found.", "code": "not_found"},
    ),
    409: _error(
        "The state does not allow it now, e.g. a compaction of this channel is already in progress "
        "(`in_progress`) or the channel changed underneath (`channel_changed`); nothing was written.",
        {
            "detail": "A compaction of this channel is already in progress; try again when it has finished.",
            "code": "in_progress",
        },
    ),
    413: _error(
        "The request body is larger than the server accepts; nothing was written.",
        {"detail": "The request body is too large.", "code": "too_large"},
    ),
    422: _error(
        "Understood but not possible, e.g. too few messages to compact; the body says why, with the values in "
        "force (`keep_recent`, `profile`, counts).",
        {
            "detail": "Nothing to compact: 5 message(s) since the start, of which the newest 5 are kept as they "
            "are (keep_recent 6), leaves 0 to summarize; at least 4 are needed.",
            "code": "nothing_to_compact",
            "reason": "too_few_messages",
            "new_messages": 5,
            "keep_recent": 6,
            "kept": 5,
            "would_summarize": 0,
            "minimum": 4,
            "profile": "structured",
        },
    ),
    429: _error(
        "Too many model-calling requests; `retry_after` (and the Retry-After header) says when to try again.",
        {
            "detail": "Too many requests that call a model: at most 30 a minute. Nothing was done; try again in "
            "12 seconds.",
            "code": "throttled",
            "retry_after": 12,
        },
    ),
    502: _error(
        "The language model failed (and its fallback); nothing was lost (your message is kept) and "
        "`errors` lists each model's cause.",
        {
            "detail": "The model call failed: gpt-4o: OPENAI_API_KEY is not set",
            "code": "model_failed",
            "errors": ["gpt-4o: OPENAI_API_KEY is not set"],
        },
    ),
}

WRITES = {"POST", "PUT", "PATCH", "DELETE"}


class AutoSchema(SpectacularAutoSchema):
    def _documented(self) -> tuple[str, str] | None:
        """An operation is documented by its method's docstring: the first paragraph is the summary,
        the rest the description (each paragraph unwrapped: the wrapping is the source's, not the text's)."""
        doc = getattr(getattr(self.view, self.method.lower(), None), "__doc__", None)
        if not doc:
            return None
        summary, _, rest = inspect.cleandoc(doc).partition("\n\n")
        paragraphs = (" ".join(paragraph.split()) for paragraph in rest.split("\n\n"))
        return " ".join(summary.split()), "\n\n".join(p for p in paragraphs if p)

    def get_summary(self) -> str | None:
        documented = self._documented()
        return documented[0] if documented else super().get_summary()

    # drf-spectacular's signature (no arguments), not DRF's ViewInspector's that the stubs know.
    def get_description(self) -> str:  # type: ignore[override]
        documented = self._documented()
        return documented[1] if documented else super().get_description()

    def _implied_errors(self) -> set[int]:
        view = self.view
        codes: set[int] = set()
        permissions = list(getattr(view, "permission_classes", []))
        if not any(p is AllowAny for p in permissions):
            codes.add(401)
        staff = any(p is IsAdminUser for p in permissions) or self.method in getattr(view, "staff_rules", {})
        if self.method in WRITES or staff:
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
