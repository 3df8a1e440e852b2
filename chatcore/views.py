"""The chat pages: thin views over the same services as the API.

Every form posts and redirects, so the pages work without JavaScript. When
htmx sends the request (header HX-Request), the view answers with the
fragment that changed instead of a redirect, and with the error's HTTP
status so that scripts can tell success from failure.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from chatcore import selectors, services
from chatcore.errors import NotFound, ServiceError
from chatcore.forms import ChannelCreateForm, CursorForm, MessageForm
from chatcore.models import Channel, Message, Summary


def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def own_channel(request: HttpRequest, channel_id: int) -> Channel:
    """The signed-in person's channel, or 404 (someone else's is 'not found')."""
    try:
        return selectors.channel_get(user=request.user, channel_id=channel_id)
    except NotFound:
        raise Http404("Channel not found.") from None


def error_text(error: Exception) -> str:
    if isinstance(error, ValidationError):
        if hasattr(error, "error_dict"):
            return " ".join(m for errors in error.error_dict.values() for e in errors for m in e.messages)
        return " ".join(error.messages)
    if isinstance(error, ServiceError):
        return error.message
    return str(error)


def error_status(error: Exception) -> int:
    return error.status_code if isinstance(error, ServiceError) else 400


def channel_page_context(*, request: HttpRequest, channel: Channel) -> dict:
    """What the conversation area needs, in a fixed number of queries.

    Only the path after the boundary in force is loaded (one recursive query
    that stops there, siblings counted in the same query), however long the
    channel is; older messages are fetched when someone expands the bar.
    """
    cursor = selectors.cursor_get(channel=channel, user=request.user)
    boundary = cursor.summary if cursor else None
    after_depth = boundary.through_message.depth if boundary else -1
    path = selectors.message_path(leaf_id=cursor.leaf_id, after_depth=after_depth, with_siblings=True) if cursor else []
    leaf = path[-1] if path else None
    return {
        "channel": channel,
        "boundary": boundary,
        "hidden_count": boundary.through_message.depth + 1 if boundary else 0,
        "path": path,
        # A carried-over summary opens a branched channel as a user-role message, but asks for no reply.
        "awaiting_reply": leaf is not None
        and leaf.role == Message.Role.USER
        and (leaf.metadata or {}).get("kind") != "branch_summary",
        "leaf": leaf,
    }


def render_main(request: HttpRequest, channel: Channel, *, status: int = 200) -> HttpResponse:
    channel.refresh_from_db(
        fields=["context_tokens", "context_budget", "context_ratio", "context_messages", "settings", "last_activity_at"]
    )
    context = channel_page_context(request=request, channel=channel)
    context["oob"] = True  # the context bar outside the swapped area is replaced too
    return render(request, "chatcore/_main.html", context, status=status)


def after_change(
    request: HttpRequest, channel: Channel, *, error: Exception | None = None, anchor: str = ""
) -> HttpResponse:
    """Redirect back to the channel (no JavaScript), or send the refreshed
    conversation area (htmx); an error becomes a flash message either way."""
    if error is not None:
        messages.error(request, error_text(error), extra_tags=getattr(error, "code", "invalid"))
    if is_htmx(request):
        return render_main(request, channel, status=error_status(error) if error is not None else 200)
    return redirect(reverse("chat:channel", args=[channel.pk]) + anchor)


@login_required
@require_http_methods(["GET", "POST"])
def channel_list(request: HttpRequest) -> HttpResponse:
    form = ChannelCreateForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                channel = services.channel_create(owner=request.user, **form.cleaned_data)
            except ValidationError as error:
                form.add_error(None, error_text(error))
            else:
                return redirect("chat:channel", channel.pk)
        status = 400
    channels = selectors.channel_list(user=request.user)[:200]
    return render(request, "chatcore/channel_list.html", {"channels": channels, "form": form}, status=status)


@login_required
@require_GET
def channel_detail(request: HttpRequest, channel_id: int) -> HttpResponse:
    channel = own_channel(request, channel_id)
    context = channel_page_context(request=request, channel=channel)
    context["composer"] = MessageForm()
    if channel.branched_from_id:
        context["branch_source"] = selectors.channel_branch_source(channel=channel, user=request.user)
    return render(request, "chatcore/channel.html", context)


@login_required
@require_POST
def message_send(request: HttpRequest, channel_id: int) -> HttpResponse:
    """The user's turn, then the model's reply (the turn is kept if the model fails)."""
    channel = own_channel(request, channel_id)
    form = MessageForm(request.POST)
    if not form.is_valid() or not form.cleaned_data["content"].strip():
        return after_change(request, channel, error=ValidationError("Write a message first."))
    try:
        services.reply_generate(channel=channel, user=request.user, content=form.cleaned_data["content"])
    except (ValidationError, ServiceError) as error:
        return after_change(request, channel, error=error)
    return after_change(request, channel, anchor="#composer")


@login_required
@require_POST
def message_edit(request: HttpRequest, channel_id: int, message_id: int) -> HttpResponse:
    """An edited user message is a new sibling of the original, then answered."""
    channel = own_channel(request, channel_id)
    original = Message.objects.filter(channel=channel, pk=message_id, role=Message.Role.USER).first()
    if original is None:
        raise Http404("Message not found.")
    form = MessageForm(request.POST)
    if not form.is_valid() or not form.cleaned_data["content"].strip():
        return after_change(request, channel, error=ValidationError("The edited message may not be empty."))
    content = form.cleaned_data["content"]
    try:
        if original.parent_id is None:
            services.message_append(
                channel=channel, user=request.user, role=Message.Role.USER, content=content, root=True
            )
            services.reply_generate(channel=channel, user=request.user)
        else:
            services.reply_generate(channel=channel, user=request.user, content=content, parent_id=original.parent_id)
    except (ValidationError, ServiceError) as error:
        return after_change(request, channel, error=error)
    return after_change(request, channel)


@login_required
@require_POST
def message_regenerate(request: HttpRequest, channel_id: int, message_id: int) -> HttpResponse:
    """A new reply to the same user turn, as a sibling of the old one.

    Given a user message (no reply yet, or the last attempt failed), answers it.
    """
    channel = own_channel(request, channel_id)
    message = Message.objects.filter(channel=channel, pk=message_id).first()
    if message is None:
        raise Http404("Message not found.")
    parent_id = message.pk if message.role == Message.Role.USER else message.parent_id
    try:
        services.reply_generate(channel=channel, user=request.user, parent_id=parent_id)
    except (ValidationError, ServiceError) as error:
        return after_change(request, channel, error=error)
    return after_change(request, channel)


@login_required
@require_POST
def cursor_switch(request: HttpRequest, channel_id: int) -> HttpResponse:
    """‹ › on a message with siblings: move to the neighbouring branch."""
    channel = own_channel(request, channel_id)
    form = CursorForm(request.POST)
    if not form.is_valid():
        return after_change(request, channel, error=ValidationError("Choose a message to switch to."))
    message = Message.objects.filter(channel=channel, pk=form.cleaned_data["message_id"]).first()
    if message is None:
        raise Http404("Message not found.")
    target = message.pk
    step = form.cleaned_data["step"] or 0
    if step:
        siblings = list(selectors.message_siblings(message=message).values_list("pk", flat=True))
        index = siblings.index(message.pk) + step
        target = siblings[max(0, min(index, len(siblings) - 1))]
    try:
        services.cursor_move(channel=channel, user=request.user, message_id=target)
    except (ValidationError, ServiceError) as error:
        return after_change(request, channel, error=error)
    return after_change(request, channel, anchor=f"#m{target}")


def summary_for_channel(channel: Channel, summary_id: int) -> Summary:
    summary = selectors.summaries_for_channel(channel=channel).filter(pk=summary_id).first()
    if summary is None:
        raise Http404("Summary not found.")
    return summary


def earlier_boundary(summary: Summary) -> Summary | None:
    """The summary in force just above this one on its path (reverted ones are skipped)."""
    previous = summary.previous
    while previous is not None and previous.reverted_at is not None:
        previous = previous.previous
    return previous


@login_required
@require_GET
def summary_originals(request: HttpRequest, channel_id: int, summary_id: int) -> HttpResponse:
    """The original messages a summary stands for, loaded only when asked.

    It lists the stretch since the summary before it; that earlier summary
    gets its own bar, which expands the same way.
    """
    channel = own_channel(request, channel_id)
    summary = summary_for_channel(channel, summary_id)
    earlier = earlier_boundary(summary)
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
