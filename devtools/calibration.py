"""A yardstick run beside every benchmark, so that its figures survive the machine's drift.

The virtual machines the benchmarks run on change speed from one day to the
next by a factor of two or three, so a figure in milliseconds cannot say
whether a change helped. Each run therefore also times a fixed piece of pure
Python work (`calibration_ms`: the least CPU time of a few runs, at the start
and at the end), and every timing is written again in calibration units:
`<name>_cal` = the milliseconds divided by the mean of the two calibrations.
The load average before the run goes beside it: a loaded machine shows there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# The yardstick: the least process CPU time over this many runs (the least is the run nothing disturbed).
CALIBRATION_RUNS = 7
# Its work, sum(i * i for i in range(CALIBRATION_SPAN)): about a tenth of a second of plain Python.
CALIBRATION_SPAN = 1_000_000

CAL_SUFFIX = "_cal"
# Name parts that mark a figure as a duration, and how many milliseconds one of its units is.
DURATION_UNITS = {"ms": 1.0, "seconds": 1000.0, "s": 1000.0}
# Parts that make a figure a rate or a share instead (compactions_per_s, megabytes per second).
RATE_MARKS = ("per_s", "ratio", "speedup", "growth", "share", "upkeep")


def calibration_ms(*, runs: int = CALIBRATION_RUNS) -> float:
    """The least process CPU milliseconds of the yardstick's work over `runs` runs."""
    best = float("inf")
    for _ in range(runs):
        started = time.process_time()
        sum(i * i for i in range(CALIBRATION_SPAN))
        best = min(best, (time.process_time() - started) * 1000)
    return best


def load_average() -> float:
    """The machine's one-minute load average (0 where the system does not say)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return 0.0


def duration_factor(key: str) -> float | None:
    """Milliseconds per unit of a figure named `key`, or None when the name does not say it is a duration."""
    if key.endswith(CAL_SUFFIX) or key.startswith("calibration") or any(mark in key for mark in RATE_MARKS):
        return None
    for part in key.split("_"):
        if part in DURATION_UNITS:
            return DURATION_UNITS[part]
    return None


def calibrated(figures, *, unit_ms: float):
    """`figures` with each duration also in calibration units (`<name>_cal` beside `<name>`), at any depth."""
    if isinstance(figures, list):
        return [calibrated(item, unit_ms=unit_ms) for item in figures]
    if not isinstance(figures, dict):
        return figures
    result = {}
    for key, value in figures.items():
        result[key] = calibrated(value, unit_ms=unit_ms)
        factor = duration_factor(key) if isinstance(key, str) else None
        if factor is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
            result[f"{key}{CAL_SUFFIX}"] = round(value * factor / unit_ms, 5)
    return result


def cal_lines(figures, prefix: str = "") -> Iterator[str]:
    """`path: value cal` for every calibrated figure, in order, for the printed table."""
    if isinstance(figures, list):
        for index, item in enumerate(figures):
            yield from cal_lines(item, f"{prefix}[{index}]")
    elif isinstance(figures, dict):
        for key, value in figures.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(key, str) and key.endswith(CAL_SUFFIX):
                yield f"{path}: {value:.4g} cal"
            else:
                yield from cal_lines(value, path)


@dataclass
class Calibration:
    """The yardstick around one run: its two readings and the load before it."""

    load_average: float
    start_ms: float
    end_ms: float | None = None

    @property
    def unit_ms(self) -> float:
        return round((self.start_ms + (self.end_ms if self.end_ms is not None else self.start_ms)) / 2, 3)

    def fields(self) -> dict:
        return {
            "calibration_ms": round(self.unit_ms, 3),
            "calibration_ms_start": round(self.start_ms, 3),
            "calibration_ms_end": round(self.end_ms if self.end_ms is not None else self.start_ms, 3),
            "load_average": self.load_average,
        }

    def apply(self, figures: dict) -> dict:
        """`figures` with the calibration's fields and every duration in calibration units."""
        return {**calibrated(figures, unit_ms=self.unit_ms), **self.fields()}

    def summary(self) -> str:
        fields = self.fields()
        return (
            f"calibration: {fields['calibration_ms']:.1f} ms (start {fields['calibration_ms_start']:.1f}, "
            f"end {fields['calibration_ms_end']:.1f}); load average before the run {self.load_average:.2f}"
        )


@contextmanager
def calibration() -> Iterator[Calibration]:
    """Read the load, time the yardstick, run the body, time the yardstick again."""
    reading = Calibration(load_average=load_average(), start_ms=calibration_ms())
    yield reading
    reading.end_ms = calibration_ms()
