"""Number formats of the staff pages (usage dashboard, admin lists)."""

from django import template

register = template.Library()


@register.filter
def intcomma_plain(value) -> str:
    """12,345 whatever the locale settings (no django.contrib.humanize needed)."""
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return "—"


@register.filter
def pct(ratio) -> str:
    """0.8944 → '89.4%'."""
    try:
        return f"{float(ratio) * 100:.1f}%"
    except (TypeError, ValueError):
        return "—"


@register.filter
def share(part, whole) -> str:
    """part of (part + whole) as a percentage: failures among attempts."""
    try:
        total = int(part) + int(whole)
        return f"{int(part) / total * 100:.1f}%" if total else "—"
    except (TypeError, ValueError):
        return "—"


@register.filter
def seconds(milliseconds) -> str:
    if milliseconds is None:
        return "—"
    value = float(milliseconds) / 1000
    return f"{value:.2f} s" if value < 10 else f"{value:.0f} s"


@register.filter
def meter(ratio) -> str:
    """Width (0-100) of a small bar for a share of the threshold."""
    try:
        return f"{max(0.0, min(100.0, float(ratio) * 100)):.1f}"
    except (TypeError, ValueError):
        return "0"


@register.filter
def trigger_class(trigger: str) -> str:
    return {"manual": "s-manual", "auto": "s-auto", "gateway": "s-gateway"}.get(trigger, "s-other")
