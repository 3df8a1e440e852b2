"""Relative time expressions get the calendar date they mean, computed from the day they were said."""

import datetime as dt

import pytest

from compaction import dates
from compaction.dates import anchor_dates

FRIDAY = dt.date(2023, 6, 9)


@pytest.mark.parametrize(
    ("said", "anchored"),
    [
        ("I went yesterday.", "I went yesterday [8 June 2023]."),
        ("We talked last night", "We talked last night [8 June 2023]"),
        ("the day before yesterday", "the day before yesterday [7 June 2023]"),
        ("Last Fri. I ran", "Last Fri. [2 June 2023] I ran"),
        ("last Saturday and this past Monday", "last Saturday [3 June 2023] and this past Monday [5 June 2023]"),
        ("two days ago", "two days ago [7 June 2023]"),
        ("3 weeks ago", "3 weeks ago [about 19 May 2023]"),
        ("ten years ago", "ten years ago [2013]"),
        ("a couple of months ago", "a couple of months ago [about April 2023]"),
        ("last week", "last week [week of 29 May 2023]"),
        ("last weekend", "last weekend [3–4 June 2023]"),
        ("next month and last year", "next month [July 2023] and last year [2022]"),
        # In any case, and "past" alone: the cheap word test before the full scan lets these through.
        ("YESTERDAY it rained", "YESTERDAY [8 June 2023] it rained"),
        ("past Monday was long", "past Monday [5 June 2023] was long"),
    ],
)
def test_relative_expressions_are_anchored(said, anchored):
    assert anchor_dates(said, said_on=FRIDAY) == anchored


def test_a_weekday_on_the_same_weekday_means_the_week_before():
    assert anchor_dates("last Friday", said_on=FRIDAY) == "last Friday [2 June 2023]"


@pytest.mark.parametrize(
    ("said_on", "weekday", "weekend"),
    [
        # Said on a Saturday: the Saturday before, and the weekend that ended six days ago.
        (dt.date(2023, 6, 10), "3 June 2023", "3–4 June 2023"),
        # Said on a Sunday: yesterday, but the weekend in progress has not ended: the one before.
        (dt.date(2023, 6, 11), "10 June 2023", "3–4 June 2023"),
        # Said on a Monday: the weekend that ended yesterday.
        (dt.date(2023, 6, 12), "10 June 2023", "10–11 June 2023"),
    ],
)
def test_last_saturday_and_last_weekend_follow_one_rule(said_on, weekday, weekend):
    """The most recent such day strictly before the day said; the most recent weekend that ended before it."""
    assert anchor_dates("last Saturday", said_on=said_on) == f"last Saturday [{weekday}]"
    assert anchor_dates("last weekend", said_on=said_on) == f"last weekend [{weekend}]"
    assert anchor_dates("this past weekend", said_on=said_on) == f"this past weekend [{weekend}]"


def test_a_weekend_across_months():
    assert (
        anchor_dates("last weekend", said_on=dt.date(2023, 10, 4))
        == "last weekend [30 September 2023 – 1 October 2023]"
    )


@pytest.mark.parametrize(
    "text",
    [
        "It feels like yesterday.",
        "See you on Friday.",
        "We met a few days ago.",
        "yesterday [8 June 2023] it rained",
        "today was fine",
        # Abbreviations only capitalised and with their full stop: these are not days.
        "I last sat on that bench in 2019.",
        "the last mon of the month",
        "We last wed in June",
        "Last Fri I ran",
        # Not one day: the last of a month, this coming one or the one after.
        "the last Monday of the month",
        "last Friday of May was hot",
        "next Tuesday",
        "See you next Friday.",
        "next weekend we drive",
        # The last seven days, or the calendar week before.
        "this past week was long",
        "this past month",
        "the last week was hard",
    ],
)
def test_what_fixes_no_date_or_is_anchored_already_is_left_alone(text):
    assert anchor_dates(text, said_on=FRIDAY) == text


def test_a_repeated_expression_is_anchored_once():
    assert (
        anchor_dates("Yesterday was fun: yesterday we sang.", said_on=FRIDAY)
        == "Yesterday [8 June 2023] was fun: yesterday we sang."
    )


def test_without_a_date_nothing_changes():
    assert anchor_dates("I went yesterday.", said_on=None) == "I went yesterday."
    assert (
        anchor_dates("I went yesterday.", said_on=dt.datetime(2023, 6, 9, 23, 59)) == "I went yesterday [8 June 2023]."
    )


@pytest.mark.parametrize(
    "text",
    [
        "Yesterday we met.",
        "LAST week",
        "two years AGO",
        "nExT Friday",
        "the pAsT",
        "nothing here",
        "",
        "laſt week",
        "naïve, yesterday",
        "İ ago",
        "no hint: café",
    ],
)
def test_the_hint_words_are_found_as_the_case_blind_pattern_finds_them(text):
    """ASCII texts are lower-cased and searched word by word; the others go through the pattern."""
    assert dates._hinted(text) == (dates._ANCHOR_HINT_RE.search(text) is not None)
