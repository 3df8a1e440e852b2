"""The timing instrument (chatcore.timing): named steps in the order they ended, on any clock."""

import itertools

import pytest

from chatcore.timing import Timings


def ticking(step: float):
    """A clock that moves `step` seconds each time it is read."""
    counter = itertools.count()
    return lambda: next(counter) * step


def test_steps_are_kept_in_milliseconds_in_the_order_they_ended():
    timings, clock = Timings(), ticking(0.5)
    with timings.timed("outer", clock=clock):  # reads 0.0
        with timings.timed("first", clock=clock):  # 0.5 → 1.0
            pass
        with timings.timed("second", clock=clock):  # 1.5 → 2.0
            pass
    assert timings.ms == {"first": 500.0, "second": 500.0, "outer": 2_500.0}  # outer: 0.0 → 2.5
    assert list(timings.ms) == ["first", "second", "outer"]


def test_a_step_that_raises_is_timed_and_the_error_goes_on():
    timings = Timings()
    with pytest.raises(ValueError), timings.timed("failing", clock=ticking(0.002)):
        raise ValueError("boom")
    assert timings.ms == {"failing": 2.0}
