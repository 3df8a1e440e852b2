"""Content chain hashes: the identity of a message as a client that resends
whole histories sees it (invariant 12).

A message's chain hash digests its parent's chain hash, its role, its text,
its tool fields (`tool_calls`, `tool_call_id`) and its non-text content
parts (images, audio, files). So one hash stands for the whole path from the root to the
message: a client's history, hashed the same way, meets the stored tree at
the deepest message whose hash it contains, with one indexed lookup and no
walk. A root's "parent hash" is a seed naming the channel's owner, so equal
openings of different users never share a hash (the index stays selective
and one user's lookup can never reach another's messages).

The digest is taken over the stored form of a message (what
`message_append` keeps): text stripped of surrounding whitespace, tool
calls reduced to id, type, function name and arguments (JSON arguments
re-serialised canonically, because clients such as LangChain parse and
re-dump them), and `null`/empty fields treated as absent. A client that
resends what it was given therefore lands on the same hash.

One exception, for the same reason: an answer the gateway obtained after
server-side tool rounds (`recall_history`) is stored under those rounds'
calls and results, which its client never sees; its hash is taken as if its
parent were the client's turn (`message_append(chain_hash_as=...)`), so
that the client's resent history, which goes from its turn straight to the
answer, meets it. A hash therefore digests the path as the client saw it.
"""

import hashlib
import json
from typing import Any

from django.db.models import CharField, Func

from chatcore.bounded_json import json_loads_bounded

HASH_CHARS = 32  # 128 bits of SHA-256: collisions are not a practical concern, the index stays small
# The chain-hash index holds this many leading characters of each hash (32 bits), not the whole hash: its keys are
# random, so an insert lands on any page of it, and a large import's chunk dirties about one page a row; a key
# of a quarter the size makes an index of about a third the pages, which stays in the page cache and is written
# back a third as much. A lookup then also compares the whole hash, so a shared prefix only costs a row read.
KEY_CHARS = 8


def chain_seed(owner_id: int) -> str:
    """The "parent hash" of a root message in a channel of this owner."""
    return f"owner:{owner_id}"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _arguments(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        try:
            return canonical_json(json_loads_bounded(value))
        except ValueError:
            return value
    return canonical_json(value)


def canonical_tool_calls(tool_calls: Any) -> list[list[str]]:
    """[[id, type, name, arguments], ...]: what identifies a tool call whatever the client's spelling."""
    canonical = []
    for call in tool_calls or []:
        if not isinstance(call, dict):
            canonical.append(["", "", "", canonical_json(call)])
            continue
        raw_function = call.get("function")
        function: dict = raw_function if isinstance(raw_function, dict) else {}
        canonical.append(
            [
                str(call.get("id") or ""),
                str(call.get("type") or "function"),
                str(function.get("name") or ""),
                _arguments(function.get("arguments")),
            ]
        )
    return canonical


def _framed(text: str) -> bytes:
    data = text.encode("utf-8", "surrogatepass")
    return len(data).to_bytes(8, "big") + data


_NO_TOOL_FIELDS = _framed("") + _framed("")  # tool_call_id and the tool calls/parts field, both empty
_ROLES = {role: _framed(role) for role in ("system", "user", "assistant", "tool")}


def _tool_fields(metadata: dict) -> bytes:
    tool_calls = metadata.get("tool_calls")
    parts = metadata.get("content_parts")
    extra = canonical_json([canonical_tool_calls(tool_calls), parts or None]) if tool_calls or parts else ""
    return _framed(str(metadata.get("tool_call_id") or "")) + _framed(extra)


def chain_hash(*, parent_hash: str, role: str, content: str, metadata: dict | None) -> str:
    """The chain hash of a message in its stored form under a parent with `parent_hash`.

    SHA-256 over the fields (parent hash, role, stripped text, tool_call_id, canonical JSON of the tool
    calls and content parts), each framed by its length in UTF-8 bytes so that no two field lists share a
    digest. Called once per incoming message on every gateway call, hence the precomputed frames.
    """
    return chain_hash_under(parent=_framed(parent_hash), role=role, content=content, metadata=metadata)


def parent_frame(parent_hash: str) -> bytes:
    """`parent_hash` framed as `chain_hash_under` takes it: a writer of many messages under one parent, or a
    chain of them, frames each hash once (see chatcore.bulk)."""
    return _framed(parent_hash)


def chain_hash_under(*, parent: bytes, role: str, content: str, metadata: dict | None) -> str:
    """`chain_hash` of a message under the parent whose framed hash is `parent` (`parent_frame`)."""
    tail = _tool_fields(metadata) if metadata else _NO_TOOL_FIELDS
    text = (content or "").strip().encode("utf-8", "surrogatepass")
    role_frame = _ROLES.get(role) or _framed(role)
    return hashlib.sha256(parent + role_frame + len(text).to_bytes(8, "big") + text + tail).hexdigest()[:HASH_CHARS]


def chain_hashes(*, owner_id: int, messages: list[tuple[str, str, dict | None]], after: str | None = None) -> list[str]:
    """Hashes of a path given root first as (role, content, metadata) in stored form (what `chain_hash`
    gives one by one, in a loop kept tight: the gateway runs it over every message of every call). `after`:
    the chain hash of the message the first one follows (None: the first is a root of `owner_id`'s)."""
    hashes: list[str] = []
    parent = _framed(chain_seed(owner_id) if after is None else after)
    sha256, roles, no_tool_fields, hash_frame = hashlib.sha256, _ROLES, _NO_TOOL_FIELDS, HASH_CHARS.to_bytes(8, "big")
    for role, content, metadata in messages:
        text = (content or "").strip().encode("utf-8", "surrogatepass")
        tail = _tool_fields(metadata) if metadata else no_tool_fields
        role_frame = roles.get(role) or _framed(role)
        digest = sha256(parent + role_frame + len(text).to_bytes(8, "big") + text + tail).hexdigest()[:HASH_CHARS]
        hashes.append(digest)
        parent = hash_frame + digest.encode()
    return hashes


class ChainKey(Func):
    """The chain-hash index's key of a hash (a column or a value): its first KEY_CHARS characters.

    The lookup names the key in the same form as the index does (the length written into the statement, not
    sent as a value), which is what lets SQLite and PostgreSQL match the condition to the index on that
    expression. On PostgreSQL the key compares bytewise (the hash is hexadecimal: the order does not matter,
    only equality), sparing each comparison the collation's rules.
    """

    template = f"SUBSTR(%(expressions)s, 1, {KEY_CHARS})"
    output_field = CharField()

    def as_postgresql(self, compiler, connection, **extra_context):
        template = f'(LEFT(%(expressions)s, {KEY_CHARS}) COLLATE "C")'
        return self.as_sql(compiler, connection, template=template, **extra_context)
