"""Template helpers of the chat pages: Markdown, tool calls, the context gauge."""

import json

from django import template
from django.utils import timezone
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

from chatcore.markdown import render_markdown

register = template.Library()

WARN_RATIO = 0.75


@register.filter
def markdown(text: str) -> SafeString:
    return render_markdown(text)


@register.filter
def pretty_json(value) -> str:
    """Tool-call arguments arrive as a JSON string or an object; show them indented."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False)


@register.filter
def percent(ratio: float) -> int:
    return round((ratio or 0) * 100)


@register.filter
def bar_width(ratio: float) -> int:
    return max(0, min(100, round((ratio or 0) * 100)))


@register.filter
def pressure_level(ratio: float) -> str:
    ratio = ratio or 0
    if ratio >= 0.9:
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
def tool_call_name(call: dict) -> str:
    if not isinstance(call, dict):
        return "tool"
    function = call.get("function") or {}
    return function.get("name") or call.get("name") or "tool"


@register.filter
def tool_call_arguments(call: dict):
    if not isinstance(call, dict):
        return call
    function = call.get("function") or {}
    return function.get("arguments", call.get("arguments", ""))


@register.filter
def tool_result_name(metadata: dict) -> str:
    if not isinstance(metadata, dict):
        return ""
    return metadata.get("name") or metadata.get("tool_name") or ""


@register.filter
def ago(moment) -> str:
    if moment is None:
        return ""
    if (timezone.now() - moment).total_seconds() < 60:
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
