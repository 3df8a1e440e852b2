"""What the web pages of both apps share: the signed-in request, the htmx
check, the owner's channel lookup, errors as flash messages and statuses,
a form's submission, and the conversation area that every change re-renders.

chatcore's and compaction's views import these from here; no view module
imports another app's view module.
"""

from collections.abc import Callable
from typing import TypeVar

from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from chatcore import selectors
from chatcore.errors import NotFound, ServiceError, Throttled, error_text
from chatcore.metadata.stored import stored_metadata
from chatcore.models import Channel, Message, Summary
from chatcore.observability.metrics import throttled

T = TypeVar("T")


class AuthenticatedRequest(HttpRequest):
    """The request of a `login_required` view: its user is signed in."""

    user: User


def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def own_channel(request: AuthenticatedRequest, channel_id: int, *, for_reply: bool = False) -> Channel:
    """The signed-in person's channel, or 404 (someone else's is 'not found'). `for_reply`: read as a reply
    reads it (`selectors.channel_get`)."""
    try:
        return selectors.channel_get(user=request.user, channel_id=channel_id, for_reply=for_reply)
    except NotFound:
        raise Http404("Channel not found.") from None


def own_message(channel: Channel, message_id: int, *, role: str | None = None) -> Message:
    """A message of the channel (of that role, when given), or 404."""
    message = selectors.message_get(channel=channel, message_id=message_id)
    if message is None or (role is not None and message.role != role):
        raise Http404("Message not found.")
    return message


def own_summary(channel: Channel, summary_id: int) -> Summary:
    """A summary of the channel, or 404."""
    summary = selectors.summaries_for_channel(channel=channel).filter(pk=summary_id).first()
    if summary is None:
        raise Http404("Summary not found.")
    return summary


def page_error_text(error: Exception) -> str:
    """A failure as the pages show it: every message on one line."""
    return error_text(error, separator=" ")


def form_submit(request: HttpRequest, form: forms.Form, save: Callable[[dict], T]) -> tuple[T | None, int]:
    """A page's form, on GET (None, 200) and on POST: when the form is valid, `save(form.cleaned_data)`
    (a service call; what it returns, never None, and 200); when the form or the service refuses, None and
    400, the service's words shown on the form. The pages' create and change forms behave alike this way."""
    if request.method != "POST":
        return None, 200
    if form.is_valid():
        try:
            return save(form.cleaned_data), 200
        except ValidationError as error:
            form.add_error(None, page_error_text(error))
    return None, 400


def error_status(error: Exception) -> int:
    return error.status_code if isinstance(error, ServiceError) else 400


def channel_page_context(*, request: AuthenticatedRequest, channel: Channel) -> dict:
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
        and stored_metadata(leaf.metadata).get("kind") != "branch_summary",
        "leaf": leaf,
    }


def render_main(request: AuthenticatedRequest, channel: Channel, *, status: int = 200) -> HttpResponse:
    channel.refresh_from_db(
        fields=["context_tokens", "context_budget", "context_ratio", "context_messages", "settings", "last_activity_at"]
    )
    context = channel_page_context(request=request, channel=channel)
    context["oob"] = True  # the context bar outside the swapped area is replaced too
    return render(request, "chatcore/_main.html", context, status=status)


def with_retry_after(response: HttpResponse, error: Exception | None) -> HttpResponse:
    """A refused model call (the limit, chatcore.throttling) tells clients when to come back (and is counted)."""
    if isinstance(error, Throttled):
        throttled.labels(interface="page").inc()
        response["Retry-After"] = str(error.retry_after)
    return response


def throttled_page(request: AuthenticatedRequest, channel: Channel, error: Throttled) -> HttpResponse:
    """The limit on model calls was reached: a page that says so (429), not a redirect that hides it.
    The page script (static/chatcore/stream.js) reads the sentence marked data-throttled from it."""
    response = render(request, "chatcore/throttled.html", {"channel": channel, "error": error}, status=429)
    return with_retry_after(response, error)


def after_change(
    request: AuthenticatedRequest, channel: Channel, *, error: Exception | None = None, anchor: str = ""
) -> HttpResponse:
    """Redirect back to the channel (no JavaScript), or send the refreshed
    conversation area (htmx); an error becomes a flash message either way,
    except a refused model call without htmx, which answers 429 with its page."""
    if isinstance(error, Throttled) and not is_htmx(request):
        return throttled_page(request, channel, error)
    if error is not None:
        messages.error(request, page_error_text(error), extra_tags=getattr(error, "code", "invalid"))
    if is_htmx(request):
        response = render_main(request, channel, status=error_status(error) if error is not None else 200)
        return with_retry_after(response, error)
    return redirect(reverse("chat:channel", args=[channel.pk]) + anchor)
