"""Template helpers of the chat pages: Markdown, tool calls, the context gauge."""

import json

from django import template
from django.conf import settings
from django.shortcuts import resolve_url
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

from chatcore.bounded_json import json_loads_bounded
from chatcore.markdown import render_markdown
from chatcore.metadata.stored import metadata_display, stored_metadata, stored_tool_call

register = template.Library()

WARN_RATIO = 0.75
DANGER_RATIO = 0.9  # the context is nearly full: the next replies may not fit
JUST_NOW_SECONDS = 60  # younger than this, a moment reads "just now"


@register.filter
def markdown(text: str) -> SafeString:
    return render_markdown(text)


@register.filter
def pretty_json(value) -> str:
    """Tool-call arguments arrive as a JSON string or an object; show them indented (as they are when
    they are not JSON, or too deep to read safely)."""
    if isinstance(value, str):
        try:
            value = json_loads_bounded(value)
        except ValueError:
            return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return str(value)


@register.filter
def percent(ratio: float) -> int:
    return round((ratio or 0) * 100)


@register.filter
def bar_width(ratio: float) -> int:
    return max(0, min(100, round((ratio or 0) * 100)))


@register.filter
def pressure_level(ratio: float) -> str:
    ratio = ratio or 0
    if ratio >= DANGER_RATIO:
        return "danger"
    if ratio >= WARN_RATIO:
        return "warn"
    return "ok"


@register.filter
def line_count(text: str) -> int:
    return (text or "").count("\n") + 1


@register.filter
def thousands(number) -> str:
    try:
        return f"{int(number):,}"
    except (TypeError, ValueError):
        return ""


ROLE_LABELS = {"user": "You", "assistant": "Assistant", "tool": "Tool", "system": "System"}


@register.filter
def role_label(role: str) -> str:
    return ROLE_LABELS.get(role, role)


@register.filter
def message_metadata(value: object) -> dict:
    """A stored message's metadata as the page reads it, whatever the row holds (chatcore.metadata.stored)."""
    return metadata_display(value)


@register.filter
def tool_call_name(call: object) -> str:
    return stored_tool_call(call)["function"]["name"]


@register.filter
def tool_call_arguments(call: object) -> str:
    return stored_tool_call(call)["function"]["arguments"]


@register.filter
def tool_result_name(metadata: object) -> str:
    metadata = stored_metadata(metadata)
    name = metadata.get("name") or metadata.get("tool_name") or ""
    return name if isinstance(name, str) else ""


@register.filter
def ago(moment) -> str:
    if moment is None:
        return ""
    if (timezone.now() - moment).total_seconds() < JUST_NOW_SECONDS:
        return "just now"
    return f"{timesince(moment).split(',')[0]} ago"


@register.filter
def carried_summary_body(text: str) -> str:
    """A carried-over summary without its bracketed opening note (the page says that in its own words)."""
    head, separator, body = (text or "").partition("\n\n")
    if separator and head.startswith("[") and head.endswith("]"):
        return body
    return text or ""


@register.simple_tag
def split_flashes(messages, path) -> dict:
    """Flash messages, split by where they belong: one tagged `at-m<id>` (an
    in-place action, such as Undo, that happened at that message) is shown
    right after that message, where the person is looking; the rest (and any
    whose message is not on the page) at the end of the conversation."""
    on_page = {m.pk for m in path or ()}
    placed: dict[int, list] = {}
    rest: list = []
    for message in messages or ():
        anchor = next((tag[4:] for tag in str(message.tags).split() if tag.startswith("at-m")), "")
        if anchor.isdigit() and int(anchor) in on_page:
            placed.setdefault(int(anchor), []).append(message)
        else:
            rest.append(message)
    return {"at": placed, "rest": rest}


@register.filter
def flashes_at(flashes: dict, message_id: int) -> list:
    return flashes["at"].get(message_id, [])


@register.simple_tag
def login_url() -> str:
    """The site's log-in page (settings.LOGIN_URL, a URL or a URL name): the apps have none of their own."""
    return resolve_url(settings.LOGIN_URL)


@register.simple_tag
def url_if_mounted(name: str) -> str:
    """The address of an optional page the host may or may not serve (the API docs): empty when it does not."""
    try:
        return reverse(name)
    except NoReverseMatch:
        return ""
