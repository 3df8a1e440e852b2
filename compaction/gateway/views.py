"""HTTP side of the gateway: thin views that speak the OpenAI protocol.

Plain Django views, not DRF: the protocol's error objects
({"error": {"message", "type", "param", "code"}}) and its event stream are
not our REST API's, so the project's DRF exception handler stays the one
for /api/ and these answer the services' errors in the protocol's terms
(`errors.protocol_error`, in `protocol_view`).
"""

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from chatcore import selectors as chatcore_selectors
from chatcore.collector import collector_paused
from chatcore.db_steps import db_step
from chatcore.errors import ModelCallFailed, ServiceError
from chatcore.llm_chat import ChatTurn
from chatcore.llm_stream import ChatStream
from chatcore.observability.metrics import Outcome, reply_observed
from chatcore.teams.access import allowed_model_names
from chatcore.timing import Timings
from chatcore.tool_rounds import ToolLoop
from compaction.gateway import conf, legacy
from compaction.gateway.auth import gateway_token, gateway_user
from compaction.gateway.errors import ProtocolError, error_from_validation, protocol_error
from compaction.gateway.incoming import CompletionRequest
from compaction.gateway.resent import request_read
from compaction.gateway.rounds import Spent, answer_complete, round_stream, turn_loop
from compaction.gateway.services import Turn, model_for_request, turn_prepare, turn_reply_store
from compaction.gateway.streaming import completion_events
from compaction.observability.metrics import gateway_added_seconds
from compaction.scanner.selectors import settings_held, settings_read_once

logger = logging.getLogger(__name__)


def _error_response(error: ProtocolError) -> JsonResponse:
    response = JsonResponse(error.body(), status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    return response


def _allowed(methods: tuple[str, ...]) -> tuple[str, ...]:
    return (*methods, *(("HEAD",) if "GET" in methods else ()), "OPTIONS")


def protocol_view(methods: tuple[str, ...]) -> Callable:
    """Method check, errors as the protocol's objects, CSRF off (token-authenticated, no cookies).

    HEAD is answered as GET (the server sends no body); OPTIONS and a 405 name the methods in `Allow`.
    """
    allow = ", ".join(_allowed(methods))

    def decorate(view: Callable) -> Callable:
        async def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponseBase:
            try:
                if request.method == "OPTIONS":
                    return HttpResponse(status=204, headers={"Allow": allow})
                if request.method not in _allowed(methods):
                    raise ProtocolError(
                        f"Method {request.method} is not allowed here: use {' or '.join(methods)}.",
                        status=405,
                        code="method_not_allowed",
                        headers={"Allow": allow},
                    )
                return await view(request, *args, **kwargs)
            except ProtocolError as error:
                return _error_response(error)
            except ServiceError as error:
                return _error_response(protocol_error(error))
            except ValidationError as error:
                return _error_response(error_from_validation(error))
            except Exception:  # a bug or an outage: logged with its traceback, answered in the protocol's shape
                logger.exception("gateway: %s %s failed", request.method, request.path)
                return _error_response(
                    ProtocolError(
                        "The server had an error while processing your request.", status=500, type="server_error"
                    )
                )

        wrapped.__name__ = view.__name__
        wrapped.__doc__ = view.__doc__
        return csrf_exempt(wrapped)

    return decorate


def _body(request: HttpRequest) -> bytes:
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    if length > conf.MAX_REQUEST_BYTES:
        raise ProtocolError(
            f"The request is {length:,} bytes; at most {conf.MAX_REQUEST_BYTES:,} are accepted.",
            status=413,
            code="request_too_large",
        )
    return request.read(conf.MAX_REQUEST_BYTES + 1) or b"null"


def turn_headers(turn: Turn, timings: Timings) -> dict[str, str]:
    headers = {"X-Channel-Id": str(turn.channel.pk), "X-Context-Tokens": str(turn.prompt_tokens)}
    if turn.summary_id is not None:
        headers["X-Compaction-Summary-Id"] = str(turn.summary_id)
    # Where the time went (ms), for browsers' devtools and the gateway benchmark.
    headers["Server-Timing"] = ", ".join(f"{name};dur={value:.2f}" for name, value in timings.ms.items())
    return headers


Prepared = tuple[User, CompletionRequest, Turn]


def _prepare(request: HttpRequest, timings: Timings, placed: Callable[[Prepared], None] | None = None) -> Prepared:
    """Everything before the model call, in one trip to a thread: auth, parsing, the limit, the tree.
    `placed`: given what is prepared once the turn is placed, before its commit (`turn_prepare`)."""
    with timings.timed("prepare_cpu", clock=time.thread_time):
        with timings.timed("parse"):
            token = gateway_token(request)
            user = token.user
            request.user = user
            with collector_paused():  # a resent history is tens of thousands of objects, none in a cycle
                completion = request_read(
                    _body(request), owner_id=user.pk, channel_header=request.headers.get("X-Channel-Id")
                )

        def handed(turn: Turn) -> None:
            if placed is not None:
                placed((user, completion, turn))

        turn = turn_prepare(user=user, request=completion, timings=timings, team=token.team, placed=handed)
    return user, completion, turn


Asked = tuple[ToolLoop, asyncio.Future]  # the call's rounds, and its first model request running
Asking = Callable[[User, CompletionRequest, Turn], Asked]


async def _placed_and_asked(request: HttpRequest, timings: Timings, ask: Asking) -> tuple[Prepared, Asked]:
    """The call prepared (`_prepare`) and its model request started (`ask`), the request sent while the
    placing's transaction commits.

    A commit waits some milliseconds for the disk, and the model request needs nothing the commit adds: the
    preparation's thread hands the turn over (`turn_prepare`'s `placed`) once its placing is done and the
    request upstream is known, the request is sent, and the commit is awaited before anything else. So the
    answer is stored, and the response sent, only after the turn it answers is on disk; if the commit fails,
    the request is cancelled (its answer, if any, is never stored) and the call fails with the commit's error,
    as it did before the request was sent. Everything the asking writes meanwhile (a failed attempt's usage
    row, a round of the server's tools) goes through `db_step`, into the request's one thread, after the
    preparation's step. No lock is held across the model call: the channel's row lock lasts to the commit.
    A turn that had to be compacted first is handed over only after its thread returns.
    """
    running = asyncio.get_running_loop()
    ready: asyncio.Future[Prepared] = running.create_future()

    def placed(prepared: Prepared) -> None:  # in the preparation's thread
        running.call_soon_threadsafe(_settle, ready, prepared)

    preparing = asyncio.ensure_future(db_step(_prepare)(request, timings, placed))
    await asyncio.wait((ready, preparing), return_when=asyncio.FIRST_COMPLETED)
    if not ready.done():  # not handed over before the commit (compacted inline, or failed: raises here)
        prepared = await preparing
        return prepared, ask(*prepared)
    prepared = ready.result()
    asked = ask(*prepared)
    try:
        await preparing  # the commit
    except BaseException:
        asked[1].cancel()
        await asyncio.gather(asked[1], return_exceptions=True)
        raise
    return prepared, asked


def _settle(future: asyncio.Future, value: object) -> None:
    if not future.done():
        future.set_result(value)


def _completion_body(*, turn: Turn, result: ChatTurn, spent: Spent, legacy_functions: bool) -> dict:
    message: dict = {"role": "assistant", "content": result.content or None, "refusal": None, "annotations": []}
    finish_reason: str | None = result.finish_reason
    if result.tool_calls:
        message["tool_calls"] = result.tool_calls
    if legacy_functions:
        message, finish_reason = legacy.message_shaped(message), legacy.finish_shaped(finish_reason)
    prompt_tokens = spent.input_tokens or turn.prompt_tokens
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": result.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": spent.output_tokens,
            "total_tokens": prompt_tokens + spent.output_tokens,
        },
        "service_tier": None,
        "system_fingerprint": None,
    }


@protocol_view(("POST",))
async def chat_completions(request: HttpRequest) -> HttpResponseBase:
    """POST /v1/chat/completions: the OpenAI Chat Completions call, on our tree, with compaction."""
    timings = Timings()  # each step's milliseconds, sent as Server-Timing
    spent = Spent()

    def ask(user: User, completion: CompletionRequest, turn: Turn) -> Asked:
        loop = turn_loop(user=user, turn=turn)
        if completion.stream:
            return loop, asyncio.ensure_future(round_stream(user=user, turn=turn, loop=loop))
        return loop, asyncio.ensure_future(_answered(user=user, turn=turn, loop=loop, spent=spent, timings=timings))

    # The request's wall time and the server process's CPU (this request's when alone): in the header of an
    # answer sent whole (a stream's headers leave before they end). The compaction settings are read once for
    # the call: the tools offered and the trigger after the answer's store both look at them.
    with timings.timed("cpu", clock=time.process_time), timings.timed("total"), settings_read_once():
        with timings.timed("prepare"):
            (user, completion, turn), (loop, asking) = await _placed_and_asked(request, timings, ask)
        if completion.stream:
            return await _streamed(
                request, user=user, completion=completion, turn=turn, loop=loop, timings=timings, opening=asking
            )
        try:
            result = await asking
        except ModelCallFailed:
            reply_observed(interface="v1", stream=False, outcome=Outcome.FAILED)
            raise
        if completion.legacy_functions:
            result = dataclasses.replace(result, tool_calls=legacy.answer_calls(result.tool_calls))
        with timings.timed("store"):
            await db_step(turn_reply_store)(
                user=user, turn=turn, result=result, parent=loop.plan.parent, usage=result.usage
            )
    reply_observed(interface="v1", stream=False, outcome=Outcome.OK)
    gateway_added_seconds.observe(max(0.0, timings.ms["total"] - timings.ms["upstream"]) / 1000)
    body = _completion_body(turn=turn, result=result, spent=spent, legacy_functions=completion.legacy_functions)
    return JsonResponse(body, headers=turn_headers(turn, timings))


async def _answered(*, user: User, turn: Turn, loop: ToolLoop, spent: Spent, timings: Timings) -> ChatTurn:
    with timings.timed("upstream"):
        return await answer_complete(user=user, turn=turn, loop=loop, spent=spent)


async def _streamed(
    request: HttpRequest,
    *,
    user: User,
    completion: CompletionRequest,
    turn: Turn,
    loop: ToolLoop,
    timings: Timings,
    opening: "asyncio.Future[ChatStream]",
) -> StreamingHttpResponse:
    """`stream: true`: the events (`streaming.py`), the first round opened (`opening`) before the headers go."""
    try:
        stream = await opening
    except ModelCallFailed:
        reply_observed(interface="v1", stream=True, outcome=Outcome.FAILED)
        raise
    events = completion_events(
        user=user,
        turn=turn,
        loop=loop,
        stream=stream,
        request=completion,
        prepared_ms=timings.ms["prepare"],
        settings=settings_held(),  # the row the call read while it prepared, for the trigger after the store
    )
    content: AsyncIterator[bytes] | Iterator[bytes] = events
    if not isinstance(request, ASGIRequest):
        # A WSGI server (runserver) cannot stream an async iterator: the events go out together at the end.
        content = _buffered([event async for event in events])
    response = StreamingHttpResponse(content, content_type="text/event-stream", headers=turn_headers(turn, timings))
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass the events through as they come
    return response


def _buffered(events: list[bytes]) -> Iterator[bytes]:
    yield from events


def _model_object(name: str) -> dict:
    return {"id": name, "object": "model", "created": 0, "owned_by": "compaction-for-django"}


def _model_names(request: HttpRequest) -> list[str]:
    token = gateway_token(request)
    names = list(chatcore_selectors.llm_models_active().values_list("name", flat=True))
    allowed = allowed_model_names(team=token.team)
    return names if allowed is None else [name for name in names if name in allowed]


@protocol_view(("GET",))
async def models_list(request: HttpRequest) -> HttpResponse:
    """GET /v1/models: the active models of the catalogue (through a token bound to a team that restricts its
    models, those the team allows)."""
    names = await db_step(_model_names)(request)
    return JsonResponse({"object": "list", "data": [_model_object(name) for name in names]})


def _model_named(request: HttpRequest, name: str) -> str:
    gateway_user(request)
    return model_for_request(name=name).name


@protocol_view(("GET",))
async def model_detail(request: HttpRequest, name: str) -> HttpResponse:
    """GET /v1/models/{name} (a trailing slash is the client's, not the name's)."""
    return JsonResponse(_model_object(await db_step(_model_named)(request, name.rstrip("/"))))


@csrf_exempt  # answers every method with the same 404; nothing is read or written
def unknown_url(request: HttpRequest, *args: object, **kwargs: object) -> JsonResponse:
    """A path under /v1 the gateway does not serve, answered as OpenAI answers one (wherever it is mounted)."""
    return _error_response(
        ProtocolError(f"Invalid URL ({request.method} {request.path})", status=404, code="unknown_url")
    )
