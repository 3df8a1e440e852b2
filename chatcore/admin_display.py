"""Column formats of the admin lists: percentages, usernames, short text,
tokens before → after, formatted extracts. Kept apart from the ModelAdmins
so that the lists stay short enough to read at 1280 px."""

import string
from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from chatcore.models import AuditEntry, Channel, Message, Summary, UsageEntry


def short(text: str, limit: int = 48) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def username(user) -> str:
    return user.get_username() if user is not None else "—"


def figure(label: str, template: str) -> Callable[[Any], str]:
    """A column of figures: the row formatted by `template` (str.format, the row as {0}), sorted by
    the first field the template names. One line a column, where the figure is all there is to it."""
    first = next(name for _, name, _, _ in string.Formatter().parse(template) if name)
    ordering = first.removeprefix("0.")

    @admin.display(description=label, ordering=ordering)
    def column(obj: Any) -> str:
        return template.format(obj)

    column.__name__ = f"{ordering}_figure"
    return column


since_summary = figure("Since summary", "{0.context_messages:,} msgs")
context_used = figure("Context", "{0.context_ratio:.1%}")
tokens_before_after = figure("Tokens", "{0.tokens_before:,} → {0.tokens_after:,}")
usage_tokens = figure("Tokens in + out", "{0.input_tokens:,} + {0.output_tokens:,}")
usage_cost = figure("Cost", "${0.cost:,.4f}")


@admin.display(description="Channel", ordering="channel__title")
def channel_title(obj: Message | Summary | UsageEntry) -> str:
    return short(obj.channel.title, 30) if obj.channel is not None else "—"


@admin.display(description="Title", ordering="title")
def channel_name(obj: Channel) -> str:
    return short(obj.title, 40)


@admin.display(description="Owner", ordering="owner__username")
def channel_owner(obj: Channel) -> str:
    return username(obj.owner)


@admin.display(description="State")
def channel_state(obj: Channel) -> str:
    states = [
        name
        for name, on in (("deleted", obj.deleted_at), ("archived", obj.archived), ("ephemeral", obj.ephemeral))
        if on
    ]
    return ", ".join(states) or "active"


@admin.display(description="In force", boolean=True, ordering="reverted_at")
def in_force(obj: Summary) -> bool:
    return obj.reverted_at is None


@admin.display(description="Extracts")
def formatted_extracts(obj: Summary) -> SafeString | str:
    """Decisions, files, tools with counts and open questions as lists, not a JSON blob."""
    extracts = obj.extracts or {}
    sections = []
    for key, label in (("decisions", "Decisions"), ("files", "Files"), ("open_questions", "Open questions")):
        items = extracts.get(key) or []
        if items:
            sections.append(
                format_html("<h4>{}</h4><ul>{}</ul>", label, format_html_join("", "<li>{}</li>", ((i,) for i in items)))
            )
    tools = extracts.get("tools") or {}
    if tools:
        rows = format_html_join("", "<li><code>{}</code> × {}</li>", sorted(tools.items()))
        sections.append(format_html("<h4>Tools used</h4><ul>{}</ul>", rows))
    if not sections:
        return "—"
    return format_html("<div class='extracts'>{}</div>", format_html_join("", "{}", ((s,) for s in sections)))


@admin.display(description="User", ordering="user__username")
def usage_user(obj: UsageEntry) -> str:
    return username(obj.user)


@admin.display(description="Time", ordering="duration_ms")
def usage_duration(obj: UsageEntry) -> str:
    return f"{obj.duration_ms / 1000:.2f} s"


@admin.display(description="Outcome", ordering="success")
def usage_outcome(obj: UsageEntry) -> str:
    return "ok" if obj.success else "failed: " + short(obj.error, 32)


@admin.display(description="Actor", ordering="actor__username")
def audit_actor(obj: AuditEntry) -> str:
    """The person's username; the label for system actors (the scanner, a deleted user)."""
    if obj.actor is not None:
        return obj.actor.get_username()
    return obj.actor_label or "system"


@admin.display(description="Content")
def message_excerpt(obj: Message) -> str:
    return short(obj.content, 60)


def when(field: str, label: str):
    """A date column as '2026-11-30 21:21' (local time): a third of Django's default width."""

    @admin.display(description=label, ordering=field)
    def column(obj) -> str:
        value = getattr(obj, field)
        return timezone.localtime(value).strftime("%Y-%m-%d %H:%M") if value else "—"

    column.__name__ = f"{field}_compact"
    return column
