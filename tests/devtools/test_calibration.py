"""The yardstick beside every benchmark: durations found by name and restated in its units."""

import pytest

from devtools.calibration import Calibration, cal_lines, calibrated, calibration, calibration_ms, duration_factor


@pytest.mark.parametrize(
    ("key", "factor"),
    [
        ("cte_ms", 1.0),
        ("ms", 1.0),
        ("server_cpu_ms_per_request", 1.0),
        ("batch_ms_per_mb", 1.0),
        ("build_seconds", 1000.0),
        ("generate_s", 1000.0),
        ("messages", None),
        ("compactions_per_s", None),
        ("estimate_mb_per_s", None),
        ("context_ratio", None),
        ("append_upkeep", None),
        ("speedup", None),
        ("cte_ms_cal", None),
        ("calibration_ms", None),
    ],
)
def test_a_duration_is_known_by_its_name(key, factor):
    assert duration_factor(key) == factor


def test_every_duration_is_restated_at_any_depth():
    figures = {
        "rows": [{"messages": 100, "cte_ms": 2.5}, {"messages": 1000, "cte_ms": 5.0}],
        "build_seconds": 1.5,
        "speedup": 3.0,
        "ok": True,
        "plan": "Index Scan",
    }
    assert calibrated(figures, unit_ms=100.0) == {
        "rows": [
            {"messages": 100, "cte_ms": 2.5, "cte_ms_cal": 0.025},
            {"messages": 1000, "cte_ms": 5.0, "cte_ms_cal": 0.05},
        ],
        "build_seconds": 1.5,
        "build_seconds_cal": 15.0,
        "speedup": 3.0,
        "ok": True,
        "plan": "Index Scan",
    }
    assert list(cal_lines(calibrated(figures, unit_ms=100.0))) == [
        "rows[0].cte_ms_cal: 0.025 cal",
        "rows[1].cte_ms_cal: 0.05 cal",
        "build_seconds_cal: 15 cal",
    ]


def test_the_unit_is_the_mean_of_the_start_and_the_end():
    reading = Calibration(load_average=0.4, start_ms=100.0, end_ms=120.0)
    assert reading.apply({"x_ms": 11.0}) == {
        "x_ms": 11.0,
        "x_ms_cal": 0.1,
        "calibration_ms": 110.0,
        "calibration_ms_start": 100.0,
        "calibration_ms_end": 120.0,
        "load_average": 0.4,
    }
    assert reading.summary() == ("calibration: 110.0 ms (start 100.0, end 120.0); load average before the run 0.40")


def test_the_yardstick_is_read_before_and_after_the_body():
    with calibration() as reading:
        assert reading.end_ms is None and reading.start_ms > 0
    assert reading.end_ms is not None and reading.end_ms > 0
    assert reading.load_average >= 0
    assert calibration_ms(runs=1) > 0
