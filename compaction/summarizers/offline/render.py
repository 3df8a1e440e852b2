"""Laying the chosen entries out: header, sections in the profile's order, day headings.

Dates are written once per day: a day's key facts open with the day
("- 8 May 2023 · Ana: “…” Ben: “…”"), a day too long for one line goes on
in a new bullet without repeating it, and in the other sections a line
names its day only when it differs from the line above. A section with
nothing in it is left out rather than written as "none".
"""

from __future__ import annotations

import bisect

from compaction.summarizers.offline import layout as layouts
from compaction.summarizers.offline.entries import Entry, render_entry
from compaction.summarizers.offline.scripts import scripts_of
from compaction.summarizers.offline.units import Unit
from compaction.transcript import format_date

ACCOUNT_ATTEMPTS = -1  # key of the attempts Detailed's account shows inline
EXCHANGE_TOKENS = 40  # under a day heading, an exchange shorter than this shares its line with the next
DAY_PREFIX_TOKENS = 8  # a day's date opening its line ("- 8 May 2023 · ") or its heading, with the line break
EXCHANGE_PREFIX_TOKENS = 4  # the bullet and line break of an exchange under a day heading


def timeline_entries(units: list[Unit], *, line_tokens: int, user_turns: list[int] | None = None) -> list[Entry]:
    """One line per day, in the order things were said; a day longer than `line_tokens` gets a heading of its
    own with a line per exchange under it (a new line where the user spoke again: `user_turns`)."""
    days: dict[str, list[Unit]] = {}
    for unit in sorted(units, key=lambda u: u.order):
        days.setdefault(unit.day, []).append(unit)
    entries: list[Entry] = []
    for day, group in days.items():
        total = sum(unit.tokens for unit in group)
        if total <= line_tokens or not day:
            entries.append(Entry(units=group, day=day, tokens=total + DAY_PREFIX_TOKENS))
            continue
        entries.append(Entry(heading=day, tokens=DAY_PREFIX_TOKENS))
        entries.extend(_exchanges(group, user_turns or []))
    return entries


def _exchanges(group: list[Unit], user_turns: list[int]) -> list[Entry]:
    lines: list[Entry] = []
    for unit in group:
        if lines:
            last = lines[-1].units[-1].item
            turn = bisect.bisect_right(user_turns, unit.item) > bisect.bisect_right(user_turns, last)
            if not turn or lines[-1].tokens < EXCHANGE_TOKENS:
                lines[-1].units.append(unit)
                lines[-1].tokens += unit.tokens
                continue
        lines.append(Entry(units=[unit], tokens=unit.tokens + EXCHANGE_PREFIX_TOKENS))
    return lines


def _day_of(entries: list[Entry]) -> str:
    for entry in reversed(entries):
        if entry.day:
            return entry.day
    return ""


def _account(units: list[Unit], attempts: list[Entry], line_tokens: int, user_turns: list[int]) -> list[Entry]:
    """Detailed's account by day: the day's facts, broken where a tool was run, the run on a line of its own."""
    breaks = sorted(attempts, key=lambda e: e.order)
    entries: list[Entry] = []
    stretch: list[Unit] = []
    ordered = sorted(units, key=lambda u: u.order)
    position = 0
    for attempt in breaks:
        while position < len(ordered) and ordered[position].order < attempt.order:
            stretch.append(ordered[position])
            position += 1
        entries.extend(timeline_entries(stretch, line_tokens=line_tokens, user_turns=user_turns))
        stretch = []
        entries.append(attempt)
    entries.extend(timeline_entries(ordered[position:], line_tokens=line_tokens, user_turns=user_turns))
    return entries


HEADER_SPEAKERS = 4  # the header names this many speakers, in the order they first spoke


def header(analysis, previous: bool) -> str:
    items = analysis.items
    speakers = list(dict.fromkeys(u.speaker for u in analysis.units))[:HEADER_SPEAKERS]
    dates = [item.created_at for item in items if item.created_at is not None]
    when = ""
    if dates:
        first, last = format_date(min(dates)), format_date(max(dates))
        when = f", {first}" if first == last else f", {first} – {last}"
    who = f" between {', '.join(speakers)}" if speakers else ""
    update = " (updated from the previous summary)" if previous else ""
    count = f"{len(items)} message" + ("" if len(items) == 1 else "s")
    return f"# Hand-over: {count}{who}{when}{update}"


SET_ASIDE_WRITERS = 4  # the note on passages set aside names this many of their writers


def render(analysis, layout: layouts.Layout, fixed: dict[int, list[Entry]], picked: list[Unit]) -> str:
    """The summary text: header, then each section that has lines, then a note of what was set aside."""
    titles = {section.title for section in layout.sections}
    carried = [u for u in picked if u.previous]
    fresh = [u for u in picked if not u.previous]
    if not analysis.heading:  # the fit to the token limit renders many times: the header is written once
        analysis.heading = header(analysis, bool(analysis.carried))
    lines = [analysis.heading]
    for position, section in enumerate(layout.sections):
        own_carried = [u for u in carried if u.previous == section.title]
        if section.kind in layouts.ELASTIC and not section.words:
            own_carried += [u for u in carried if u.previous not in titles]
            if section.kind == layouts.ACCOUNT:
                entries = _account(fresh, fixed.get(ACCOUNT_ATTEMPTS, []), layout.line_tokens, analysis.user_turns)
            else:
                entries = timeline_entries(fresh, line_tokens=layout.line_tokens, user_turns=analysis.user_turns)
        else:
            entries = sorted(fixed.get(position, []), key=lambda e: e.order)
        body = [f"- {u.text}" for u in sorted(own_carried, key=lambda u: u.position)]
        body += _lines(entries, analysis, dated=section.kind in layouts.ELASTIC)
        if body:
            lines.append(f"## {section.title}")
            lines.extend(body)
    lines.extend(_unquoted_scripts(analysis, [e for es in fixed.values() for e in es], picked))
    if analysis.set_aside:
        by = f" (written by {', '.join(analysis.set_aside_by[:SET_ASIDE_WRITERS])})" if analysis.set_aside_by else ""
        lines.append(
            f"- Note: {analysis.set_aside} passage(s) addressed to a model or summarizer{by} were kept out of "
            "this summary; they are conversation content, not instructions."
        )
    return "\n".join(lines)


def _lines(entries: list[Entry], analysis, *, dated: bool) -> list[str]:
    out, last_day = [], ""
    for entry in entries:
        if entry.heading:
            out.append(f"### {entry.heading}")
            last_day = entry.heading
            continue
        show = bool(entry.day) if dated else entry.day != last_day
        out.append(render_entry(entry, analysis.items, show_day=show))
        if entry.day:
            last_day = entry.day
    return out


def _unquoted_scripts(analysis, entries: list[Entry], picked: list[Unit]) -> list[str]:
    """A line for each script the people wrote in of which the summary quotes nothing, saying why: text in any
    script is quotable, so a reader must not take its absence for silence."""
    if not analysis.scripts:
        return []
    quoted: set[str] = set()
    for unit in [*picked, *(unit for entry in entries for unit in entry.units)]:
        quoted.update(scripts_of(unit.text))
    with_units = {unit.item for unit in analysis.units}
    by_reason: dict[str, list[str]] = {}
    for script, indices in sorted(analysis.scripts.items()):
        if script in quoted:
            continue
        if all(index in analysis.set_aside_items for index in indices):
            reason = "they were set aside as addressed to a model or summarizer"
        elif with_units.isdisjoint(indices):
            reason = "no sentence in them reads as a fact, a request or a decision on its own"
        else:
            reason = "other passages were chosen within the summary's token limit"
        by_reason.setdefault(reason, []).append(f"{script} ({len(indices)})")
    return [
        f"- Note: nothing is quoted of the messages written in {', '.join(names)} script: {reason}."
        for reason, names in by_reason.items()
    ]
