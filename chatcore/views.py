"""The chat pages: thin views over the same services as the API.

Every form posts and redirects, so the pages work without JavaScript. When
htmx sends the request (header HX-Request), the view answers with the
fragment that changed instead of a redirect, and with the error's HTTP
status so that scripts can tell success from failure. The views that ask
for a reply are async: their database step runs in a thread, the model is
awaited in the event loop, and a request that accepts text/event-stream
(static/chatcore/stream.js) gets the reply piece by piece.
"""

from collections.abc import AsyncIterator, Callable

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from chatcore import branching, replies, selectors, services
from chatcore.api.streaming import STREAM_HEADERS, sse, sse_delta
from chatcore.db_steps import db_step
from chatcore.errors import ServiceError
from chatcore.forms import ChannelCreateForm, CursorForm, MessageForm
from chatcore.models import Message
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
from chatcore.web import (
    AuthenticatedRequest,
    after_change,
    channel_page_context,
    form_submit,
    is_htmx,
    own_channel,
    own_message,
    own_summary,
    page_error_text,
    render_main,
)

CHANNEL_LIST_LIMIT = 200  # the channel list shows at most this many: the page stays light for someone with thousands


@login_required
@require_http_methods(["GET", "POST"])
def channel_list(request: AuthenticatedRequest) -> HttpResponse:
    form = ChannelCreateForm(request.POST or None, user=request.user)
    channel, status = form_submit(request, form, lambda values: services.channel_create(owner=request.user, **values))
    if channel is not None:
        return redirect("chat:channel", channel.pk)
    channels = selectors.channel_list(user=request.user)[:CHANNEL_LIST_LIMIT]
    return render(request, "chatcore/channel_list.html", {"channels": channels, "form": form}, status=status)


@login_required
@require_GET
def channel_detail(request: AuthenticatedRequest, channel_id: int) -> HttpResponse:
    """The page; with htmx, the conversation area alone (the stream script refreshes it after a reply)."""
    channel = own_channel(request, channel_id)
    if is_htmx(request):
        return render_main(request, channel)
    context = channel_page_context(request=request, channel=channel)
    context["composer"] = MessageForm()
    if channel.branched_from_id:
        context["branch_source"] = selectors.channel_branch_source(channel=channel, user=request.user)
    return render(request, "chatcore/channel.html", context)


def wants_stream(request: AuthenticatedRequest) -> bool:
    return "text/event-stream" in request.headers.get("Accept", "")


def _page_event(event: ReplyEvent) -> bytes:
    if isinstance(event, ReplyDelta):
        return sse_delta(event.content)
    if isinstance(event, ReplyTools):
        names = sorted({(call.get("function") or {}).get("name") or "" for call in event.calls})
        return sse("tool", {"round": event.round, "names": names})
    if isinstance(event, ReplyDone):
        return sse("done", {"message_id": event.message.pk})
    return sse("error", {"detail": page_error_text(event.error), "code": event.error.code})


def page_events(plan: ReplyPlan) -> AsyncIterator[bytes]:
    """The page's stream: the reply's pieces (those that arrived together in one write), then `done` (the
    script then fetches the conversation) or `error`."""
    return written_together(reply_events(plan=plan, interface="page"), _page_event)


async def reply_answer(
    request: AuthenticatedRequest, step: ReplyPlan | HttpResponse, *, anchor: str = ""
) -> HttpResponseBase:
    """After the sync step (the user's turn stored, the context assembled): stream the reply to the
    script, or wait for it without holding a thread and redirect (no JavaScript) as before."""
    if isinstance(step, HttpResponse):
        return step
    if wants_stream(request):
        return StreamingHttpResponse(page_events(step), content_type="text/event-stream", headers=STREAM_HEADERS)
    try:
        await reply_complete(plan=step, interface="page")
    except ServiceError as error:
        return await db_step(after_change)(request, step.channel, error=error)
    return await db_step(after_change)(request, step.channel, anchor=anchor)


async def _prepared(
    request: AuthenticatedRequest, prepare: Callable[..., ReplyPlan | HttpResponse], *args: int
) -> ReplyPlan | HttpResponse:
    """The sync step, in a thread, with the user `login_required` read (`request.auser()`) as `request.user`,
    which the step reads: Django keeps the two apart, and each would be a query of its own."""
    user = await request.auser()
    assert isinstance(user, User), "login_required let an anonymous request through"
    request.user = user
    return await db_step(prepare)(request, *args)


def _send_prepare(request: AuthenticatedRequest, channel_id: int) -> ReplyPlan | HttpResponse:
    channel = own_channel(request, channel_id, for_reply=True)
    form = MessageForm(request.POST)
    if not form.is_valid() or not form.cleaned_data["content"].strip():
        return after_change(request, channel, error=ValidationError("Write a message first."))
    try:
        return replies.reply_prepare(channel=channel, user=request.user, content=form.cleaned_data["content"])
    except (ValidationError, ServiceError) as error:
        return after_change(request, channel, error=error)


@login_required
@require_POST
async def message_send(request: AuthenticatedRequest, channel_id: int) -> HttpResponseBase:
    """The user's turn, then the model's reply (the turn is kept if the model fails)."""
    return await reply_answer(request, await _prepared(request, _send_prepare, channel_id), anchor="#composer")


def _edit_prepare(request: AuthenticatedRequest, channel_id: int, message_id: int) -> ReplyPlan | HttpResponse:
    channel = own_channel(request, channel_id)
    original = own_message(channel, message_id, role=Message.Role.USER)
    form = MessageForm(request.POST)
    if not form.is_valid() or not form.cleaned_data["content"].strip():
        return after_change(request, channel, error=ValidationError("The edited message may not be empty."))
    try:
        return branching.message_edit_prepare(
            channel=channel, user=request.user, original=original, content=form.cleaned_data["content"]
        )
    except (ValidationError, ServiceError) as error:
        return after_change(request, channel, error=error)


@login_required
@require_POST
async def message_edit(request: AuthenticatedRequest, channel_id: int, message_id: int) -> HttpResponseBase:
    """An edited user message is a new sibling of the original, then answered."""
    return await reply_answer(request, await _prepared(request, _edit_prepare, channel_id, message_id))


def _regenerate_prepare(request: AuthenticatedRequest, channel_id: int, message_id: int) -> ReplyPlan | HttpResponse:
    channel = own_channel(request, channel_id, for_reply=True)
    message = own_message(channel, message_id)
    parent_id = message.pk if message.role == Message.Role.USER else message.parent_id
    try:
        return replies.reply_prepare(channel=channel, user=request.user, parent_id=parent_id)
    except (ValidationError, ServiceError) as error:
        return after_change(request, channel, error=error)


@login_required
@require_POST
async def message_regenerate(request: AuthenticatedRequest, channel_id: int, message_id: int) -> HttpResponseBase:
    """A new reply to the same user turn, as a sibling of the old one (an interrupted reply too).

    Given a user message (no reply yet, or the last attempt failed), answers it.
    """
    return await reply_answer(request, await _prepared(request, _regenerate_prepare, channel_id, message_id))


@login_required
@require_POST
def cursor_switch(request: AuthenticatedRequest, channel_id: int) -> HttpResponse:
    """‹ › on a message with siblings: move to the neighbouring branch."""
    channel = own_channel(request, channel_id)
    form = CursorForm(request.POST)
    if not form.is_valid():
        return after_change(request, channel, error=ValidationError("Choose a message to switch to."))
    message = own_message(channel, form.cleaned_data["message_id"])
    target = selectors.message_sibling_step(message=message, step=form.cleaned_data["step"] or 0)
    try:
        services.cursor_move(channel=channel, user=request.user, message_id=target)
    except (ValidationError, ServiceError) as error:
        return after_change(request, channel, error=error)
    return after_change(request, channel, anchor=f"#m{target}")


@login_required
@require_GET
def summary_originals(request: AuthenticatedRequest, channel_id: int, summary_id: int) -> HttpResponse:
    """The original messages a summary stands for, loaded only when asked.

    It lists the stretch since the summary before it; that earlier summary
    gets its own bar, which expands the same way.
    """
    channel = own_channel(request, channel_id)
    summary = own_summary(channel, summary_id)
    earlier = selectors.summary_earlier_boundary(summary=summary)
    after_depth = earlier.through_message.depth if earlier else -1
    originals = selectors.message_path(leaf_id=summary.through_message_id, after_depth=after_depth, with_siblings=True)
    context = {
        "channel": channel,
        "summary": summary,
        "earlier": earlier,
        "earlier_hidden_count": earlier.through_message.depth + 1 if earlier else 0,
        "originals": originals,
    }
    template = "chatcore/_originals.html" if is_htmx(request) else "chatcore/originals.html"
    return render(request, template, context)
