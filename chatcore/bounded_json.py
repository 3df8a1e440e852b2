"""JSON text read with a bound on its nesting: the loader every parser of outside JSON uses (request
bodies, JSON form fields, import files, /v1 bodies, stored tool-call arguments).

Depth is measured without recursion, on parsed values with an explicit stack. Python's json
module recurses, and a body nested thousands of levels deep ends in its RecursionError, which
`json_loads_bounded` turns into JSONTooDeep (a 400, not a server error); `json_depth_exceeds`
measures JSON text without parsing it.
"""

import json
from typing import Any

from chatcore import conf

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


def value_deeper_than(value: Any, limit: int) -> bool:
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
    measured on the parsed containers, one walk with an explicit stack: about what the byte-level
    text scan (`json_depth_exceeds`) costs, and far cheaper than a regular-expression scan of the
    text (`compaction_bench --scenario gateway` times the path).
    """
    limit = conf.MAX_JSON_DEPTH if max_depth is None else max_depth
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise JSONTooDeep(limit) from None
    if value_deeper_than(value, limit):
        raise JSONTooDeep(limit)
    return value
