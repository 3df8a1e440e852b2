"""One round of server-side tool calls in the reply loop (see chatcore.tools)."""

from __future__ import annotations

import dataclasses
import json
import time

from django.db import transaction

from chatcore.llm_chat import ChatTurn
from chatcore.models import Message, UsageEntry
from chatcore.replies import ReplyPlan
from chatcore.services import message_append
from chatcore.tools import ReplyTool, tool_result_cut


def _arguments(call: dict) -> dict:
    try:
        value = json.loads((call.get("function") or {}).get("arguments") or "{}")
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
