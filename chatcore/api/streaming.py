"""The reply endpoint's two answers: JSON when the model has finished, or
Server-Sent Events as it writes.

DRF views are synchronous, so the endpoint is split: `ReplyView` (DRF:
authentication, validation, the limit, the user's turn and the context, all
in a thread) returns a `PendingReply`, and `reply_endpoint` (an async Django
view around it) waits for the model in the event loop, holding no thread:

- `"stream": true` or `Accept: text/event-stream` → `text/event-stream`:
  `event: delta` with `{"content": "..."}` per piece, an `event: tool` with
  `{"round": n, "tool_calls": [...]}` after each round of server-side tool
  calls (recall_history: run and stored; the model is asked again and the
  answer's pieces follow), then one `event: done` with `{"message": <the
  stored message>, "usage": {"input_tokens", "output_tokens"}}`, or
  `event: error` with the error body (`detail`, `code`, `errors`) when the
  model fails (nothing more stored);
- otherwise `201` with the stored message, or the `502` error body.
"""

import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import status
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder
from rest_framework.views import APIView

from chatcore.api.exceptions import exception_handler
from chatcore.api.serializers import message_data
from chatcore.db_steps import db_step
from chatcore.errors import ServiceError
from chatcore.replies import ReplyPlan
from chatcore.streaming import (
    ReplyDelta,
    ReplyDone,
    ReplyEvent,
    ReplyTools,
    reply_complete,
    reply_events,
    written_together,
)

EVENT_STREAM = "text/event-stream"
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


# One encoder for every event (it keeps no state between calls): `json.dumps(cls=...)` makes one per call, a
# cost paid for each piece of every streamed reply.
_EVENT_ENCODER = JSONEncoder(ensure_ascii=False)
# A string as that encoder writes it (JSON, non-ASCII kept).
_encode_string = json.encoder.encode_basestring


def sse(event: str, data: dict) -> bytes:
    """One Server-Sent Event (JSON data on one line)."""
    return f"event: {event}\ndata: {_EVENT_ENCODER.encode(data)}\n\n".encode()


class EventStreamRenderer(BaseRenderer):
    """Lets a client that accepts only `text/event-stream` through content negotiation. The stream
    itself is a StreamingHttpResponse; an error answered before it starts (400, 404, 429) is JSON
    (see `json_errors`), since clients read an error's status and body before any stream."""

    media_type = EVENT_STREAM
    format = "sse"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        return json.dumps(data, cls=JSONEncoder).encode() if data is not None else b""


def json_errors(response):
    """An error response negotiated as an event stream is sent as JSON instead."""
    if response.status_code >= 400 and isinstance(getattr(response, "accepted_renderer", None), EventStreamRenderer):
        response.accepted_renderer, response.accepted_media_type = JSONRenderer(), JSONRenderer.media_type
    return response


def wants_stream(request, flag: bool) -> bool:
    return flag or EVENT_STREAM in request.headers.get("Accept", "")


def error_body(error: ServiceError, view) -> tuple[dict, int]:
    response = exception_handler(error, {"view": view})
    return response.data, response.status_code


def _done_data(done: ReplyDone) -> dict:
    """Read from the stored message alone (MessageSerializer's fields are its columns): no query, so no
    thread is needed to build it in the event loop."""
    return {
        "message": message_data(done.message),
        "usage": done.message.metadata["usage"],
    }


def sse_delta(content: str) -> bytes:
    """`sse("delta", {"content": content})`, the same bytes, formatted directly: one per piece of every reply."""
    return f'event: delta\ndata: {{"content": {_encode_string(content)}}}\n\n'.encode()


def _event_bytes(event: ReplyEvent, view) -> bytes:
    if isinstance(event, ReplyDelta):
        return sse_delta(event.content)
    if isinstance(event, ReplyTools):
        return sse("tool", {"round": event.round, "tool_calls": event.calls})
    if isinstance(event, ReplyDone):
        return sse("done", _done_data(event))
    return sse("error", error_body(event.error, view)[0])


def event_stream(plan: ReplyPlan, view) -> AsyncIterator[bytes]:
    """The reply's events; the pieces that arrived together go out in one write."""

    def encode(event: ReplyEvent) -> bytes:
        if type(event) is ReplyDelta:  # every piece of the reply: no call more than its bytes need
            return sse_delta(event.content)
        return _event_bytes(event, view)

    return written_together(reply_events(plan=plan), encode)


class PendingReply(Response):
    """What ReplyView hands to `reply_endpoint`: the prepared reply, not yet answered."""

    def __init__(self, *, plan: ReplyPlan, stream: bool):
        super().__init__(status=status.HTTP_201_CREATED)
        self.plan, self.stream = plan, stream

    async def finish(self) -> HttpResponseBase:
        context = getattr(self, "renderer_context", None)
        view = context.get("view") if context else None
        if self.stream:
            return StreamingHttpResponse(
                event_stream(self.plan, view), content_type=EVENT_STREAM, status=200, headers=STREAM_HEADERS
            )
        try:
            message = await reply_complete(plan=self.plan)
        except ServiceError as error:
            self.data, self.status_code = error_body(error, view)
        else:
            self.data = message_data(message)  # its columns alone: no query (see `_done_data`)
        return self


def async_api_view(view_class: type[APIView]) -> Callable[..., Coroutine[Any, Any, HttpResponseBase]]:
    """An async view around a DRF view whose handlers may return a PendingReply.

    It keeps the DRF class visible (`cls`, `initkwargs`) so that the schema generator documents it.
    """
    sync_view = view_class.as_view()
    sync_step = db_step(sync_view)  # made once: asgiref's wrapper and its checks are not paid per request

    @csrf_exempt  # DRF's own authentication enforces CSRF for session clients
    async def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = await sync_step(request, *args, **kwargs)
        if isinstance(response, PendingReply):
            return await response.finish()
        return response

    for name, value in (("cls", view_class), ("initkwargs", getattr(sync_view, "initkwargs", {}))):
        setattr(view, name, value)
    view.view_class = view_class  # type: ignore[attr-defined]
    return view
