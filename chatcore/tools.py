"""Tools the reply loop offers the chat model, registered by other apps.

chatcore runs the loop (chatcore.tool_rounds.ToolLoop, in both
chatcore.streaming.reply_complete and reply_events): when the model
answers with tool calls, each call is run here on the server, its result
goes back to the model, and this repeats for at most `TOOL_ROUNDS` rounds;
a result is cut to `TOOL_RESULT_TOKENS` tokens. The calls and results are
stored in the message tree like any tool call (the page shows them folded),
and each run is a UsageEntry (role "tool"). What a tool does is its
registrant's business: compaction registers `recall_history` (dependency
inversion: chatcore never imports compaction).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from django.contrib.auth.models import User

from chatcore.models import Channel, Cursor
from chatcore.selectors import cursor_get
from chatcore.tokens import count_tokens

TOOL_ROUNDS = 3
TOOL_RESULT_TOKENS = 1_500
TOOL_ROOM_MIN = 300  # with a bounded context (the gateway's window), no tools once less is left for results


@dataclasses.dataclass(frozen=True)
class ReplyTool:
    name: str
    description: str
    parameters: dict  # JSON schema of the arguments
    offered: Callable[[Channel, User, Cursor | None], bool]  # whether this reply may use it (the user's cursor)
    run: Callable[[Channel, User, dict], str]  # the result text the model reads

    def schema(self) -> dict:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


_REGISTRY: dict[str, ReplyTool] = {}


def tool_register(tool: ReplyTool) -> None:
    _REGISTRY[tool.name] = tool


CURSOR_UNREAD = object()  # `tools_offered`'s default: the user's cursor is read


def tools_offered(
    *,
    channel: Channel,
    user: User,
    besides: frozenset[str] = frozenset(),
    cursor: Cursor | None | object = CURSOR_UNREAD,
) -> list[ReplyTool]:
    """The tools this reply may use, except those named in `besides` (a client's own of the same name).
    Each tool decides from the user's cursor (the summary in force): `cursor` as the caller holds it,
    current, or else read here once for every tool."""
    if not _REGISTRY:
        return []
    if cursor is CURSOR_UNREAD:
        cursor = cursor_get(channel=channel, user=user)
    assert cursor is None or isinstance(cursor, Cursor)
    return [tool for tool in _REGISTRY.values() if tool.name not in besides and tool.offered(channel, user, cursor)]


def tools_registered(*, besides: frozenset[str] = frozenset()) -> list[ReplyTool]:
    """Every tool a reply might be offered (to reserve room for their definitions before knowing)."""
    return [tool for tool in _REGISTRY.values() if tool.name not in besides]


def tool_result_cut(text: str, limit: int = TOOL_RESULT_TOKENS) -> str:
    """At most `limit` tokens: whole lines while they fit, then a note of what was left out."""
    if count_tokens(text) <= limit:
        return text
    kept, used = [], 0
    lines = text.splitlines()
    for line in lines:
        cost = count_tokens(line) + 1
        if used + cost > limit:
            break
        kept.append(line)
        used += cost
    return "\n".join(kept) + f"\n[{len(lines) - len(kept)} more line(s) left out: the tool's output limit]"
