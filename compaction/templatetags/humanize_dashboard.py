"""Number formats of the staff pages (usage dashboard, admin lists)."""

import functools
from collections.abc import Callable

from django import template

register = template.Library()


def _or(fallback: str) -> Callable[[Callable[..., str]], Callable[..., str]]:
    """A filter that shows `fallback` for a value that is not a number (None, '', text) instead of failing."""

    def decorate(format_value: Callable[..., str]) -> Callable[..., str]:
        @functools.wraps(format_value)
        def formatted(*values) -> str:
            try:
                return format_value(*values)
            except (TypeError, ValueError):
                return fallback

        return formatted

    return decorate


@register.filter
@_or("—")
def intcomma_plain(value) -> str:
    """12,345 whatever the locale settings (no django.contrib.humanize needed)."""
    return f"{int(value):,}"


@register.filter
@_or("—")
def pct(ratio) -> str:
    """0.8944 → '89.4%'."""
    return f"{float(ratio) * 100:.1f}%"


@register.filter
@_or("—")
def share(part, whole) -> str:
    """part of (part + whole) as a percentage: failures among attempts."""
    total = int(part) + int(whole)
    return f"{int(part) / total * 100:.1f}%" if total else "—"


@register.filter
def seconds(milliseconds) -> str:
    if milliseconds is None:
        return "—"
    value = float(milliseconds) / 1000
    return f"{value:.2f} s" if value < 10 else f"{value:.0f} s"


@register.filter
@_or("0")
def meter(ratio) -> str:
    """Width (0-100) of a small bar for a share of the threshold."""
    return f"{max(0.0, min(100.0, float(ratio) * 100)):.1f}"


@register.filter
def trigger_class(trigger: str) -> str:
    return {"manual": "s-manual", "auto": "s-auto", "gateway": "s-gateway"}.get(trigger, "s-other")
