"""Server-side tool calls in the reply loop (see chatcore.tools): one round
(`tool_round_run`) and the rounds of a reply (`ToolLoop`), which both ways a
reply is asked for (chatcore.streaming: whole or streamed) drive the same way.
"""

from __future__ import annotations

import dataclasses
import time

from asgiref.sync import sync_to_async
from django.db import transaction

from chatcore.llm_chat import ChatTurn
from chatcore.metadata import json_loads_bounded
from chatcore.models import Message, UsageEntry
from chatcore.replies import ReplyPlan
from chatcore.services import message_append
from chatcore.tools import TOOL_ROUNDS, ReplyTool, tool_result_cut


def _arguments(call: dict) -> dict:
    try:
        value = json_loads_bounded((call.get("function") or {}).get("arguments") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@transaction.atomic
def tool_round_run(*, plan: ReplyPlan, turn: ChatTurn, tools: list[ReplyTool]) -> tuple[ReplyPlan, list[dict]]:
    """Store the model's tool calls and each result (as the page shows any tool call), run each call,
    record it in usage; return the plan whose parent is the last result, and the messages to send on."""
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
        name = (call.get("function") or {}).get("name") or ""
        tool = by_name.get(name)
        started = time.monotonic()
        if tool is None:
            result, error = f"[no tool named {name!r} is offered here]", "unknown tool"
        else:
            try:
                result, error = tool_result_cut(tool.run(plan.channel, plan.user, _arguments(call))), ""
            except Exception as failure:  # noqa: BLE001 (a failing tool is reported to the model, not raised)
                result, error = f"[the tool failed: {failure}]", str(failure)[:2000]
        UsageEntry.objects.create(
            user=plan.user,
            channel=plan.channel,
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
    """

    def __init__(self, *, plan: ReplyPlan):
        self.plan = plan
        self.messages = list(plan.messages)
        self.rounds = 0

    @property
    def params(self) -> dict | None:
        if self.plan.tools and self.rounds < TOOL_ROUNDS:
            return {"tools": [tool.schema() for tool in self.plan.tools]}
        return None

    async def tools_ran(self, turn: ChatTurn) -> bool:
        if not (self.params and turn.tool_calls):
            return False
        self.plan, sent = await sync_to_async(tool_round_run)(plan=self.plan, turn=turn, tools=list(self.plan.tools))
        self.messages += sent
        self.rounds += 1
        return True
