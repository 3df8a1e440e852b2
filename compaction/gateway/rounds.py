"""The server's own tools on /v1: `recall_history` when a summary is in force.

A client of the gateway resends histories whose older part a summary stands
in for, so its model loses what the summary dropped, as on the pages. The
gateway offers it the same tool the pages do (chatcore.tools; offered by
compaction.recall.tool) beside the client's own tools, and runs its calls
here with the same rounds (chatcore.tool_rounds.ToolLoop: bounded rounds,
results cut, calls and results stored in the tree, a usage row per run).

The client never sees them: a turn that calls only the server's tools is a
round, run here, and the model is asked again; a turn that calls any tool of
the client's is the client's, passed back with the server's calls left out;
the response (or the stream) carries the final answer only. The answer is
stored under the rounds' last result, hashed as the client saw it (under its
own turn: chatcore.chain), so the client's next history still meets it.
A client that defines a tool named `recall_history` gets its own, not ours.
"""

from __future__ import annotations

import dataclasses

from django.contrib.auth.models import User

from chatcore.db_steps import db_step
from chatcore.errors import ModelCallFailed
from chatcore.llm_attempt import record
from chatcore.llm_chat import ChatCall, ChatTurn, allm_chat
from chatcore.llm_stream import ChatStream
from chatcore.replies import ReplyPlan
from chatcore.tool_rounds import ToolLoop, call_name
from chatcore.tools import ReplyTool
from compaction.gateway.services import Turn

NOTHING_LEFT = "The model answered only with calls of the server's recall tool and no answer for you."


def turn_loop(*, user: User, turn: Turn) -> ToolLoop:
    """The rounds of this call: the client's options and tools every round, the server's added."""
    plan = ReplyPlan(
        channel=turn.channel,
        user=user,
        parent=turn.leaf,
        messages=turn.assembled.messages,
        prompt_tokens=turn.prompt_tokens,
        model=turn.model,
        tools=turn.tools,
    )
    return ToolLoop(plan=plan, params=turn.params, room=turn.room)


def client_turn(result: ChatTurn, tools: tuple[ReplyTool, ...], *, prefix: str = "") -> ChatTurn:
    """What the client is given of the answer: without calls of the server's tools, after `prefix`
    (text it was already shown in a streamed round). ModelCallFailed when nothing is left."""
    ours = {tool.name for tool in tools}
    calls = [call for call in result.tool_calls if call_name(call) not in ours]
    finish = result.finish_reason
    if len(calls) != len(result.tool_calls):
        finish = "tool_calls" if calls else "stop"
    content = prefix + result.content
    if not content.strip() and not calls:
        raise ModelCallFailed(NOTHING_LEFT, extra={"errors": [NOTHING_LEFT]})
    return dataclasses.replace(result, content=content, tool_calls=calls, finish_reason=finish)


@dataclasses.dataclass
class Spent:
    """Tokens of every model call of this request (the response's `usage`: what the request cost)."""

    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, result: ChatTurn) -> None:
        self.input_tokens += result.input_tokens
        self.output_tokens += result.output_tokens


def round_call(*, user: User, turn: Turn, loop: ToolLoop) -> ChatCall:
    """This round's request upstream, the same whether it is awaited whole or streamed."""
    return {
        "messages": loop.messages,
        "user": user,
        "channel": turn.channel,
        "params": loop.params,
        "trigger": "gateway",
        "override": turn.model,
        "candidates": list(turn.candidates) or None,
    }


async def round_stream(*, user: User, turn: Turn, loop: ToolLoop) -> ChatStream:
    """This round's request streamed, opened on the first model that answers (see ChatStream.start)."""
    stream = ChatStream(**round_call(user=user, turn=turn, loop=loop))
    stream.record_later = True  # written with the answer, or before a round's tools run (`streaming.py`)
    await stream.start()
    return stream


async def answer_complete(*, user: User, turn: Turn, loop: ToolLoop, spent: Spent) -> ChatTurn:
    """Ask the model, running the server's rounds, until a turn is the client's (not stored here). The
    client's turn carries its model call's usage row unwritten (`usage`), for the store to write with it."""
    while True:
        result = await allm_chat(**round_call(user=user, turn=turn, loop=loop), usage_later=True)
        if result.tool_calls and result.usage is not None:
            await db_step(record)(result.usage.attempt, result.usage.row)  # before its tools' rows
            result = dataclasses.replace(result, usage=None)
        spent.add(result)
        if not await loop.tools_ran(result):
            return client_turn(result, turn.tools)
