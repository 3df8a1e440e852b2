"""OpenAI's deprecated function calling, as the tools it became.

Older clients send `functions` and `function_call` instead of `tools` and
`tool_choice`, resend a call as an assistant message's `function_call`
(no id) and its result as a `role: "function"` message (named, no id), and
expect the answer's call in `message.function_call` with the finish reason
`function_call`. The gateway translates once, at the edge: the request's
options become tools, the messages become tool calls and tool results, and
the answer goes back in the old shape. A call carries no id in the old
shape, so it is given one made from the function's name (`call_id`), the
same when the answer is stored and when the client resends it: the chain
hash of the resent history meets the stored answer.
"""

import hashlib
from typing import Any

from compaction.gateway.errors import ProtocolError


def call_id(name: str) -> str:
    """The id of a legacy call of `name`: stable, so a resent call hashes as it was stored."""
    return "call_" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _invalid(message: str, param: str) -> ProtocolError:
    return ProtocolError(message, param=param, code="invalid_value")


def _named(function: Any) -> bool:
    return isinstance(function, dict) and isinstance(function.get("name"), str)


def options_translated(payload: dict) -> tuple[dict, bool]:
    """The payload with `functions` / `function_call` as `tools` / `tool_choice`, and whether it used them
    (the answer is then given in the old shape). `tools` wins when a client sends both."""
    functions, choice = payload.get("functions"), payload.get("function_call")
    if functions is None or payload.get("tools") is not None:
        return payload, False
    if not isinstance(functions, list) or not all(_named(f) for f in functions):
        raise _invalid("functions must be an array of objects with a name.", "functions")
    translated = {**payload, "tools": [{"type": "function", "function": f} for f in functions]}
    if choice is not None and payload.get("tool_choice") is None:
        if choice in ("none", "auto"):
            translated["tool_choice"] = choice
        elif isinstance(choice, dict) and isinstance(choice.get("name"), str):
            translated["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
        else:
            raise _invalid('function_call must be "none", "auto" or {"name": ...}.', "function_call")
    if functions and payload.get("parallel_tool_calls") is None:
        translated["parallel_tool_calls"] = False  # the old shape holds one call
    return translated, bool(functions)


def message_translated(raw: dict, param: str) -> dict:
    """A `role: "function"` message as a tool result, an assistant's `function_call` as its tool call."""
    if raw.get("role") == "function":
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise _invalid("A function message needs the name of the function it answers.", f"{param}.name")
        return {**raw, "role": "tool", "tool_call_id": call_id(name)}
    call = raw.get("function_call")
    if raw.get("role") != "assistant" or not call or raw.get("tool_calls"):
        return raw
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise _invalid("function_call must be an object with a name and arguments.", f"{param}.function_call")
    function = {"name": call["name"], "arguments": call.get("arguments")}
    return {**raw, "tool_calls": [{"id": call_id(call["name"]), "type": "function", "function": function}]}


def answer_calls(tool_calls: list[dict]) -> list[dict]:
    """The answer's calls as a legacy client resends them: the first only, with its stable id."""
    calls = []
    for call in tool_calls[:1]:
        function = call.get("function") or {}
        calls.append({**call, "id": call_id(str(function.get("name") or ""))})
    return calls


def message_shaped(message: dict) -> dict:
    """A response message (or a streamed delta) with its tool calls as the old `function_call`."""
    calls = message.pop("tool_calls", None)
    if calls:
        function = _first(calls).get("function") or {}
        message["function_call"] = {key: function[key] for key in ("name", "arguments") if key in function}
    return message


def _first(calls: Any) -> dict:
    first = next((call for call in calls if isinstance(call, dict) and call.get("index", 0) == 0), None)
    return first or {}


def finish_shaped(finish_reason: str | None) -> str | None:
    return "function_call" if finish_reason == "tool_calls" else finish_reason
