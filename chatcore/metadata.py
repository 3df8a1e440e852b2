"""Message metadata: what a write may store, and how a read sees whatever is stored.

Metadata is JSON that clients send (the API, imports, the /v1 gateway) and that pages,
exports, the context sent to models and the compaction transcript all read. It is checked
once, on every write (`metadata_validate`, called by `message_append` and
`messages_bulk_import`): an object, at most `CHATCORE_MAX_METADATA_BYTES` of JSON, nested at
most `MAX_DEPTH` levels, plain JSON values only (no NUL, no NaN), `tool_calls` in the OpenAI
protocol's shape on assistant messages and `tool_call_id` a string on tool results. Rows
written before these checks (or by hand) may hold anything, so readers go through
`stored_metadata`, `stored_tool_calls` and `metadata_display`, which never raise.

Depth is measured without recursion, on parsed values with an explicit stack. Python's json
module recurses, and a body nested thousands of levels deep ends in its RecursionError, which
`json_loads_bounded` turns into JSONTooDeep (a 400, not a server error); `json_depth_exceeds`
measures JSON text without parsing it.
"""

import json
import math
import re
from typing import Any

from django.core.exceptions import ValidationError

from chatcore import conf

MAX_DEPTH = 20  # containers inside one another, the metadata object itself being the first
TOOL_CALL_SHAPE = '{"id": string, "type": "function", "function": {"name": string, "arguments": string}}'

_SAME_BRACKETS = bytes.maketrans(b"{}", b"[]")  # only the depth matters: the parser says when they mismatch
_NOT_STRUCTURE = bytes(set(range(256)) - set(b'[]{}"'))


class JSONTooDeep(ValueError):
    """JSON text nested deeper than its reader accepts (a ValueError, as any other malformed JSON)."""

    def __init__(self, limit: int):
        super().__init__(f"it is nested more than {limit} levels deep")
        self.limit = limit


def _deeper_than(brackets: bytes, limit: int) -> bool:
    depth = 0
    for char in brackets:
        if char == 91:  # "["
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _brackets_outside_strings(data: bytes) -> bytes:
    """The brackets of JSON text in UTF-8, all made square, those inside strings left out.

    Escaped backslashes go, then escaped quotes: the quotes left delimit strings. Keeping only
    quotes and brackets, a string with no bracket inside becomes `""` and goes too; what is
    between the quotes still left (strings with brackets inside, rare) is cut out last.
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    kept = data.translate(_SAME_BRACKETS, _NOT_STRUCTURE).replace(b'""', b"")
    return b"".join(kept.split(b'"')[0::2]) if b'"' in kept else kept


def json_depth_exceeds(text: str, limit: int) -> bool:
    """True when the JSON text nests arrays and objects more than `limit` deep.

    Read from the text, without parsing it, with byte operations (C speed, about what parsing
    costs): text with at most `limit` brackets is shallow enough; otherwise the brackets outside
    strings are reduced by their innermost pairs, one level per pass. Only when brackets remain
    after `limit` passes are they walked one by one, stopping at the first level too deep.
    """
    data = text.encode("utf-8", "surrogatepass")
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    brackets = remaining = _brackets_outside_strings(data)
    for _ in range(limit):
        if not remaining:
            return False
        shorter = remaining.replace(b"[]", b"")
        if len(shorter) == len(remaining):  # brackets that do not pair up: not JSON, but walk them to be sure
            break
        remaining = shorter
    return bool(remaining) and _deeper_than(brackets, limit)


def _value_deeper_than(value: Any, limit: int) -> bool:
    """Whether parsed JSON nests arrays and objects more than `limit` deep (an explicit stack)."""
    containers = (dict, list)  # a tuple: isinstance with one is several times faster than with a union
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, containers) else []
    pop, push = stack.pop, stack.append
    while stack:
        container, depth = pop()
        if depth > limit:
            return True
        for item in container.values() if isinstance(container, dict) else container:
            if isinstance(item, containers):
                push((item, depth + 1))
    return False


def json_loads_bounded(text: str | bytes, *, max_depth: int | None = None, **options: Any) -> Any:
    """`json.loads`, refusing text nested deeper than `max_depth` (default: CHATCORE_MAX_JSON_DEPTH)
    with JSONTooDeep.

    The parser runs first: CPython's decoder counts its own nesting against the recursion limit and
    raises RecursionError (made JSONTooDeep here) long before its stack is at risk, so a body
    thousands of levels deep is refused at the limit's cost, not its length. What it returns is then
    measured on the parsed containers: a few milliseconds on a 1.5 MB /v1 history, about what the
    byte-level text scan (`json_depth_exceeds`) costs and far less than the regular-expression scan
    it replaced on this path (`compaction_bench --scenario gateway`).
    """
    limit = conf.MAX_JSON_DEPTH if max_depth is None else max_depth
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise JSONTooDeep(limit) from None
    if _value_deeper_than(value, limit):
        raise JSONTooDeep(limit)
    return value


# JSON can escape half of a surrogate pair ("\\ud800"), which no UTF-8 text and no database can hold.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def json_lone_surrogate(raw: str | bytes, value: Any) -> str | None:
    """Where parsed JSON `value` (read from `raw`) holds a lone surrogate, as an error names a field
    ("messages[2].content", "" for the whole value), or None. `value` is only walked when `raw` escapes one
    (UTF-8 itself cannot carry them), so ordinary text costs one scan."""
    escaped = _SURROGATE_ESCAPE_BYTES.search(raw) if isinstance(raw, bytes) else _SURROGATE_ESCAPE.search(raw)
    return _surrogate_path(value, "") if escaped else None


def _surrogate_path(value: Any, path: str) -> str | None:
    if isinstance(value, str):
        return path if _SURROGATE_RE.search(value) else None
    if isinstance(value, list):
        return next((found for i, item in enumerate(value) if (found := _surrogate_path(item, f"{path}[{i}]"))), None)
    if isinstance(value, dict):
        for key, item in value.items():
            field = f"{path}.{key}" if path else str(key)
            if _SURROGATE_RE.search(key):
                return field
            if (found := _surrogate_path(item, field)) is not None:
                return found
    return None


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
                if _SURROGATE_RE.search(key):
                    raise _invalid(f"The keys of {_where(path)} may not contain a lone surrogate (U+D800 to U+DFFF).")
                stack.append((item, depth + 1, f"{path}.{key}" if path else key))
        elif isinstance(value, list | tuple):
            stack.extend((item, depth + 1, f"{path}[{index}]") for index, item in enumerate(value))
        elif isinstance(value, str):
            if "\x00" in value:
                raise _invalid(f"{_where(path)} may not contain NUL characters.")
            if _SURROGATE_RE.search(value):  # UTF-8 cannot hold one, nor can PostgreSQL's jsonb
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


# Reading what is stored: never raises, whatever an older row holds.


def stored_metadata(value: object) -> dict:
    """A stored message's metadata as an object ({} when the row holds anything else)."""
    return value if isinstance(value, dict) else {}


def _scalar_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, int | float) else ""


def _json_text(value: object) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return "[a value that cannot be shown]"


def stored_tool_call(call: object) -> dict:
    """One stored tool call in the OpenAI shape: the call itself when it has that shape already,
    otherwise what can be read of it (a bare name, flat `name`/`arguments`, anything else as text)."""
    if tool_call_problem(call) is None:
        return call  # type: ignore[return-value]  # checked just above
    if not isinstance(call, dict):
        return {"id": "", "type": "function", "function": {"name": "tool", "arguments": _json_text(call)}}
    function = call.get("function")
    if isinstance(function, dict):
        name, arguments = function.get("name"), function.get("arguments", call.get("arguments"))
    else:
        name, arguments = (function if isinstance(function, str) else call.get("name")), call.get("arguments")
    return {
        "id": _scalar_text(call.get("id")),
        "type": "function",
        "function": {"name": _scalar_text(name) or "tool", "arguments": _json_text(arguments)},
    }


def stored_tool_calls(metadata: object) -> list[dict]:
    """The tool calls of a stored message, each in the OpenAI shape ([] when it has none)."""
    calls = stored_metadata(metadata).get("tool_calls")
    if not calls:
        return []
    return [stored_tool_call(call) for call in (calls if isinstance(calls, list) else [calls])]


def stored_tool_call_id(metadata: object) -> str:
    return _scalar_text(stored_metadata(metadata).get("tool_call_id"))


def metadata_repaired(*, role: str, value: object) -> dict:
    """Stored metadata made storable again, for a copy of an older row (a branch): an object whose
    tool fields have the protocol's shape and sit on the roles that carry them, and whose values
    too deep to store are kept as their JSON text."""
    metadata = dict(stored_metadata(value))
    calls = stored_tool_calls(metadata)
    metadata.pop("tool_calls", None)
    if calls and role == "assistant":
        metadata["tool_calls"] = calls
    call_id = stored_tool_call_id(metadata)
    metadata.pop("tool_call_id", None)
    if call_id and role == "tool":
        metadata["tool_call_id"] = call_id
    try:
        return metadata_validate(role=role, metadata=metadata)
    except ValidationError:  # too deep or not plain JSON: such values are kept as their JSON text
        tool_fields = ("tool_calls", "tool_call_id")
        return {
            key: _json_text(value) if key not in tool_fields and isinstance(value, dict | list) else value
            for key, value in metadata.items()
        }


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def metadata_display(value: object) -> dict:
    """What pages and the admin read of a stored message's metadata: an object whose tool calls
    have the OpenAI shape and whose links (copied_from, source_channel, source_summary) are
    present only when they hold ids a URL can be made of."""
    metadata = dict(stored_metadata(value))
    metadata["tool_calls"] = stored_tool_calls(metadata)
    metadata["tool_call_id"] = stored_tool_call_id(metadata)
    copied = metadata.get("copied_from")
    if not (isinstance(copied, dict) and _is_id(copied.get("channel")) and _is_id(copied.get("message"))):
        metadata.pop("copied_from", None)
    for key in ("source_channel", "source_summary"):
        if not _is_id(metadata.get(key)):
            metadata[key] = None
    return metadata
