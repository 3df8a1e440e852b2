"""`stream: true`: the protocol's event stream.

`data: {chat.completion.chunk}` events: the role first, then the model's
text and tool-call fragments as they arrive, the finish reason, the usage
when the client asked for it (`stream_options.include_usage`), and
`data: [DONE]`. The reply is stored once, when the model has finished and
before [DONE] (so a client that sends its next turn at once finds it); a
model failure after the first chunk stores nothing and sends an error
event, which the OpenAI clients raise as an APIError. A client that goes
away mid-stream leaves the text so far stored, marked `interrupted`.

With the server's tools offered (`rounds.py`), their rounds send nothing:
tool-call fragments are held until the turn ends (the server's calls are
then run here and dropped, the client's sent whole), while text goes out as
it comes (a model that writes before calling a tool has been seen doing so;
that text then opens the answer, stored with it, so the client's next
history meets it).
"""

import asyncio
import dataclasses
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator

from django.contrib.auth.models import User

from chatcore.db_steps import db_step
from chatcore.errors import ModelCallFailed
from chatcore.llm_chat import ChatDelta, ChatTurn
from chatcore.llm_stream import ChatStream
from chatcore.observability.metrics import Outcome, reply_observed
from chatcore.timing import Timings
from chatcore.tool_rounds import ToolLoop
from compaction.gateway import legacy
from compaction.gateway.errors import protocol_error
from compaction.gateway.incoming import CompletionRequest
from compaction.gateway.rounds import Spent, client_turn, round_stream
from compaction.gateway.services import Turn, turn_reply_store
from compaction.models import CompactionSettings
from compaction.observability.metrics import gateway_added_seconds
from compaction.scanner.selectors import settings_read_once

logger = logging.getLogger(__name__)


def _event(payload: dict | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


class _Chunks:
    """The chunks of one stream: the same id, created and model; with `include_usage` every chunk has a
    `usage` field, null but in the last (as OpenAI sends them); with `legacy_functions` tool calls go out
    as the old `function_call` (legacy.py)."""

    def __init__(self, model: str, request: CompletionRequest):
        self.base = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
        }
        self.model = model
        self.include_usage, self.legacy = request.include_usage, request.legacy_functions

    def piece(self, delta: dict) -> bytes | None:
        """A piece of the model's answer; None for a fragment of a legacy client's second call."""
        if self.legacy:
            delta = legacy.message_shaped(dict(delta))
            if not delta.get("function_call", True):
                return None  # the old shape holds one call
        return self.choice(delta)

    def choice(self, delta: dict, finish_reason: str | None = None) -> bytes:
        if self.legacy:
            finish_reason = legacy.finish_shaped(finish_reason)
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        chunk = {**self.base, "model": self.model, "system_fingerprint": None, "choices": [choice]}
        return _event(chunk | {"usage": None} if self.include_usage else chunk)

    def usage(self, prompt_tokens: int, completion_tokens: int) -> bytes:
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        return _event({**self.base, "model": self.model, "system_fingerprint": None, "choices": [], "usage": usage})


class _Relay:
    """What of the model's pieces the client is sent, when the server has tools of its own."""

    def __init__(self, turn: Turn):
        self.holding = bool(turn.tools)
        self.shown: list[str] = []  # text sent in earlier (server) rounds: the answer's opening
        self.turn_shown: list[str] = []
        self.calling = False

    def pieces(self, delta: ChatDelta) -> list[dict]:
        if not self.holding:
            piece: dict = {"content": delta.content} if delta.content else {}
            if delta.tool_calls:
                piece["tool_calls"] = delta.tool_calls
            return [piece] if piece else []
        self.calling = self.calling or bool(delta.tool_calls)
        if delta.content and not self.calling:
            self.turn_shown.append(delta.content)
            return [{"content": delta.content}]
        return []

    def round_ran(self) -> None:
        self.shown += self.turn_shown
        self.turn_shown, self.calling = [], False

    def answer(self, result: ChatTurn, turn: Turn) -> tuple[ChatTurn, list[dict]]:
        """The client's answer (with what it was shown before) and the pieces still owed to it."""
        answer = client_turn(result, turn.tools, prefix="".join(self.shown))
        if not self.holding:
            return answer, []
        owed: list[dict] = []
        held = result.content[len("".join(self.turn_shown)) :]
        if held:
            owed.append({"content": held})
        if answer.tool_calls:
            owed.append({"tool_calls": [{"index": i, **call} for i, call in enumerate(answer.tool_calls)]})
        return answer, owed

    def seen(self, stream: ChatStream) -> ChatTurn:
        """What the client has been shown, for a reply cut short."""
        if not self.holding:
            return stream.partial()
        return dataclasses.replace(stream.partial(), content="".join(self.shown + self.turn_shown), tool_calls=[])


async def completion_events(
    *,
    user: User,
    turn: Turn,
    loop: ToolLoop,
    stream: ChatStream,
    request: CompletionRequest,
    prepared_ms: float,
    settings: list[CompactionSettings] | None = None,
) -> AsyncIterator[bytes]:
    """The events of one streamed completion; `stream` (the first round) has been started. The gateway's added
    time is `prepared_ms` (what came before the stream) and storing the answer. `settings`: the compaction
    settings' holder of the call's preparation (`settings_read_once`), so that the trigger after the store
    takes the row the call read rather than reading it again."""
    chunks = _Chunks(stream.model.name if stream.model else turn.model.name, request)
    relay, spent, storing = _Relay(turn), Spent(), False
    try:
        yield chunks.choice({"role": "assistant", "content": "", "refusal": None})
        while True:
            async for delta in stream.deltas():
                for piece in relay.pieces(delta):
                    if event := chunks.piece(piece):
                        yield event
            result = stream.turn
            assert result is not None, "deltas() ended without a turn"
            spent.add(result)
            if result.tool_calls:
                await db_step(stream.answered_record)()  # the model call's row before its tools' rows
            if not await loop.tools_ran(result):
                break
            relay.round_ran()
            stream = await round_stream(user=user, turn=turn, loop=loop)
        answer, owed = relay.answer(result, turn)
        if request.legacy_functions:
            answer = dataclasses.replace(answer, tool_calls=legacy.answer_calls(answer.tool_calls))
        for piece in owed:
            if event := chunks.piece(piece):
                yield event
        storing = True  # from here the answer is stored (a thread finishes it even if this task is cancelled)
        timings = Timings()
        with timings.timed("store"), settings_read_once(held=settings):
            await db_step(turn_reply_store)(
                user=user, turn=turn, result=answer, parent=loop.plan.parent, usage=stream.answered_take()
            )
        reply_observed(interface="v1", stream=True, outcome=Outcome.OK)
        gateway_added_seconds.observe((prepared_ms + timings.ms["store"]) / 1000)
        yield chunks.choice({}, answer.finish_reason)
        if request.include_usage:
            yield chunks.usage(spent.input_tokens or turn.prompt_tokens, spent.output_tokens)
        yield _event("[DONE]")
    except ModelCallFailed as error:
        reply_observed(interface="v1", stream=True, outcome=Outcome.FAILED)
        yield _event(protocol_error(error).body())
    except (asyncio.CancelledError, GeneratorExit):
        if not storing:
            reply_observed(interface="v1", stream=True, outcome=Outcome.INTERRUPTED)
            await _interrupted(user=user, turn=turn, stream=stream, seen=relay, loop=loop)
        raise


async def _interrupted(*, user: User, turn: Turn, stream: ChatStream, seen: _Relay, loop: ToolLoop) -> None:
    """The client went away: keep what it was shown, marked interrupted; nothing if it saw nothing."""
    await stream.interrupted()
    partial = seen.seen(stream)
    if partial.content.strip() or partial.tool_calls:
        try:
            await db_step(turn_reply_store)(
                user=user, turn=turn, result=partial, parent=loop.plan.parent, interrupted=True
            )
        except Exception:  # the reply is lost, not the server: say so in the log
            logger.exception("gateway: the interrupted reply in channel %s could not be stored", turn.channel.pk)
