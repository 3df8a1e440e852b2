"""The OpenAPI schema documents every operation fully: a summary, a
description, the error responses that apply (with the one error shape and an
example), request examples, and clean component names. A new endpoint that
lacks any of them fails here."""

import json
import re

import pytest
from django.core.management import call_command

# Errors a view's nature does not imply, by operation: what its services can answer.
DECLARED = {
    "channels_compact_create": {409, 422, 429, 502},
    "channels_branch_create": {409, 422, 429, 502},
    "channels_reply_create": {429, 502},
    "summaries_revert_create": {409},
    "summaries_purge_create": {409},
    "profiles_destroy": {409},
    "channels_destroy": {400},
    "profiles_reset_create": {400},
    "profiles_list": {404},
    "profiles_export_retrieve": {403},
    "channels_export_retrieve": {403},
    "imports_create": {429},
}
ERROR_SHAPES = {"#/components/schemas/Error", "#/components/schemas/ValidationError"}


@pytest.fixture(scope="module")
def schema(django_db_blocker) -> dict:
    import io

    out = io.StringIO()
    with django_db_blocker.unblock():
        call_command("spectacular", "--format", "openapi-json", stdout=out)
    return json.loads(out.getvalue())


def operations(schema: dict):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield path, method.upper(), operation


def expected_errors(path: str, method: str, operation: dict) -> set[int]:
    codes = {401} if operation.get("security") != [{}] else set()
    if "{" in path:
        codes.add(404)
    if method != "GET":
        codes.add(403)
    if "requestBody" in operation:
        codes |= {400, 413}
    return codes | DECLARED.get(operation["operationId"], set())


def test_every_operation_has_summary_description_and_its_errors(schema):
    problems = []
    for path, method, operation in operations(schema):
        name = f"{method} {path}"
        if not operation.get("summary", "").strip():
            problems.append(f"{name}: no summary")
        if len(operation.get("description", "").strip()) < 20:
            problems.append(f"{name}: no description")
        documented = {int(code) for code in operation["responses"] if code.startswith(("4", "5"))}
        missing = expected_errors(path, method, operation) - documented
        if missing:
            problems.append(f"{name}: error responses missing {sorted(missing)}")
        for code, response in operation["responses"].items():
            if code.startswith(("4", "5")):
                body = response.get("content", {}).get("application/json", {})
                if body.get("schema", {}).get("$ref") not in ERROR_SHAPES or not body.get("examples"):
                    problems.append(f"{name}: {code} without the error shape and an example")
        if "requestBody" in operation:
            content = operation["requestBody"]["content"].get("application/json", {})
            if not content.get("examples"):
                problems.append(f"{name}: no request example")
    assert not problems, "\n".join(problems)


def test_component_names_are_clean(schema):
    names = list(schema["components"]["schemas"])
    bad = [n for n in names if not re.fullmatch(r"[A-Z][A-Za-z0-9]+", n) or "RequestRequest" in n or "Serializer" in n]
    assert not bad, bad
    assert {"Error", "ValidationError", "CompactRequest", "BranchRequest", "PurgeRequest"} <= set(names)


def test_list_operations_share_the_pagination_envelope(schema):
    lists = [
        (path, op) for path, method, op in operations(schema) if method == "GET" and op["operationId"].endswith("_list")
    ]
    assert {path for path, _op in lists} == {
        "/api/channels/",
        "/api/channels/{channel_id}/messages/",
        "/api/channels/{channel_id}/summaries/",
        "/api/profiles/",
        "/api/teams/",
        "/api/teams/{team_id}/members/",
        "/api/tokens/",
        "/api/usage/",
    }
    for path, op in lists:
        ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        component = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
        assert set(component["properties"]) == {"count", "next", "previous", "results"}, path
        assert {p["name"] for p in op["parameters"] if p["in"] == "query"} >= {"limit", "offset"}, path


def test_token_security_scheme_is_documented(schema):
    scheme = schema["components"]["securitySchemes"]["tokenAuth"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    assert "Authorization: Token" in scheme["description"]
