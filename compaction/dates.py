"""Anchoring relative time expressions to the calendar.

"Yesterday", "last Friday" and "two years ago" mean something only next to
the day they were said. A summary is read long after, and its lines are
pulled out of their day, so the offline summarizer writes the calendar date
beside each such expression it keeps: "I went to the fair yesterday (7 May
2023)". The original words stay; the anchor is added in parentheses and is
computed, never guessed: an expression that does not fix a date ("soon",
"the other day", "on Friday", which may be past or future) is left alone.
"""

from __future__ import annotations

import datetime as dt
import re

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20}
_WEEKDAYS = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4, "sat": 5, "sun": 6,
             "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}
_WEEKDAY = r"(?:mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)(?:day|nesday|sday|urday|rsday)?"
_COUNT = r"(?:\d{1,2}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty)"

_ANCHOR_RE = re.compile(
    r"(?<!like )(?<!as if it was )(?<!as if it were )\b(?P<yesterday>yesterday|last night)\b"
    r"|\bthe day before yesterday\b(?P<before_yesterday>)"
    rf"|\b(?P<count>{_COUNT}|a couple of|a couple)\s+(?P<unit>days?|weeks?|months?|years?)\s+ago\b"
    rf"|\b(?P<direction>last|this past|past|next)\s+(?P<weekday>{_WEEKDAY})\b\.?"
    r"|\b(?P<span_direction>last|this past|next)\s+(?P<span>week|weekend|month|year)\b",
    re.IGNORECASE,
)


def format_day(value: dt.date) -> str:
    """'7 May 2023', the form the summary uses for every date."""
    return f"{value.day} {value:%B %Y}"


def _month_shift(value: dt.date, months: int) -> dt.date:
    index = value.year * 12 + value.month - 1 + months
    return dt.date(index // 12, index % 12 + 1, 1)


def _anchor(match: re.Match, said: dt.date) -> str | None:
    groups = match.groupdict()
    if groups["yesterday"]:
        return format_day(said - dt.timedelta(days=1))
    if groups["before_yesterday"] is not None:
        return format_day(said - dt.timedelta(days=2))
    if groups["count"]:
        word = groups["count"].lower()
        exact = not word.startswith("a couple")
        count = 2 if not exact else int(word) if word.isdigit() else _NUMBERS[word]
        unit = groups["unit"].lower().rstrip("s")
        about = "" if exact and unit in ("day", "year") else "about "
        if unit == "day":
            return about + format_day(said - dt.timedelta(days=count))
        if unit == "week":
            return "about " + format_day(said - dt.timedelta(weeks=count))
        if unit == "month":
            return about + f"{_month_shift(said, -count):%B %Y}"
        return about + str(said.year - count)
    if groups["weekday"]:
        name = groups["weekday"].lower()
        weekday = _WEEKDAYS.get(name) if name in _WEEKDAYS else _WEEKDAYS.get(name[:3])
        if weekday is None:
            return None
        if groups["direction"].lower() == "next":
            ahead = (weekday - said.weekday()) % 7 or 7
            return format_day(said + dt.timedelta(days=ahead))
        back = (said.weekday() - weekday) % 7 or 7
        return format_day(said - dt.timedelta(days=back))
    span = groups["span"].lower()
    step = 1 if groups["span_direction"].lower() == "next" else -1
    if span == "year":
        return str(said.year + step)
    if span == "month":
        return f"{_month_shift(said, step):%B %Y}"
    monday = said - dt.timedelta(days=said.weekday()) + dt.timedelta(weeks=step)
    if span == "week":
        return f"week of {format_day(monday)}"
    saturday, sunday = monday + dt.timedelta(days=5), monday + dt.timedelta(days=6)
    if saturday.month == sunday.month:
        return f"{saturday.day}–{format_day(sunday)}"
    return f"{format_day(saturday)} – {format_day(sunday)}"


def anchor_dates(text: str, *, said_on: dt.date | dt.datetime | None) -> str:
    """`text` with the calendar date written after each relative time expression it contains."""
    if said_on is None or not text:
        return text
    said = said_on.date() if isinstance(said_on, dt.datetime) else said_on

    anchored: set[str] = set()

    def replace(match: re.Match) -> str:
        if text[match.end():match.end() + 2].lstrip().startswith("("):
            return match.group(0)  # already anchored
        anchor = _anchor(match, said)
        if anchor is None or anchor in anchored:
            return match.group(0)  # a repeated expression is anchored once
        anchored.add(anchor)
        words = match.group(0)
        trail = "." if words.endswith(".") else ""
        return f"{words.rstrip('.')} ({anchor}){trail}"

    return _ANCHOR_RE.sub(replace, text)
