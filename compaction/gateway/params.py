"""The request's options: which go upstream, and the checks OpenAI makes on them.

An option of the wrong type or out of OpenAI's range is a 400 naming it in
`param`, as OpenAI answers, rather than a provider's refusal (or a crash of
the client library) after the history was stored. Options left out, or
`null`, are not sent. Unknown fields are ignored, never forwarded, so a
client built for a newer API still gets an answer.

Two leniencies where clients send what OpenAI would refuse and the meaning is
plain: an empty `tools` list is no tools, and `tool_choice: "auto"|"none"` or
`parallel_tool_calls` without tools are dropped (a provider refuses them
alone). `tool_choice: "required"` or a named tool without tools cannot be
honoured and is a 400.
"""

from collections.abc import Callable
from typing import Any

from compaction.gateway.errors import ProtocolError

# Sent upstream as the client gave them (after the checks below).
PASSTHROUGH = (
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "modalities",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "reasoning_effort",
    "response_format",
    "seed",
    "service_tier",
    "stop",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
)
TOOL_CHOICES = ("none", "auto", "required")
RESPONSE_FORMATS = ("text", "json_object", "json_schema")


def _wrong(name: str, expected: str, code: str = "invalid_type") -> ProtocolError:
    return ProtocolError(f"Invalid value for '{name}': expected {expected}.", param=name, code=code)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(low: float, high: float) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _wrong(name, f"a number between {low:g} and {high:g}")
        if not low <= value <= high:
            raise _wrong(name, f"a number between {low:g} and {high:g}", "invalid_value")

    return check


def _integer(low: int, high: int | None = None) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        expected = f"an integer of at least {low}" if high is None else f"an integer between {low} and {high}"
        if not _is_int(value):
            raise _wrong(name, expected)
        if value < low or (high is not None and value > high):
            raise _wrong(name, expected, "invalid_value")

    return check


def _of_type(kind: type | tuple[type, ...], expected: str) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise _wrong(name, expected)

    return check


def _stop(name: str, value: Any) -> None:
    if not isinstance(value, str) and not (isinstance(value, list) and all(isinstance(s, str) for s in value)):
        raise _wrong(name, "a string or an array of strings")


def _tools(name: str, value: Any) -> None:
    if not isinstance(value, list):
        raise _wrong(name, "an array of tools")
    for index, tool in enumerate(value):
        if not isinstance(tool, dict) or not isinstance(tool.get("type", "function"), str):
            raise _wrong(f"{name}[{index}]", 'an object with a "type"')
        function = tool.get("function")
        named = isinstance(function, dict) and isinstance(function.get("name"), str)
        if tool.get("type", "function") == "function" and not named:
            raise _wrong(f"{name}[{index}].function", 'an object with a "name"')


def _tool_choice(name: str, value: Any) -> None:
    if isinstance(value, str):
        if value not in TOOL_CHOICES:
            raise _wrong(name, '"none", "auto", "required" or an object naming a tool', "invalid_value")
    elif not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise _wrong(name, '"none", "auto", "required" or an object naming a tool')


def _response_format(name: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise _wrong(name, 'an object such as {"type": "json_object"}')
    if value.get("type") not in RESPONSE_FORMATS:
        raise _wrong(f"{name}.type", '"text", "json_object" or "json_schema"', "invalid_value")
    schema = value.get("json_schema")
    if value["type"] == "json_schema" and not (isinstance(schema, dict) and isinstance(schema.get("name"), str)):
        raise _wrong(f"{name}.json_schema", 'an object with a "name" and a "schema"')


CHECKS: dict[str, Callable[[str, Any], None]] = {
    "frequency_penalty": _number(-2, 2),
    "presence_penalty": _number(-2, 2),
    "temperature": _number(0, 2),
    "top_p": _number(0, 1),
    "max_tokens": _integer(1),
    "max_completion_tokens": _integer(1),
    "n": _integer(1),
    "seed": _integer(-(2**63)),
    "top_logprobs": _integer(0, 20),
    "logprobs": _of_type(bool, "true or false"),
    "parallel_tool_calls": _of_type(bool, "true or false"),
    "stream": _of_type(bool, "true or false"),
    "user": _of_type(str, "a string"),
    "logit_bias": _of_type(dict, "an object of token ids to numbers"),
    "stop": _stop,
    "tools": _tools,
    "tool_choice": _tool_choice,
    "response_format": _response_format,
    "stream_options": _of_type(dict, "an object"),
    "metadata": _of_type(dict, "an object of strings"),
}


def params_checked(payload: dict) -> dict:
    """The options to send upstream, each checked; ProtocolError (400) names the first wrong one."""
    for name, check in CHECKS.items():
        if payload.get(name) is not None:
            check(name, payload[name])
    if payload.get("n") not in (None, 1):
        raise ProtocolError("Only n=1 is supported: one conversation, one reply.", param="n", code="invalid_value")
    params = {name: payload[name] for name in PASSTHROUGH if payload.get(name) is not None}
    if not params.get("tools"):
        params.pop("tools", None)
        choice = params.pop("tool_choice", None)
        params.pop("parallel_tool_calls", None)
        if choice is not None and choice not in ("auto", "none"):
            raise ProtocolError(
                "Invalid value for 'tool_choice': a tool may only be required when 'tools' are specified.",
                param="tool_choice",
                code="invalid_value",
            )
    return params
