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
the short database steps run in one (`sync_to_async`).
"""

import asyncio
import dataclasses
from collections.abc import AsyncIterator

from asgiref.sync import sync_to_async

from chatcore.errors import ModelCallFailed
from chatcore.llm_chat import ChatTurn, allm_chat
from chatcore.llm_stream import ChatStream
from chatcore.models import Message
from chatcore.replies import ReplyPlan, reply_store
from chatcore.tool_rounds import tool_round_run
from chatcore.tools import TOOL_ROUNDS, tools_offered


@dataclasses.dataclass(frozen=True)
class ReplyDelta:
    content: str


@dataclasses.dataclass(frozen=True)
class ReplyDone:
    message: Message
    input_tokens: int
    output_tokens: int


@dataclasses.dataclass(frozen=True)
class ReplyFailed:
    error: ModelCallFailed


ReplyEvent = ReplyDelta | ReplyDone | ReplyFailed


def _public(error: ModelCallFailed) -> ModelCallFailed:
    """The error as clients see it (`detail`, `code`, `errors`): the provider's status stays in the log."""
    return ModelCallFailed(error.message, extra={"errors": error.extra.get("errors", [])})


def _store(plan: ReplyPlan, turn: ChatTurn, *, interrupted: bool = False) -> Message:
    extra: dict = {}
    if turn.offline:
        extra["offline"] = True
    if interrupted:
        extra["interrupted"] = True
    return reply_store(
        channel=plan.channel,
        user=plan.user,
        parent=plan.parent,
        content=turn.content,
        model=turn.model,
        used_fallback=turn.used_fallback,
        input_tokens=turn.input_tokens,
        output_tokens=turn.output_tokens,
        prompt_tokens_estimate=plan.prompt_tokens,
        extra=extra,
    )


async def _store_interrupted(plan: ReplyPlan, stream: ChatStream) -> None:
    """The text that arrived before the reader went away, kept and marked; nothing if none did."""
    await stream.interrupted()
    partial = stream.partial()
    if partial.content.strip():
        await sync_to_async(_store)(plan, partial, interrupted=True)


async def reply_events(*, plan: ReplyPlan, trigger: str = "manual") -> AsyncIterator[ReplyEvent]:
    stream = ChatStream(
        messages=plan.messages, user=plan.user, channel=plan.channel, trigger=trigger, override=plan.model
    )
    failure: ModelCallFailed | None = None
    try:
        await stream.start()
        async for delta in stream.deltas():
            if delta.content:
                yield ReplyDelta(delta.content)
    except ModelCallFailed as error:
        failure = error
    except (asyncio.CancelledError, GeneratorExit):
        # Shielded: a second cancellation must not lose what the reader saw.
        await asyncio.shield(_store_interrupted(plan, stream))
        raise
    if failure is not None:
        yield ReplyFailed(_public(failure))
        return
    turn = stream.turn
    assert turn is not None
    message = await sync_to_async(_store)(plan, turn)
    yield ReplyDone(message, turn.input_tokens, turn.output_tokens)


async def reply_complete(*, plan: ReplyPlan, trigger: str = "manual") -> Message:
    """The whole reply at once; raises ModelCallFailed (nothing more stored) when every model fails.

    With tools offered (chatcore.tools), the model may call them: each round's calls and results are
    stored under the user's turn and sent back, for at most TOOL_ROUNDS rounds; the last round offers
    no tools, so the model must answer.
    """
    offered = await sync_to_async(tools_offered)(channel=plan.channel, user=plan.user)
    messages = list(plan.messages)
    for round_number in range(TOOL_ROUNDS + 1):
        params = {"tools": [t.schema() for t in offered]} if offered and round_number < TOOL_ROUNDS else None
        try:
            turn = await allm_chat(
                messages=messages,
                user=plan.user,
                channel=plan.channel,
                params=params,
                trigger=trigger,
                override=plan.model,
            )
        except ModelCallFailed as error:
            raise _public(error) from None
        if not (params and turn.tool_calls):
            break
        plan, sent = await sync_to_async(tool_round_run)(plan=plan, turn=turn, tools=offered)
        messages += sent
    return await sync_to_async(_store)(plan, turn)
