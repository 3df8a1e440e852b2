"""Replies as the model writes them: the async pipeline behind the streamed
API and the pages (invariant 11: a waiting model call holds no thread).

    plan = reply_prepare(...)                      # sync: the user's turn, the context (services)
    async for event in reply_events(plan=plan):    # the model's pieces, then the stored reply
        ...

`reply_events` opens the stream with the chat role's models (falling back
only until the first piece), yields a `ReplyDelta` per piece of text, and
when the model finishes stores the reply once through `replies.reply_store`,
the same bookkeeping as every other way a reply arrives (pressure columns,
cursor, `reply_stored` after commit, hence the automatic compaction
trigger), then yields `ReplyDone`. A model failure, before or after the
first piece, stores nothing and yields `ReplyFailed`. A consumer that stops
reading (the client disconnected or pressed Stop: the task is cancelled, or
the generator closed) gets the text received so far stored, marked
`interrupted`, before the cancellation goes on.

`reply_complete` is the same without the pieces (the JSON answer and the
pages without JavaScript). Both take the model call out of any thread; only
the short database steps run in one (`db_step`: a thread that gives its pooled
connection back as it returns, so that no connection waits on the model).

With server-side tools offered (`plan.tools`, e.g. compaction's
`recall_history` when a summary is in force), both run the same rounds
(chatcore.tool_rounds.ToolLoop): a turn that calls tools has its calls and
results stored under the user's turn, and the model is asked again.
"""

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

from chatcore.db_steps import db_step
from chatcore.errors import ModelCallFailed
from chatcore.llm_attempt import record
from chatcore.llm_chat import ChatTurn, allm_chat
from chatcore.llm_stream import ChatStream
from chatcore.models import Message
from chatcore.observability.metrics import Outcome, reply_observed
from chatcore.replies import ReplyPlan, reply_store
from chatcore.tool_rounds import ToolLoop


@dataclasses.dataclass(frozen=True)
class ReplyDelta:
    """A piece of the reply's text. `more`: the next event is already here (it arrived with this piece), so
    a writer may hold this one and send both at once (`written_together`) without waiting for anything."""

    content: str
    more: bool = False


@dataclasses.dataclass(frozen=True)
class ReplyTools:
    """A round of server-side tool calls ran (stored); the model is asked again."""

    calls: list[dict]
    round: int


@dataclasses.dataclass(frozen=True)
class ReplyDone:
    """The reply is stored; what the provider reported it cost is in its metadata (`usage`)."""

    message: Message


@dataclasses.dataclass(frozen=True)
class ReplyFailed:
    error: ModelCallFailed


ReplyEvent = ReplyDelta | ReplyTools | ReplyDone | ReplyFailed


def _store(plan: ReplyPlan, turn: ChatTurn, *, interrupted: bool = False, stream: ChatStream | None = None) -> Message:
    """The reply stored, in a thread, with the model call's usage row (the stream's, or the turn's)."""
    return reply_store(
        channel=plan.channel,
        user=plan.user,
        parent=plan.parent,
        answer=turn,
        prompt_tokens_estimate=plan.prompt_tokens,
        interrupted=interrupted,
        usage=stream.answered_take() if stream is not None else turn.usage,
        placed=plan.placed,
    )


# The store's step, made once: a step made per call costs asgiref's wrapper and its checks for every reply.
_store_step = db_step(_store)


async def _store_interrupted(plan: ReplyPlan, stream: ChatStream) -> None:
    """The text that arrived before the reader went away, kept and marked; nothing if none did."""
    await stream.interrupted()
    partial = stream.partial()
    if stream.turn is None and partial.content.strip():
        await _store_step(plan, partial, interrupted=True)


def _call_arguments(loop: ToolLoop, trigger: str) -> dict[str, Any]:
    """This round's request, the same whether it is streamed (ChatStream) or awaited whole (allm_chat)."""
    plan = loop.plan
    return {
        "messages": loop.messages,
        "user": plan.user,
        "channel": plan.channel,
        "params": loop.params,
        "trigger": trigger,
        "override": plan.model,
        "candidates": list(plan.candidates) or None,
    }


async def reply_events(
    *, plan: ReplyPlan, trigger: str = "manual", interface: str = "api"
) -> AsyncIterator[ReplyEvent]:
    """The reply's events; with tools offered, the rounds of `reply_complete`, each streamed.

    Text is passed on as it comes until the turn starts calling tools (the text of a turn that calls
    tools is stored with its calls, and a `ReplyTools` event says the round ran); the answer's text
    follows. A reader that goes away mid-turn leaves that turn's text stored, marked interrupted.
    `interface` (page, api) is what the reply's metrics say asked for it.
    """
    loop = ToolLoop(plan=plan)
    while True:
        stream = ChatStream(**_call_arguments(loop, trigger))
        stream.record_later = True  # written with the reply (`_store`), or before a round's tools run
        try:
            await stream.start()
            # The answer's text (none from the turn's first tool call on: that text is stored with the calls).
            async for pieces in stream.text_batches():
                if len(pieces) == 1:  # what one read brings, most often: one piece
                    yield ReplyDelta(pieces[0])
                    continue
                for index, piece in enumerate(pieces, 1):
                    yield ReplyDelta(piece, more=index < len(pieces))
        except ModelCallFailed as error:
            reply_observed(interface=interface, stream=True, outcome=Outcome.FAILED)
            yield ReplyFailed(error)
            return
        except (asyncio.CancelledError, GeneratorExit):
            reply_observed(interface=interface, stream=True, outcome=Outcome.INTERRUPTED)
            # Shielded: a second cancellation must not lose what the reader saw.
            await asyncio.shield(_store_interrupted(loop.plan, stream))
            raise
        turn = stream.turn
        assert turn is not None
        if turn.tool_calls:
            await db_step(stream.answered_record)()  # the model call's row before its tools' rows
        if not await loop.tools_ran(turn):
            break
        yield ReplyTools(calls=turn.tool_calls, round=loop.rounds)
    message = await _store_step(loop.plan, turn, stream=stream)
    reply_observed(interface=interface, stream=True, outcome=Outcome.OK)
    yield ReplyDone(message)


async def written_together(
    events: AsyncIterator[ReplyEvent], encode: Callable[[ReplyEvent], bytes | None]
) -> AsyncIterator[bytes]:
    """The events encoded (`encode`: None for an event not sent), with the pieces that arrived together in one
    write: a piece marked `more` is held until the next event, which is already here, so nothing waits."""
    held: list[bytes] = []
    async for event in events:
        data = encode(event)
        if data is not None:
            held.append(data)
        if isinstance(event, ReplyDelta) and event.more:
            continue
        if held:
            yield held[0] if len(held) == 1 else b"".join(held)
            held.clear()
    if held:
        yield b"".join(held)


async def reply_complete(*, plan: ReplyPlan, trigger: str = "manual", interface: str = "api") -> Message:
    """The whole reply at once; raises ModelCallFailed (nothing more stored) when every model fails.

    With tools offered (`plan.tools`), the model may call them: each round's calls and results are
    stored under the user's turn and sent back (chatcore.tool_rounds.ToolLoop, which `reply_events`
    drives the same way), for at most TOOL_ROUNDS rounds; the last round offers no tools.
    """
    loop = ToolLoop(plan=plan)
    try:
        while True:
            turn = await allm_chat(**_call_arguments(loop, trigger), usage_later=True)
            if turn.tool_calls and turn.usage is not None:
                await db_step(record)(turn.usage.attempt, turn.usage.row)  # before its tools' rows
                turn = dataclasses.replace(turn, usage=None)
            if not await loop.tools_ran(turn):
                break
    except ModelCallFailed:
        reply_observed(interface=interface, stream=False, outcome=Outcome.FAILED)
        raise
    message = await _store_step(loop.plan, turn)
    reply_observed(interface=interface, stream=False, outcome=Outcome.OK)
    return message
