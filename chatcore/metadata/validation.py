"""What a message's metadata may hold, checked on every write: an object, at most
`CHATCORE_MAX_METADATA_BYTES` of JSON, nested at most `MAX_DEPTH` levels, plain JSON values
only (no NUL, no lone surrogate, no NaN), `tool_calls` in the OpenAI protocol's shape on
assistant messages and `tool_call_id` a string on tool results.

The values are walked with an explicit stack, never recursively: a structure far too deep for
Python's recursion is refused at the limit, not with a RecursionError.
"""

import json
import math

from django.core.exceptions import ValidationError

from chatcore import conf
from chatcore.characters import has_lone_surrogate

MAX_DEPTH = 20  # containers inside one another, the metadata object itself being the first
TOOL_CALL_SHAPE = '{"id": string, "type": "function", "function": {"name": string, "arguments": string}}'


def _invalid(message: str) -> ValidationError:
    return ValidationError({"metadata": message})


def _where(path: str) -> str:
    return path or "the metadata"


def _values_check(metadata: dict) -> None:
    """Plain JSON all the way down, at most MAX_DEPTH levels: walked with a stack, never recursively."""
    stack: list[tuple[object, int, str]] = [(metadata, 1, "")]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, dict | list | tuple) and depth > MAX_DEPTH:
            raise _invalid(f"Metadata may be nested at most {MAX_DEPTH} levels deep; {path} is deeper.")
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str) or "\x00" in key:
                    raise _invalid(f"The keys of {_where(path)} must be text without NUL characters.")
                if has_lone_surrogate(key):
                    raise _invalid(f"The keys of {_where(path)} may not contain a lone surrogate (U+D800 to U+DFFF).")
                stack.append((item, depth + 1, f"{path}.{key}" if path else key))
        elif isinstance(value, list | tuple):
            stack.extend((item, depth + 1, f"{path}[{index}]") for index, item in enumerate(value))
        elif isinstance(value, str):
            if "\x00" in value:
                raise _invalid(f"{_where(path)} may not contain NUL characters.")
            if has_lone_surrogate(value):  # UTF-8 cannot hold one, nor can PostgreSQL's jsonb
                raise _invalid(f"{_where(path)} may not contain a lone surrogate (U+D800 to U+DFFF).")
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise _invalid(f"{_where(path)} must be a finite number.")
        elif value is not None and not isinstance(value, int):
            raise _invalid(f"{_where(path)} is not a JSON value.")


def tool_call_problem(call: object) -> str | None:
    """What is wrong with one tool call in the OpenAI protocol's shape; None when nothing is."""
    if not isinstance(call, dict):
        return "is not an object"
    if not isinstance(call.get("id"), str):
        return "needs an id that is a string"
    if call.get("type") != "function":
        return 'needs "type": "function"'
    function = call.get("function")
    if not isinstance(function, dict):
        return "needs a function object"
    if not isinstance(function.get("name"), str):
        return "needs a function name that is a string"
    if not isinstance(function.get("arguments"), str):
        return "needs function arguments as a string (JSON text)"
    return None


def _tool_fields_check(*, role: str, metadata: dict) -> None:
    calls = metadata.get("tool_calls")
    if calls is not None:
        if role != "assistant":
            raise _invalid("Only assistant messages carry tool_calls.")
        if not isinstance(calls, list):
            raise _invalid(f"tool_calls must be a list of tool calls, each {TOOL_CALL_SHAPE}.")
        for index, call in enumerate(calls):
            problem = tool_call_problem(call)
            if problem is not None:
                raise _invalid(f"tool_calls[{index}] {problem}: each tool call is {TOOL_CALL_SHAPE}.")
    call_id = metadata.get("tool_call_id")
    if call_id is not None:
        if role != "tool":
            raise _invalid("Only tool messages carry a tool_call_id.")
        if not isinstance(call_id, str):
            raise _invalid("tool_call_id must be a string: the id of the call this result answers.")


def metadata_validate(*, role: str, metadata: object) -> dict:
    """The metadata to store ({} for None); ValidationError on `metadata` saying what is wrong and where."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise _invalid("Metadata must be an object.")
    if not metadata:
        return metadata
    _values_check(metadata)
    size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    if size > conf.MAX_METADATA_BYTES:
        raise _invalid(f"Metadata is {size:,} bytes of JSON; at most {conf.MAX_METADATA_BYTES:,} are accepted.")
    _tool_fields_check(role=role, metadata=metadata)
    return metadata
