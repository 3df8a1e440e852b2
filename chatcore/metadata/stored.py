"""Reading a stored message's metadata, whatever an older row holds: these never raise.

Rows written before the checks on write (`chatcore.metadata.validation`), or by hand, may hold
any JSON; pages, exports, the admin, the context sent to models, the compaction transcript and
branches read them through here. `metadata_repaired` makes such a row storable again, for a copy.
"""

import json

from django.core.exceptions import ValidationError

from chatcore.metadata.validation import metadata_validate, tool_call_problem


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
