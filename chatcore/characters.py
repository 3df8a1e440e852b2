"""The one check of text that enters: characters no database can store.

Two characters pass Python's parsers and fail every write: NUL (`\\u0000`,
which PostgreSQL refuses in text and in jsonb) and a lone surrogate (half of a
UTF-16 pair, U+D800 to U+DFFF, which JSON can escape as `"\\ud800"` but UTF-8,
and so SQLite and PostgreSQL alike, cannot encode). Each entry refuses them
with a 400 naming the field, before anything is written: the API's parsers
(chatcore.api.parsers: every body and form of every endpoint), the /v1
gateway's body, an uploaded profile file, the admin's JSON fields, and the
message check every writer runs (chatcore.services); the pages' form fields
refuse NUL through Django's own validator, and form encoding cannot carry a
surrogate (invalid UTF-8 is read as U+FFFD).

Bodies are large and these characters rare, so raw JSON text is first scanned
once for an escape (or a raw NUL) that could make one (`may_hold_unstorable`);
only then is the parsed value walked, with an explicit stack, to name the field.
Readers that word each kind themselves ask for lone surrogates alone: the
metadata check (`has_lone_surrogate`) and the export reader (`json_lone_surrogate`).
"""

import re
from typing import Any

UNSTORABLE_RE = re.compile("[\x00\ud800-\udfff]")
# How JSON text makes one: an escaped NUL or half of a pair (a raw NUL is not valid JSON, but a form may hold one).
_ESCAPE_RE = re.compile(r"\x00|\\u0000|\\u[dD][89a-fA-F]")
_ESCAPE_BYTES_RE = re.compile(rb"\x00|\\u0000|\\u[dD][89a-fA-F]")

NUL_MESSAGE = "Text may not contain NUL characters (\\u0000)."
SURROGATE_MESSAGE = (
    "Text may not contain a lone surrogate (U+D800 to U+DFFF), which is not a character: send UTF-8 text, "
    "or escape both halves of a pair."
)


def text_problem(text: str) -> str | None:
    """The message refusing `text`, or None when it can be stored."""
    found = UNSTORABLE_RE.search(text)
    if found is None:
        return None
    return NUL_MESSAGE if found.group() == "\x00" else SURROGATE_MESSAGE


def may_hold_unstorable(raw: str | bytes) -> bool:
    """Whether JSON or form text could parse into a NUL or a lone surrogate (one scan; False is certain)."""
    if isinstance(raw, bytes):
        return _ESCAPE_BYTES_RE.search(raw) is not None
    return _ESCAPE_RE.search(raw) is not None


def shown(text: str) -> str:
    """`text` with each NUL or lone surrogate written as its escape (`\\u0000`), so that an error can name a
    field whose key holds one, and the error itself can be sent."""
    return UNSTORABLE_RE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def _items(value: Any) -> list[tuple[str, Any]] | None:
    """A container's (key, value) pairs, a QueryDict's every value; None for anything else."""
    if isinstance(value, dict):
        if hasattr(value, "lists"):  # a QueryDict: several values under one key
            return [(key, item) for key, items in value.lists() for item in items]
        return list(value.items())
    return None


def unstorable_field(value: Any, path: str = "") -> tuple[str, str] | None:
    """(the field, as an error names it: "messages[2].content", "" for `value` itself, a key's own NUL or
    surrogate written as its escape; the message) for the first string or key of `value`, in order, that
    cannot be stored, or None."""
    stack: list[tuple[Any, str, Any]] = [(value, path, None)]  # (a value, its field, the key that names it)
    while stack:
        item, where, key = stack.pop()
        if isinstance(key, str) and (problem := text_problem(key)) is not None:
            return where, problem
        if isinstance(item, str):
            if (problem := text_problem(item)) is not None:
                return where, problem
        elif (pairs := _items(item)) is not None:
            stack.extend(
                (child, f"{where}.{shown(str(name))}" if where else shown(str(name)), name)
                for name, child in reversed(pairs)
            )
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{where}[{index}]", None) for index, child in reversed(list(enumerate(item))))
    return None


def unstorable_in_json(raw: str | bytes, value: Any, path: str = "") -> tuple[str, str] | None:
    """`unstorable_field` of `value` parsed from the JSON text `raw`, walked only when `raw` could hold one."""
    return unstorable_field(value, path) if may_hold_unstorable(raw) else None


# How JSON text escapes the first or second half of a pair: where these do not occur, parsing made none.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    """Whether `text` holds a lone surrogate (a Python string can; UTF-8 and PostgreSQL's jsonb cannot)."""
    return _SURROGATE_RE.search(text) is not None


def json_lone_surrogate(raw: str | bytes, value: Any) -> str | None:
    """Where parsed JSON `value` (read from `raw`) holds a lone surrogate, as an error names a field
    ("messages[2].content", "" for the whole value), or None. `value` is only walked when `raw` escapes one
    (UTF-8 itself cannot carry them), so ordinary text costs one scan."""
    escaped = _SURROGATE_ESCAPE_BYTES.search(raw) if isinstance(raw, bytes) else _SURROGATE_ESCAPE.search(raw)
    return _surrogate_path(value, "") if escaped else None


def _surrogate_path(value: Any, path: str) -> str | None:
    if isinstance(value, str):
        return path if has_lone_surrogate(value) else None
    if isinstance(value, list):
        return next((found for i, item in enumerate(value) if (found := _surrogate_path(item, f"{path}[{i}]"))), None)
    if isinstance(value, dict):
        for key, item in value.items():
            field = f"{path}.{key}" if path else str(key)
            if has_lone_surrogate(key):
                return field
            if (found := _surrogate_path(item, field)) is not None:
                return found
    return None
