"""Compaction in the web pages: the Summarize & Continue panel, Undo, and a
channel's auto-compaction settings. Thin views over the same services as
the API; the conversation area is re-rendered by the pages' shared helpers
(chatcore.web)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from chatcore import services as chatcore_services
from chatcore.errors import ServiceError
from chatcore.models import Channel
from chatcore.web import (
    AuthenticatedRequest,
    after_change,
    error_status,
    form_submit,
    is_htmx,
    own_channel,
    own_summary,
    page_error_text,
    render_main,
    with_retry_after,
)
from compaction import selectors, services
from compaction.forms import ChannelCompactionForm, CompactForm
from compaction.scanner.selectors import compaction_settings_get
from compaction.services.summarize import summarizer_is_offline
from compaction.summarizers.offline.profiles import offline_notes


def _offline_notes(default, profiles, channel) -> list[tuple[object, list[str]]]:
    """(profile, what the offline summarizer makes of it) for each profile, when summaries are written offline."""
    if not summarizer_is_offline(default, channel=channel):
        return []
    return [(profile, offline_notes(profile)) for profile in profiles]


def _panel(request: AuthenticatedRequest, context: dict, *, status: int = 200) -> HttpResponse:
    template = "compaction/_panel.html" if is_htmx(request) else "compaction/panel.html"
    return render(request, template, context, status=status)


def _done(request: AuthenticatedRequest, channel, text: str) -> HttpResponse:
    """After Replace: back to the channel, or (htmx) the new conversation area
    swapped in place of the panel's content, and the panel told to close."""
    messages.success(request, text)
    if not is_htmx(request):
        return redirect("chat:channel", channel.pk)
    response = render_main(request, channel)
    response["HX-Retarget"] = "#channel-main"
    response["HX-Reswap"] = "outerHTML"
    response["HX-Trigger"] = "compaction-done"
    return response


def _result_note(result) -> str:
    return (
        f"Summarized {result.summarized_count} message{'s' if result.summarized_count != 1 else ''}: "
        f"{result.tokens_before:,} → {result.tokens_after:,} tokens in the context. "
        f"The originals are kept; Undo brings them back."
    )


@login_required
@require_http_methods(["GET", "POST"])
def compact_panel(request: AuthenticatedRequest, channel_id: int) -> HttpResponse:
    """Options → Preview (a dry run) → edit the draft → Replace or Branch;
    or Summarize now, without a preview."""
    channel = own_channel(request, channel_id)
    profiles = list(selectors.profiles_visible(user=request.user, channel=channel))
    default = services.profile_resolve(channel=channel, user=request.user)
    context = {
        "channel": channel,
        "profiles": profiles,
        "default_profile": default,
        "stage": "options",
        "offline_notes": _offline_notes(default, profiles, channel),
    }
    if request.method == "GET":
        context["form"] = CompactForm(profiles=profiles)
        return _panel(request, context)

    form = CompactForm(request.POST, profiles=profiles)
    context["form"] = form
    if not form.is_valid():
        context["error"] = "Please correct the marked fields."
        return _panel(request, context, status=400)
    data = form.cleaned_data
    action = data["action"] or "preview"
    options = {
        "profile_slug": data["profile"] or None,
        "focus": data["focus"] or "",
        "keep_recent": data["keep_recent"],
    }
    if data["draft"] and action != "preview":
        context["stage"] = "draft"
    try:
        if action == "preview":
            return _preview(request, context, channel=channel, data=data, options=options, profiles=profiles)
        if action in ("now", "replace"):
            result = services.channel_compact(
                channel=channel, actor=request.user, **options, **_draft_args(data, action)
            )
            return _done(request, channel, _result_note(result))
        branch = services.summary_branch(
            channel=channel,
            actor=request.user,
            content=data["draft"] or None,
            profile_slug=options["profile_slug"],
            focus=options["focus"],
            through_message_id=data["through_message_id"] if data["draft"] else None,
        )
    except (ValidationError, ServiceError) as error:
        context["error"] = page_error_text(error)
        context["error_code"] = getattr(error, "code", "invalid")
        return with_retry_after(_panel(request, context, status=error_status(error)), error)
    return _branched(request, channel, branch)


def _draft_args(data: dict, action: str) -> dict:
    """Summarize now: nothing more; Replace: the (maybe edited) draft, pinned where the preview placed it."""
    if action == "now":
        return {}
    return {
        "content": data["draft"],
        "draft_token": data["draft_token"] or None,  # the service decides from it whether the text is the model's
        "through_message_id": data["through_message_id"],
    }


def _preview(
    request: AuthenticatedRequest, context: dict, *, channel: Channel, data: dict, options: dict, profiles: list
) -> HttpResponse:
    """A dry run: the draft in the panel's editor, with what it would change."""
    result = services.channel_compact(channel=channel, actor=request.user, dry_run=True, **options)
    context.update(stage="draft", result=result)
    context["form"] = CompactForm(
        initial={
            **data,
            "draft": result.content,
            "draft_token": result.draft_token,
            "through_message_id": result.through_message_id,
        },
        profiles=profiles,
    )
    return _panel(request, context)


def _branched(request: AuthenticatedRequest, channel: Channel, branch: Channel) -> HttpResponse:
    messages.success(
        request,
        f"Branched from “{channel.title}”: this channel starts from the summary and the messages after it.",
    )
    if is_htmx(request):
        response = HttpResponse(status=204)
        response["HX-Redirect"] = reverse("chat:channel", args=[branch.pk])
        return response
    return redirect("chat:channel", branch.pk)


@login_required
@require_POST
def summary_undo(request: AuthenticatedRequest, channel_id: int, summary_id: int) -> HttpResponse:
    """Revert a summary: the original messages are back in the context at once."""
    channel = own_channel(request, channel_id)
    summary = own_summary(channel, summary_id)
    try:
        chatcore_services.summary_revert(summary=summary, actor=request.user)
    except (ValidationError, ServiceError) as error:
        return after_change(request, channel, error=error)
    # The confirmation goes where the summary's bar was (after the last message it covered), and the
    # page keeps that place in view: the restored originals appear above it, not in front of the reader.
    through = summary.through_message_id
    messages.success(
        request,
        "Summary undone: the original messages above are back in the context.",
        extra_tags=f"at-m{through}",
    )
    return after_change(request, channel, anchor=f"#confirm-m{through}")


_AUTO_CHOICE: dict[object, str] = {True: "on", False: "off"}


@login_required
@require_http_methods(["GET", "POST"])
def channel_settings(request: AuthenticatedRequest, channel_id: int) -> HttpResponse:
    """Auto-compaction on/off and threshold, the model and the team, validated by the same service as the API's
    PATCH."""
    channel = own_channel(request, channel_id)
    current = channel.settings or {}
    initial = {
        "auto_compaction": _AUTO_CHOICE.get(current.get("auto_compaction"), ""),
        "threshold_percent": (
            round(current["compaction_threshold"] * 100, 2) if current.get("compaction_threshold") is not None else None
        ),
        "model": channel.model_id,
        "team": channel.team_id,
    }
    form = ChannelCompactionForm(request.POST or None, initial=initial, user=request.user, channel=channel)
    saved, status = form_submit(
        request,
        form,
        lambda _values: chatcore_services.channel_update(channel=channel, actor=request.user, **form.changes(channel)),
    )
    if saved is not None:
        messages.success(request, "Settings saved.")
        return redirect("compaction:settings", channel.pk)
    site = compaction_settings_get()
    return render(
        request, "compaction/channel_settings.html", {"channel": channel, "form": form, "site": site}, status=status
    )
