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
"""

import hashlib
import json
from typing import Any

HASH_CHARS = 32  # 128 bits of SHA-256: collisions are not a practical concern, the index stays small


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
            return canonical_json(json.loads(value))
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


def chain_hash(*, parent_hash: str, role: str, content: str, metadata: dict | None) -> str:
    """The chain hash of a message in its stored form under a parent with `parent_hash`."""
    metadata = metadata or {}
    tool_calls = metadata.get("tool_calls")
    parts = metadata.get("content_parts")
    fields = (
        parent_hash,
        role,
        (content or "").strip(),
        str(metadata.get("tool_call_id") or ""),
        canonical_json([canonical_tool_calls(tool_calls), parts or None]) if tool_calls or parts else "",
    )
    digest = hashlib.sha256()
    for field in fields:
        data = field.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()[:HASH_CHARS]


def chain_hashes(*, owner_id: int, messages: list[tuple[str, str, dict | None]]) -> list[str]:
    """Hashes of a path given root first as (role, content, metadata) in stored form."""
    hashes: list[str] = []
    parent = chain_seed(owner_id)
    for role, content, metadata in messages:
        parent = chain_hash(parent_hash=parent, role=role, content=content, metadata=metadata)
        hashes.append(parent)
    return hashes
