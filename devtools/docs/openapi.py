"""The REST API page's reference, rendered from drf-spectacular's schema of the running URL conf (the
same document `/api/schema/` serves): each operation with its summary, description, parameters, request
body fields and examples, and responses; then every schema's fields. Written at build time, so the page
follows the views."""

from __future__ import annotations

import json
from typing import Any

from markdown.extensions.toc import slugify

METHODS = ("get", "post", "put", "patch", "delete")
MEDIA = "application/json"


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _ref_name(schema: dict[str, Any]) -> str:
    return schema["$ref"].rsplit("/", 1)[-1] if "$ref" in schema else ""


def _type(schema: dict[str, Any]) -> str:
    """A short type: a linked schema name, `array of X`, or the JSON type with its format."""
    if "$ref" in schema:
        name = _ref_name(schema)
        return f"[{name}](#{slugify(name, '-')})"
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return _type(schema["allOf"][0])
    for combiner in ("oneOf", "anyOf"):
        if combiner in schema:
            return " or ".join(_type(option) for option in schema[combiner])
    kind = schema.get("type", "object")
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    if "enum" in schema:
        return " \\| ".join(f"`{value}`" for value in schema["enum"] if value is not None)
    if isinstance(kind, list):
        kind = " or ".join(kind)
    text = f"{kind} ({schema['format']})" if "format" in schema else str(kind)
    return text + (", nullable" if schema.get("nullable") else "")


def _fields(schema: dict[str, Any]) -> list[str]:
    properties = schema.get("properties", {})
    if not properties:
        return []
    required = set(schema.get("required", []))
    rows = ["| field | type | required | description |", "|---|---|---|---|"]
    for name, field in properties.items():
        flags = "read-only" if field.get("readOnly") else ("yes" if name in required else "")
        rows.append(f"| `{name}` | {_type(field)} | {flags} | {_cell(field.get('description', ''))} |")
    return rows


def _examples(content: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for example in content.get("examples", {}).values():
        lines += [
            f"*{example.get('summary', 'Example')}*",
            "",
            "```json",
            json.dumps(example.get("value"), indent=2, ensure_ascii=False),
            "```",
            "",
        ]
    return lines


def _operation(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    lines = [f"### {operation.get('summary') or operation['operationId']}", "", f"`{method.upper()} {path}`", ""]
    if operation.get("description"):
        lines += [operation["description"], ""]
    parameters = operation.get("parameters", [])
    if parameters:
        lines += ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
        for parameter in parameters:
            lines.append(
                f"| `{parameter['name']}` | {parameter['in']} | {_type(parameter.get('schema', {}))} | "
                f"{'yes' if parameter.get('required') else ''} | {_cell(parameter.get('description', ''))} |"
            )
        lines.append("")
    body = operation.get("requestBody", {}).get("content", {})
    if body:
        content = body.get(MEDIA) or next(iter(body.values()))
        schema = content.get("schema", {})
        lines += [f"**Request body** ({', '.join(f'`{media}`' for media in body)}): {_type(schema)}", ""]
        lines += _examples(content)
    lines += ["| status | meaning | body |", "|---|---|---|"]
    examples: list[str] = []
    for status, response in operation.get("responses", {}).items():
        content = response.get("content", {}).get(MEDIA, {})
        schema = content.get("schema")
        meaning = response.get("description") or ("Done." if status.startswith("2") else "")
        lines.append(f"| {status} | {_cell(meaning)} | {_type(schema) if schema else ''} |")
        if status.startswith("2"):
            examples += _examples(content)
    lines.append("")
    return lines + examples


def schema_document() -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def api_markdown() -> str:
    """The reference part of the REST API page, grouped by the operations' tags."""
    document = schema_document()
    by_tag: dict[str, list[str]] = {}
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                operation = item[method]
                tag = (operation.get("tags") or ["other"])[0]
                by_tag.setdefault(tag, []).extend(_operation(path, method, operation))
    lines: list[str] = []
    for tag, operation_lines in by_tag.items():
        lines += [f"## {tag.capitalize()}", "", *operation_lines]
    lines += ["## Schemas", ""]
    for name, schema in document.get("components", {}).get("schemas", {}).items():
        lines += [f"### {name}", ""]
        if schema.get("description"):
            lines += [schema["description"], ""]
        fields = _fields(schema)
        lines += [*fields, ""] if fields else [f"{_type(schema)}", ""]
    return "\n".join(lines)
