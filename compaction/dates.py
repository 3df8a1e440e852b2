"""Anchoring relative time expressions to the calendar.

"Yesterday", "last Friday" and "two years ago" mean something only next to
the day they were said. A summary is read long after, and its lines are
pulled out of their day, so the offline summarizer writes the calendar date
beside each such expression it keeps: "I went to the fair yesterday [7 May
2023]". The original words stay; the anchor is an editorial insertion in
square brackets (docs/design.md, invariant 10: a quote stays a quote) and is
computed, never guessed. What each expression is taken to mean:

- "yesterday", "last night": the day before; "the day before yesterday":
  two days before; "N days/years ago": that day or year exactly; weeks,
  months and "a couple of …" ago are approximate and say "about".
- "last Friday" (or "this past Friday"): the most recent Friday strictly
  before the day it was said; "last weekend": the most recent Saturday and
  Sunday that ended before that day; "last week/month/year": the previous
  calendar week (from Monday), month or year; "next week/month/year": the
  following one.

An expression that does not fix a date is left alone: "soon", "the other
day", "on Friday" (past or future), "next Friday" and "next weekend" (this
coming one or the one after), "this past week/month/year" (the last seven
days, or the calendar week before), "the last Monday of the month".
Weekday abbreviations count only capitalised and with their full stop
("Fri."), so that "I sat on the bench" is not a Saturday.
"""

from __future__ import annotations

import datetime as dt
import re

_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
}
A_COUPLE = 2  # "a couple of weeks ago": read as two, and the date written as "about"
_WEEKDAYS = {
    "mon": 0,
    "tue": 1,
    "tues": 1,
    "wed": 2,
    "thu": 3,
    "thur": 3,
    "thurs": 3,
    "fri": 4,
    "sat": 5,
    "sun": 6,
    "monday": 0,
    "tuesday": 1,
    "wednesday": 2,
    "thursday": 3,
    "friday": 4,
    "saturday": 5,
    "sunday": 6,
}
_WEEKDAY = (
    r"(?:(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
    r"|(?-i:Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat|Sun)\.)"
)
_COUNT = r"(?:\d{1,2}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty)"

_ANCHOR_RE = re.compile(
    r"(?<!like )(?<!as if it was )(?<!as if it were )\b(?P<yesterday>yesterday|last night)\b"
    r"|\bthe day before yesterday\b(?P<before_yesterday>)"
    rf"|\b(?P<count>{_COUNT}|a couple of|a couple)\s+(?P<unit>days?|weeks?|months?|years?)\s+ago\b"
    # "the last Monday of the month", "every last Friday of May" name no single day.
    rf"|(?<!the )(?<!every )\b(?P<direction>last|this past|past|next)\s+(?P<weekday>{_WEEKDAY})"
    r"(?!\s+of\b)"
    r"|(?<!the )\b(?P<span_direction>last|this past|next)\s+(?P<span>week|weekend|month|year)\b"
    r"(?!\s+of\b)",
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
        count = A_COUPLE if not exact else int(word) if word.isdigit() else _NUMBERS[word]
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
        if groups["direction"].lower() == "next":
            return None  # this coming one, or the one after
        weekday = _WEEKDAYS[groups["weekday"].lower().rstrip(".")]
        return format_day(_last_weekday(said, weekday))
    span = groups["span"].lower()
    direction = groups["span_direction"].lower()
    if span == "weekend":
        if direction == "next":
            return None  # this coming weekend, or the one after
        sunday = _last_weekday(said, 6)
        saturday = sunday - dt.timedelta(days=1)
        if saturday.month == sunday.month:
            return f"{saturday.day}–{format_day(sunday)}"
        return f"{format_day(saturday)} – {format_day(sunday)}"
    if direction == "this past":
        return None  # the last seven days, or the calendar week before: not one date
    step = 1 if direction == "next" else -1
    if span == "year":
        return str(said.year + step)
    if span == "month":
        return f"{_month_shift(said, step):%B %Y}"
    monday = said - dt.timedelta(days=said.weekday()) + dt.timedelta(weeks=step)
    return f"week of {format_day(monday)}"


def _last_weekday(said: dt.date, weekday: int) -> dt.date:
    """The most recent `weekday` (0 = Monday) strictly before `said`."""
    return said - dt.timedelta(days=(said.weekday() - weekday) % 7 or 7)


def expression_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` has a relative time expression, with the anchor written after it if there is one."""
    spans = []
    for match in _ANCHOR_RE.finditer(text):
        end = match.end()
        anchor = _WRITTEN_ANCHOR_RE.match(text, end)
        spans.append((match.start(), anchor.end() if anchor else end))
    return spans


_WRITTEN_ANCHOR_RE = re.compile(r" [\[(][^()\[\]]*[\])]")
# Every expression _ANCHOR_RE finds holds one of these words: most texts hold none, and this test is
# several times cheaper than _ANCHOR_RE's scan (search results date every turn they show).
_ANCHOR_HINT_RE = re.compile(r"yesterday|last|ago|past|next", re.IGNORECASE)
_ANCHOR_HINTS = ("yesterday", "last", "ago", "past", "next")


def _hinted(text: str) -> bool:
    """Whether `text` holds one of the hint words (_ANCHOR_HINT_RE): an ASCII text is lower-cased and searched
    for each word, many times cheaper than the case-blind regex's scan; any other text (whose case folding
    may differ from lower-casing) goes through the regex."""
    if text.isascii():
        lowered = text.lower()
        return any(map(lowered.__contains__, _ANCHOR_HINTS))
    return _ANCHOR_HINT_RE.search(text) is not None


def date_anchors(text: str, *, said_on: dt.date | dt.datetime | None) -> list[tuple[int, str]]:
    """(position, anchor) for each relative time expression of `text`: where its calendar date goes.

    The position is the end of the expression. An expression already followed by an anchor, one that
    fixes no date, and a repeat of an anchor already given are left out.
    """
    if said_on is None or not text or not _hinted(text):
        return []
    said = said_on.date() if isinstance(said_on, dt.datetime) else said_on
    found: list[tuple[int, str]] = []
    seen: set[str] = set()
    for match in _ANCHOR_RE.finditer(text):
        if _WRITTEN_ANCHOR_RE.match(text, match.end()):
            continue  # already anchored
        anchor = _anchor(match, said)
        if anchor is None or anchor in seen:
            continue  # fixes no date, or a repeated expression (anchored once)
        seen.add(anchor)
        found.append((match.end(), anchor))
    return found


def anchor_dates(text: str, *, said_on: dt.date | dt.datetime | None) -> str:
    """`text` with the calendar date written after each relative time expression, as an insertion in square
    brackets ("yesterday [7 May 2023]"): the words said stay as they were, the date is visibly added."""
    pieces, start = [], 0
    for position, anchor in date_anchors(text, said_on=said_on):
        pieces.extend([text[start:position], f" [{anchor}]"])
        start = position
    pieces.append(text[start:])
    return "".join(pieces)
