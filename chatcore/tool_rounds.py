"""Server-side tool calls in the reply loop (see chatcore.tools): one round
(`tool_round_run`) and the rounds of a reply (`ToolLoop`), which every way a
reply is asked for (chatcore.streaming: whole or streamed; the OpenAI-compatible
gateway, whose client brings tools of its own) drives the same way.
"""

from __future__ import annotations

import dataclasses
import time

from django.db import transaction

from chatcore import conf
from chatcore.bounded_json import json_loads_bounded
from chatcore.chain import canonical_json
from chatcore.db_steps import db_step
from chatcore.llm_chat import ChatTurn
from chatcore.models import Message, UsageEntry
from chatcore.replies import ReplyPlan
from chatcore.services import message_append
from chatcore.tokens import count_tokens
from chatcore.tools import TOOL_RESULT_TOKENS, TOOL_ROOM_MIN, TOOL_ROUNDS, ReplyTool, tool_result_cut


def _arguments(call: dict) -> dict:
    try:
        value = json_loads_bounded((call.get("function") or {}).get("arguments") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def call_name(call: dict) -> str:
    return str((call.get("function") or {}).get("name") or "")


@transaction.atomic
def tool_round_run(
    *, plan: ReplyPlan, turn: ChatTurn, tools: list[ReplyTool], result_tokens: int = TOOL_RESULT_TOKENS
) -> tuple[ReplyPlan, list[dict]]:
    """Store the model's tool calls and each result (as the page shows any tool call), run each call
    (its result cut to `result_tokens`), record it in usage; return the plan whose parent is the last
    result, and the messages to send on."""
    by_name = {tool.name: tool for tool in tools}
    call_message = message_append(
        channel=plan.channel,
        user=plan.user,
        role=Message.Role.ASSISTANT,
        content=turn.content,
        parent_id=plan.parent.pk,
        metadata={"tool_calls": turn.tool_calls, "model": turn.model},
    )
    sent: list[dict] = [{"role": "assistant", "content": turn.content, "tool_calls": turn.tool_calls}]
    parent = call_message
    for call in turn.tool_calls:
        name = call_name(call)
        tool = by_name.get(name)
        started = time.monotonic()
        if tool is None:
            result, error = f"[no tool named {name!r} is offered here]", "unknown tool"
        else:
            try:
                result = tool_result_cut(tool.run(plan.channel, plan.user, _arguments(call)), result_tokens)
                error = ""
            except Exception as failure:  # noqa: BLE001 (a failing tool is reported to the model, not raised)
                result, error = f"[the tool failed: {failure}]", str(failure)[:2000]
        UsageEntry.objects.create(
            user=plan.user,
            channel=plan.channel,
            team_id=plan.channel.team_id,
            role="tool",
            model=name[:200],
            success=not error,
            error=error,
            duration_ms=int((time.monotonic() - started) * 1000),
        )
        parent = message_append(
            channel=plan.channel,
            user=plan.user,
            role=Message.Role.TOOL,
            content=result,
            parent_id=parent.pk,
            metadata={"tool_call_id": call.get("id", ""), "name": name},
        )
        sent.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": result})
    return dataclasses.replace(plan, parent=parent), sent


class ToolLoop:
    """The rounds of one reply: which tools this round offers, and running the calls a turn made.

    A driver asks the model with `messages` and `params`, then calls `tools_ran(turn)`: True means the
    calls were run (stored under the user's turn, results appended to `messages`) and the model must be
    asked again; False means `turn` is the answer, to be stored under `plan.parent` (the last tool result
    after a round). The round after the `TOOL_ROUNDS`-th offers no tools, so the model must answer.

    `params` are the caller's own options (the gateway's client: its sampling options and tools), sent
    every round with the server's tools added; a turn that calls any tool that is not the server's is
    then the caller's to run, not a round. `room` (tokens; None: unbounded) is what the rounds may add
    to the context: results are cut to share what is left, and no tools are offered once it is spent,
    so the model's window is never exceeded however the model uses them.
    """

    def __init__(self, *, plan: ReplyPlan, params: dict | None = None, room: int | None = None):
        self.plan = plan
        self.base = dict(params or {})
        self.room = room
        self.messages = list(plan.messages)
        self.rounds = 0

    @property
    def offering(self) -> bool:
        """Whether this round offers the server's tools."""
        spent = self.room is not None and self.room < TOOL_ROOM_MIN
        return bool(self.plan.tools) and self.rounds < TOOL_ROUNDS and not spent

    @property
    def params(self) -> dict | None:
        tools = list(self.base.get("tools") or [])
        if self.offering:
            tools += [tool.schema() for tool in self.plan.tools]
        params = {**self.base, "tools": tools} if tools else self.base
        return dict(params) or None

    def _ours(self, turn: ChatTurn) -> bool:
        """Whether the server runs this turn's calls: always without tools of the caller's, else only
        when every call names a server tool (a call of the caller's makes the turn the caller's)."""
        ours = {tool.name for tool in self.plan.tools}
        return not self.base.get("tools") or all(call_name(call) in ours for call in turn.tool_calls)

    def _result_tokens(self, turn: ChatTurn) -> int:
        if self.room is None:
            return TOOL_RESULT_TOKENS
        calls = len(turn.tool_calls)
        asked = count_tokens(turn.content + canonical_json(turn.tool_calls))
        left = self.room - asked - (calls + 1) * conf.MESSAGE_OVERHEAD_TOKENS
        return max(1, min(TOOL_RESULT_TOKENS, left // calls))

    async def tools_ran(self, turn: ChatTurn) -> bool:
        if not (self.offering and turn.tool_calls and self._ours(turn)):
            return False
        before = self.plan.parent.path_tokens
        self.plan, sent = await db_step(tool_round_run)(
            plan=self.plan, turn=turn, tools=list(self.plan.tools), result_tokens=self._result_tokens(turn)
        )
        if self.room is not None:
            self.room -= self.plan.parent.path_tokens - before
        self.messages += sent
        self.rounds += 1
        return True
