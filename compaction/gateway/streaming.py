"""`stream: true`: the protocol's event stream.

`data: {chat.completion.chunk}` events: the role first, then the model's
text and tool-call fragments as they arrive, the finish reason, the usage
when the client asked for it (`stream_options.include_usage`), and
`data: [DONE]`. The reply is stored once, when the model has finished and
before [DONE] (so a client that sends its next turn at once finds it); a
model failure after the first chunk stores nothing and sends an error
event, which the OpenAI clients raise as an APIError. A client that goes
away mid-stream leaves the text so far stored, marked `interrupted`.
"""

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator

from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from chatcore.errors import ModelCallFailed
from chatcore.llm_stream import ChatStream
from compaction.gateway.services import Turn, turn_reply_store, upstream_error

logger = logging.getLogger(__name__)


def _event(payload: dict | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


class _Chunks:
    def __init__(self, model: str):
        self.base = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
        }
        self.model = model

    def choice(self, delta: dict, finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return _event({**self.base, "model": self.model, "system_fingerprint": None, "choices": [choice]})

    def usage(self, prompt_tokens: int, completion_tokens: int) -> bytes:
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        return _event({**self.base, "model": self.model, "system_fingerprint": None, "choices": [], "usage": usage})


async def completion_events(*, user: User, turn: Turn, stream: ChatStream, include_usage: bool) -> AsyncIterator[bytes]:
    """The events of one streamed completion; `stream` has been started (its model answered)."""
    chunks = _Chunks(stream.model.name if stream.model else turn.model.name)
    finish: str | None = None
    try:
        yield chunks.choice({"role": "assistant", "content": "", "refusal": None})
        async for delta in stream.deltas():
            piece: dict = {}
            if delta.content:
                piece["content"] = delta.content
            if delta.tool_calls:
                piece["tool_calls"] = delta.tool_calls
            if delta.finish_reason:
                finish = delta.finish_reason
            if piece:
                yield chunks.choice(piece)
        result = stream.turn
        assert result is not None, "deltas() ended without a turn"
        await sync_to_async(turn_reply_store)(user=user, turn=turn, result=result)
        yield chunks.choice({}, finish or result.finish_reason)
        if include_usage:
            prompt_tokens = result.input_tokens or turn.prompt_tokens
            yield chunks.usage(prompt_tokens, result.output_tokens)
        yield _event("[DONE]")
    except ModelCallFailed as error:
        yield _event(upstream_error(error).body())
    except (asyncio.CancelledError, GeneratorExit):
        await _interrupted(user=user, turn=turn, stream=stream)
        raise


async def _interrupted(*, user: User, turn: Turn, stream: ChatStream) -> None:
    """The client went away: keep what it was shown, marked interrupted; nothing if it saw nothing."""
    await stream.interrupted()
    if stream.turn is not None:
        return  # finished and stored already
    partial = stream.partial()
    if partial.content.strip() or partial.tool_calls:
        try:
            await sync_to_async(turn_reply_store)(user=user, turn=turn, result=partial, interrupted=True)
        except Exception:  # the reply is lost, not the server: say so in the log
            logger.exception("gateway: the interrupted reply in channel %s could not be stored", turn.channel.pk)
