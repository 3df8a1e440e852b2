"""A resent history is read once per process.

OpenAI clients resend the whole conversation on every call, so the body of
a call begins, byte for byte, with the messages of the calls before it (the
client serialises the same growing list the same way each time). Reading a
body means parsing it, checking it (its nesting, text no database can
store, each message's form: `protocol.body_read`) and hashing its messages
into their chain (chatcore.chain): work that grows with the history, and
all of it was done for those bytes in an earlier call. So each process
keeps, per user, what it read of the last few bodies: the bytes up to the
end of their last message, those messages in stored form and their chain
hashes. A body that begins with one of them is read from where it ends:
only the new messages and the fields around the array are parsed, checked
and hashed, with the same parser (json's scanner) and the same checks.

It is a memo of a pure function of the bytes and the user: what it gives is
exactly what reading the body whole gives. Anything out of the ordinary —
bytes that do not continue the array after a remembered message, a second
`messages` field, text that may hold a character no database stores, JSON
the walk below does not accept — is read whole, as without the memo, with
the same errors. It decides nothing (another process, or this one after a
restart, reads the same body whole: invariant 13), and its size is bounded
(COMPACTION_GATEWAY_READ_MEMO_BYTES).
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from json.scanner import make_scanner
from typing import Any, cast

from chatcore import conf as chatcore_conf
from chatcore.bounded_json import value_deeper_than
from chatcore.chain import chain_hashes
from chatcore.characters import may_hold_unstorable
from compaction.gateway import conf
from compaction.gateway.incoming import CompletionRequest, StoredForm
from compaction.gateway.protocol import ProtocolError, body_read, completion_request

MEMO_PER_USER = 4  # bodies remembered per user and process: the conversations a person's clients hold at once
# What a remembered message costs beyond its bytes (its stored form, its hash), for the memo's bound.
MESSAGE_OVERHEAD_BYTES = 200
_WHITESPACE = re.compile(r"[ \t\n\r]*")  # what json's own parser skips between tokens
Scan = Callable[[str, int], tuple[Any, int]]


class _Unread(Exception):
    """The body cannot be read from a remembered prefix: it is read whole."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Known:
    """What was read of a body up to the end of its last message."""

    prefix: bytes  # the body up to the end of its last message
    opening: int  # bytes of the prefix up to the messages array's "[" included
    messages: tuple[StoredForm, ...]  # shared by the requests read from it: read, never changed
    hashes: tuple[str, ...]

    @property
    def cost(self) -> int:
        # The bytes, and the stored forms' text beside them (about as long), and each message's objects.
        return 2 * len(self.prefix) + MESSAGE_OVERHEAD_BYTES * len(self.messages)


class _Memo:
    """The bodies remembered by this process: per user, newest first; the least recently used go first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users: OrderedDict[int, list[_Known]] = OrderedDict()
        self._bytes = 0

    def longest(self, owner_id: int, body: bytes) -> _Known | None:
        with self._lock:
            known = self._users.get(owner_id) or []
            found = max((k for k in known if body.startswith(k.prefix)), key=lambda k: len(k.prefix), default=None)
            if found is not None:
                self._users.move_to_end(owner_id)
            return found

    def remember(self, owner_id: int, read: _Known, limit: int) -> None:
        if read.cost > limit:
            return
        with self._lock:
            # An entry whose prefix the new one continues is of no more use.
            older = [k for k in self._users.pop(owner_id, []) if not read.prefix.startswith(k.prefix)]
            self._users[owner_id] = [read, *older][:MEMO_PER_USER]
            self._bytes = sum(k.cost for entries in self._users.values() for k in entries)
            while self._bytes > limit:
                _, entries = self._users.popitem(last=False)
                self._bytes -= sum(k.cost for k in entries)

    def clear(self) -> None:
        with self._lock:
            self._users.clear()
            self._bytes = 0


_memo = _Memo()


def request_read(body: bytes, *, owner_id: int, channel_header: str | None = None) -> CompletionRequest:
    """The call `body` holds, with its messages' chain hashes under `owner_id`'s seed, as `protocol.body_read`
    reads it whole (ProtocolError naming the field otherwise); from a remembered prefix when it has one."""
    limit = conf.READ_MEMO_BYTES
    known = _memo.longest(owner_id, body) if limit > 0 else None
    if known is not None:
        try:
            request, read = _continued(body, known, owner_id=owner_id, channel_header=channel_header)
        except (_Unread, ProtocolError):  # a refusal is worded by the whole read, whatever it is
            pass
        else:
            if read is not known:
                _memo.remember(owner_id, read, limit)
            return request
    request = body_read(body, channel_header=channel_header)
    hashes = chain_hashes(owner_id=owner_id, messages=[(m.role, m.content, m.metadata) for m in request.messages])
    request = dataclasses.replace(request, hashes=hashes, hashed_for=owner_id)
    if limit > 0 and (whole := _whole(body, request)) is not None:
        _memo.remember(owner_id, whole, limit)
    return request


def memo_clear() -> None:
    """Forget every remembered body (tests; a deployment never needs to)."""
    _memo.clear()


def _scanner() -> Scan:
    """json's own scanner (C), which `json.loads` reads every value with: (the value at a position, its end)."""
    return make_scanner(cast(Any, json.JSONDecoder()))


def _skip(text: str, position: int) -> int:
    return _WHITESPACE.match(text, position).end()  # type: ignore[union-attr]  # matches the empty string


def _expect(text: str, position: int, char: str) -> int:
    """The position after `char`, which must be at `position`."""
    if text[position : position + 1] != char:
        raise _Unread
    return position + 1


def _value(scan: Scan, text: str, position: int) -> tuple[Any, int]:
    try:
        return scan(text, position)
    except (StopIteration, ValueError, RecursionError):  # not JSON here, or too deep: the whole read says why
        raise _Unread from None


def _field(scan: Scan, text: str, position: int) -> tuple[str, int]:
    """A field's name and the position after its colon and the blanks that follow."""
    if text[position : position + 1] != '"':
        raise _Unread
    name, position = _value(scan, text, position)
    return name, _skip(text, _expect(text, _skip(text, position), ":"))


def _head(scan: Scan, text: str) -> tuple[list[tuple[str, Any]], int]:
    """The fields before `messages` in the body's object, and the position after its array's "["."""
    pairs: list[tuple[str, Any]] = []
    position = _skip(text, _expect(text, _skip(text, 0), "{"))
    while True:
        name, position = _field(scan, text, position)
        if name == "messages":
            return pairs, _expect(text, position, "[")
        value, position = _value(scan, text, position)
        pairs.append((name, value))
        position = _skip(text, _expect(text, _skip(text, position), ","))


def _elements(scan: Scan, text: str, position: int, *, first: bool) -> tuple[list[Any], int, int]:
    """The array's elements from `position` (just after its "[" when `first`, else just after an element),
    where the last of them ends (`position` when there is none) and the position after the "]"."""
    elements: list[Any] = []
    end = position
    position = _skip(text, position)
    if first and text[position : position + 1] != "]":
        value, end = _value(scan, text, position)
        elements.append(value)
        position = _skip(text, end)
    while text[position : position + 1] == ",":
        value, end = _value(scan, text, _skip(text, position + 1))
        elements.append(value)
        position = _skip(text, end)
    return elements, end, _expect(text, position, "]")


def _tail(scan: Scan, text: str, position: int) -> list[tuple[str, Any]]:
    """The fields after the array, up to the object's end, which must be the text's."""
    pairs: list[tuple[str, Any]] = []
    position = _skip(text, position)
    while text[position : position + 1] == ",":
        name, position = _field(scan, text, _skip(text, position + 1))
        value, position = _value(scan, text, position)
        pairs.append((name, value))
        position = _skip(text, position)
    if _skip(text, _expect(text, position, "}")) != len(text):
        raise _Unread
    return pairs


def _payload(head: list[tuple[str, Any]], messages: list[Any], tail: list[tuple[str, Any]]) -> dict:
    """The body's object as json reads it (fields in their order), unless a field repeats (json keeps the last
    one; a second `messages` would not be the array walked): then it is read whole."""
    names = [name for name, _ in head] + ["messages"] + [name for name, _ in tail]
    if len(set(names)) != len(names):
        raise _Unread
    return {**dict(head), "messages": messages, **dict(tail)}


def _continued(
    body: bytes, known: _Known, *, owner_id: int, channel_header: str | None
) -> tuple[CompletionRequest, _Known]:
    """The request from the remembered `known` and what follows it; _Unread when it must be read whole."""
    rest = body[len(known.prefix) :]
    if may_hold_unstorable(rest):  # the remembered bytes held none: they were read and stored before
        raise _Unread
    try:
        head_text = known.prefix[: known.opening].decode("utf-8", "surrogatepass")
        rest_text = rest.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise _Unread from None
    scan = _scanner()
    head, opening = _head(scan, head_text)
    if opening != len(head_text):
        raise _Unread
    added, end, after = _elements(scan, rest_text, 0, first=False)
    payload = _payload(head, added, _tail(scan, rest_text, after))
    if value_deeper_than(payload, chatcore_conf.MAX_JSON_DEPTH):  # the remembered messages were not too deep
        raise _Unread
    request = completion_request(payload, channel_header=channel_header, known=known.messages)
    new = request.messages[len(known.messages) :]
    hashes = list(known.hashes) + chain_hashes(
        owner_id=owner_id, messages=[(m.role, m.content, m.metadata) for m in new], after=known.hashes[-1]
    )
    request = dataclasses.replace(request, hashes=hashes, hashed_for=owner_id)
    if not new:
        return request, known
    prefix = known.prefix + rest_text[:end].encode("utf-8", "surrogatepass")
    return request, _Known(prefix, known.opening, tuple(request.messages), tuple(hashes))


def _whole(body: bytes, request: CompletionRequest) -> _Known | None:
    """What to remember of a body read whole: where its messages array opens and where its last message ends,
    found by walking it with json's scanner (None for a body the walk does not follow, which is not kept)."""
    if json.detect_encoding(body) != "utf-8":
        return None
    try:
        text = body.decode("utf-8", "surrogatepass")
        scan = _scanner()
        head, opening = _head(scan, text)
        elements, end, after = _elements(scan, text, opening, first=True)
        _payload(head, elements, _tail(scan, text, after))
    except (_Unread, UnicodeDecodeError):
        return None
    if len(elements) != len(request.messages) or not elements:
        return None
    ascii_only = len(text) == len(body)
    opening_bytes = opening if ascii_only else len(text[:opening].encode("utf-8", "surrogatepass"))
    end_bytes = end if ascii_only else len(text[:end].encode("utf-8", "surrogatepass"))
    assert request.hashes is not None
    return _Known(body[:end_bytes], opening_bytes, tuple(request.messages), tuple(request.hashes))
