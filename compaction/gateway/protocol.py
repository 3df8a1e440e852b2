"""The OpenAI Chat Completions protocol: what a request may hold and how its
messages map onto our stored form (`incoming.py`); the error objects clients
expect are in `errors.py`.

A message's stored form is what `message_append` keeps and what its chain
hash digests: text in `content`; `tool_calls` and `tool_call_id` in
metadata; a list content that holds only text parts becomes that text,
joined by newlines; one with images, audio or files keeps the parts as they
came in `metadata.content_parts` (sent upstream unchanged) and a text with a
placeholder per part in `content` (what people and summarizers read).
"""

from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError

from chatcore.bounded_json import json_loads_bounded
from chatcore.chain import canonical_json
from chatcore.characters import unstorable_in_json
from chatcore.metadata.validation import metadata_validate
from compaction.gateway import legacy
from compaction.gateway.errors import ProtocolError
from compaction.gateway.incoming import CompletionRequest, StoredForm
from compaction.gateway.params import params_checked

__all__ = ["ProtocolError", "body_read", "completion_request", "stored_form", "unstorable_text_refused"]

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}


def _invalid(message: str, param: str) -> ProtocolError:
    return ProtocolError(message, param=param, code="invalid_value")


def _part_placeholder(part: dict) -> str:
    kind = str(part.get("type") or "unknown")
    if kind == "image_url":
        return "[image]"
    if kind == "input_audio":
        return "[audio]"
    if kind == "file":
        name = (part.get("file") or {}).get("filename") if isinstance(part.get("file"), dict) else None
        return f"[file: {name}]" if name else "[file]"
    return f"[{kind} content]"


def _content(value: Any, param: str) -> tuple[str, list | None]:
    """(text, parts to keep or None) of a message's `content`."""
    if value is None:
        return "", None
    if isinstance(value, str):
        return value, None
    if not isinstance(value, list):
        raise _invalid("content must be a string or an array of content parts.", param)
    texts, media = [], False
    for index, part in enumerate(value):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise _invalid("Each content part must be an object with a type.", f"{param}[{index}]")
        if part["type"] in ("text", "refusal"):
            text = part.get(part["type"])
            if not isinstance(text, str):
                raise _invalid(f"A {part['type']} part needs a string '{part['type']}'.", f"{param}[{index}]")
            texts.append(text)
        else:
            media = True
            texts.append(_part_placeholder(part))
    return "\n".join(texts), (value if media else None)


def _tool_calls(value: Any, param: str) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _invalid("tool_calls must be an array.", param)
    calls = []
    for index, call in enumerate(value):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not call.get("id"):
            raise _invalid("Each tool call needs an id and a function with a name.", f"{param}[{index}]")
        if call.get("type") not in (None, "function"):
            raise _invalid('A tool call\'s type must be "function".', f"{param}[{index}].type")
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):  # the protocol's JSON text; same chain hash
            arguments = canonical_json(arguments)
        calls.append(
            {
                "id": str(call["id"]),
                "type": "function",
                "function": {"name": function["name"], "arguments": arguments or ""},
            }
        )
    return calls


_PLAIN_ROLES = {"system", "user", "assistant"}


def stored_form(raw: Any, index: int) -> StoredForm:
    """One incoming message in the form we store and hash."""
    # Most of a resent history is plain text turns: read them without the general path's checks.
    if type(raw) is dict and len(raw) == 2 and raw.get("role") in _PLAIN_ROLES:
        content = raw.get("content")
        if type(content) is str and content.strip():
            return StoredForm(raw["role"], content, {})
    param = f"messages[{index}]"
    if not isinstance(raw, dict):
        raise _invalid("Each message must be an object.", param)
    if raw.get("role") == "function" or raw.get("function_call"):
        raw = legacy.message_translated(raw, param)
    role = raw.get("role")
    if role not in ROLES:
        roles = "system, developer, user, assistant, tool or function"
        raise _invalid(f"Unknown role {role!r}: use {roles}.", f"{param}.role")
    text, parts = _content(raw.get("content"), f"{param}.content")
    if not text and isinstance(raw.get("refusal"), str):  # an assistant's refusal, resent as the client got it
        text = raw["refusal"]
    metadata: dict = {}
    if parts is not None:
        metadata["content_parts"] = parts
    if role == "assistant":
        calls = _tool_calls(raw.get("tool_calls"), f"{param}.tool_calls")
        if calls:
            metadata["tool_calls"] = calls
    if role == "tool":
        if not raw.get("tool_call_id"):
            raise _invalid("A tool message needs the tool_call_id it answers.", f"{param}.tool_call_id")
        metadata["tool_call_id"] = str(raw["tool_call_id"])
    if isinstance(raw.get("name"), str) and raw["name"]:
        metadata["name"] = raw["name"]
    if role == "developer":
        metadata["openai_role"] = "developer"
    if not text.strip() and not metadata.get("tool_calls"):
        raise _invalid("A message's content may not be empty.", f"{param}.content")
    try:
        metadata_validate(role=ROLES[role], metadata=metadata)
    except ValidationError as error:
        raise _invalid(error.message_dict["metadata"][0], param) from None
    return StoredForm(ROLES[role], text, metadata)


def _channel_id(payload: dict, header: str | None) -> int | None:
    metadata = payload.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise _invalid("metadata must be an object of strings.", "metadata")
    value = header or (metadata or {}).get("channel_id")
    if value in (None, ""):
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        raise _invalid(f"The channel id {value!r} is not a number.", "metadata.channel_id") from None


def completion_request(
    payload: Any, *, channel_header: str | None = None, known: Sequence[StoredForm] = ()
) -> CompletionRequest:
    """Validate a `POST /v1/chat/completions` body; ProtocolError (400) names the offending field.

    `known`: the stored forms of the body's first messages, read from the same bytes before
    (compaction.gateway.resent); `payload["messages"]` then holds the messages after them.
    """
    if not isinstance(payload, dict):
        raise ProtocolError("The request body must be a JSON object.")
    model = payload.get("model")
    if not isinstance(model, str) or not model:
        raise ProtocolError("You must provide a model parameter.", param="model", code="missing_required_parameter")
    raw_messages = payload.get("messages")
    if not isinstance(raw_messages, list) or not (raw_messages or known):
        raise ProtocolError("messages must be a non-empty array.", param="messages", code="invalid_value")
    payload, legacy_functions = legacy.options_translated(payload)
    params = params_checked(payload)
    options = payload.get("stream_options") or {}
    messages = [*known, *(stored_form(raw, index) for index, raw in enumerate(raw_messages, start=len(known)))]
    return CompletionRequest(
        model=model,
        messages=messages,
        params=params,
        stream=bool(payload.get("stream")),
        include_usage=bool(options.get("include_usage")),
        channel_id=_channel_id(payload, channel_header),
        legacy_functions=legacy_functions,
    )


def unstorable_text_refused(body: bytes, payload: Any) -> None:
    """ProtocolError (400) naming the first field of `payload` that holds text no database can store: a NUL or
    a lone surrogate (chatcore.characters, the check every entry runs)."""
    found = unstorable_in_json(body, payload)
    if found is not None:
        path, message = found
        raise ProtocolError(f"{path or 'The request body'}: {message}", param=path or None, code="invalid_value")


def body_read(body: bytes, *, channel_header: str | None = None) -> CompletionRequest:
    """The call a request body holds, read whole: JSON (nested at most CHATCORE_MAX_JSON_DEPTH deep), no text
    a database cannot store, then `completion_request`; ProtocolError (400) naming what is wrong."""
    try:
        payload = json_loads_bounded(body)
    except ValueError as error:
        raise ProtocolError(f"The request body is not valid JSON: {error}.", code="invalid_json") from None
    unstorable_text_refused(body, payload)
    return completion_request(payload, channel_header=channel_header)
