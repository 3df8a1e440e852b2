"""Server-rendered SVG charts for the usage dashboard: no script, no CDN.

Each chart is an <svg role="img"> with a title, a description for screen
readers, axis labels and a <title> on every bar (the browser's tooltip).
Colours come from classes styled in the dashboard's stylesheet, so the
markup carries no inline style (a strict CSP allows it).
"""

import datetime
import math
from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 12, 28
GRID_STEPS = 4  # the value axis in quarters of the peak
DATE_LABELS = 8  # at most this many dates under the bars, so that they never overlap
BAR_SHARE = 0.7  # of a day's slot the bar fills; the rest is the gap between days


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exponent = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * exponent:
            return step * exponent
    return 10 * exponent


def _short(value: float, unit: str = "") -> str:
    if unit == "$":
        if value and value < 0.1:
            return f"${value:.4f}".rstrip("0")
        return f"${value:,.2f}" if value < 1000 else f"${value / 1000:,.1f}k"
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}{unit}"
    return f"{value:.3g}{unit}" if value != int(value) else f"{int(value)}{unit}"


def _frame(
    title: str, description: str, peak: float, unit: str, days: Sequence[datetime.date], body: str
) -> SafeString:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title><desc>{escape(description)}</desc>'
    ]
    for i in range(GRID_STEPS + 1):
        value = peak * i / GRID_STEPS
        y = TOP + plot_h - plot_h * i / GRID_STEPS
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(_short(value, unit))}</text>'
        )
    step = max(1, math.ceil(len(days) / DATE_LABELS))
    slot = plot_w / max(1, len(days))
    for index, day in enumerate(days):
        if index % step == 0:
            x = LEFT + slot * (index + 0.5)
            parts.append(
                f'<text class="tick" x="{x:.1f}" y="{HEIGHT - 8}" text-anchor="middle">{day.strftime("%b %-d")}</text>'
            )
    parts.append(body)
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every text above is escaped


def _bar_places(days: Sequence[datetime.date]) -> tuple[float, float, list[tuple[int, datetime.date, float]]]:
    """The plot's height, a bar's width and where each day's bar starts, for every bar chart alike."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(1, len(days))
    bar = max(1.0, slot * BAR_SHARE)
    return plot_h, bar, [(index, day, LEFT + slot * index + (slot - bar) / 2) for index, day in enumerate(days)]


def stacked_bars(
    days: Sequence[datetime.date],
    series: Sequence[tuple[str, str, Sequence[float]]],
    *,
    title: str,
    unit: str = "",
) -> SafeString:
    """One bar per day, the series (label, css class, values) stacked."""
    totals = [sum(values[i] for _label, _css, values in series) for i in range(len(days))]
    peak = _nice_max(max(totals, default=0))
    plot_h, bar, places = _bar_places(days)
    body = []
    for index, day, x in places:
        base = float(TOP + plot_h)
        for label, css, values in series:
            value = values[index]
            if value <= 0:
                continue
            height = plot_h * value / peak
            base -= height
            tip = f"{day:%Y-%m-%d} · {label}: {_short(value, unit)}"
            body.append(
                f'<rect class="{escape(css)}" x="{x:.1f}" y="{base:.1f}" width="{bar:.1f}" height="{height:.1f}">'
                f"<title>{escape(tip)}</title></rect>"
            )
    described = "; ".join(f"{label}: {_short(sum(values), unit)} in total" for label, _css, values in series)
    return _frame(title, described, peak, unit, days, "".join(body))


def overlay_bars(
    days: Sequence[datetime.date],
    back: tuple[str, str, Sequence[float]],
    front: tuple[str, str, Sequence[float]],
    *,
    title: str,
    unit: str = "",
) -> SafeString:
    """Two series on the same bar, the smaller in front (e.g. tokens before → after)."""
    peak = _nice_max(max([*back[2], *front[2]], default=0))
    plot_h, bar, places = _bar_places(days)
    body = []
    for index, day, x in places:
        for (label, css, values), width, shift in ((back, bar, 0.0), (front, bar * 0.5, bar * 0.25)):
            value = values[index]
            if value <= 0:
                continue
            height = plot_h * value / peak
            tip = f"{day:%Y-%m-%d} · {label}: {_short(value, unit)}"
            body.append(
                f'<rect class="{escape(css)}" x="{x + shift:.1f}" y="{TOP + plot_h - height:.1f}" width="{width:.1f}" '
                f'height="{height:.1f}"><title>{escape(tip)}</title></rect>'
            )
    described = f"{back[0]}: {_short(sum(back[2]), unit)}; {front[0]}: {_short(sum(front[2]), unit)}"
    return _frame(title, described, peak, unit, days, "".join(body))
