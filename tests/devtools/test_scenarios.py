"""Every benchmark scenario runs end to end at a tiny scale on the suite's database.

No goal is asserted (speed goals live in the command's output); what is
checked is that each scenario still runs against the current schema and
returns its figures with the yardstick beside them, so that a change which
breaks one (a new NOT NULL column its raw SQL does not fill) fails here
rather than on the day of a measurement. The scenarios that start servers
and workers are marked slow.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from devtools import benchmarks
from devtools.benchmarks import serving
from devtools.processes import database_url

ROOT = Path(__file__).resolve().parents[2]

# Scenarios whose tiny runs are in their own modules (test_bench_command.py, test_bench_tokens.py).
COVERED_ELSEWHERE = {"context", "path", "search", "tokens", "compaction"}


def run_scenario(name: str, scale: float, var_dir: Path) -> tuple[dict, str]:
    """The command as a user runs it, in a process of its own: the scenarios open databases of their own
    beside the default one, which a test's connections may not reach. On PostgreSQL the default is the
    suite's test database (they are made on its server); on SQLite a file of the test's."""
    if connection.vendor == "postgresql":
        url = database_url(connection.settings_dict)
    else:
        url = f"sqlite:///{var_dir / 'default.sqlite3'}"
    done = subprocess.run(
        [sys.executable, "manage.py", "compaction_bench", "--scenario", name, "--scale", str(scale), "--json"]
        + ["--no-chart"],
        cwd=ROOT,
        env={**os.environ, "VAR_DIR": str(var_dir), "DATABASE_URL": url},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)["scenarios"][name], done.stderr


def assert_calibrated(figures: dict, table: str) -> None:
    assert figures["calibration_ms"] > 0 and figures["load_average"] >= 0
    assert "calibration: " in table


def test_every_scenario_is_run_by_a_tiny_test():
    tested = COVERED_ELSEWHERE | {"scanner", "dashboard", "throughput", "serving", "gateway"}
    assert set(benchmarks.REGISTRY) == tested


def test_scanner(db, tmp_path):
    figures, table = run_scenario("scanner", 0.0001, tmp_path)
    assert_calibrated(figures, table)
    if connection.vendor != "postgresql":
        assert figures["skipped"] == "needs PostgreSQL"
        return
    for size in ("small", "large"):
        run = figures[size]
        assert run["ours_candidates"] == run["baseline_candidates"] == 50
        assert "using channel_pressure_idx" in run["plan"]
    assert figures["large"]["messages"] > figures["small"]["messages"]


def test_dashboard(db, tmp_path):
    figures, table = run_scenario("dashboard", 0.001, tmp_path)
    assert_calibrated(figures, table)
    assert figures["usage_rows"] == 1_000 and figures["database"] == connection.vendor
    assert figures["summaries"] == 100
    ranges = [figures[name] for name in ("last 30 days", "last 365 days", "365 days, persona + model")]
    assert len({r["queries"] for r in ranges}) == 1 and all(r["ms"] > 0 for r in ranges)


@pytest.mark.slow
def test_throughput(db, tmp_path):
    figures, table = run_scenario("throughput", 0.01, tmp_path)
    assert_calibrated(figures, table)
    assert [row["concurrency"] for row in figures["rounds"]] == [1, 2, 4]
    for row in figures["rounds"]:
        assert row["compacted"] == row["channels"] == 8 and row["summaries_per_channel"] == [1]


@pytest.mark.slow
def test_serving(db, tmp_path):
    figures, table = run_scenario("serving", 0.01, tmp_path)
    assert_calibrated(figures, table)
    assert serving.concurrencies_for(0.01) == [2, 5]
    assert serving.concurrencies_for(1) == [50, 200, 500]
    assert [(row["server"], row["concurrency"]) for row in figures["rows"]] == [
        ("uvicorn", 2),
        ("uvicorn", 5),
        ("runserver", 2),
        ("runserver", 5),
    ]
    for row in figures["rows"]:
        assert row["errors"] == row["http_500"] == 0, row["error_examples"]
        assert row["server_cpu_ms_per_request"] > 0
        if connection.vendor == "postgresql" and row["server"] == "uvicorn" and row["requests"]:
            assert row["db_cpu_ms_per_request"] > 0
        elif connection.vendor != "postgresql":
            assert row["db_cpu_ms_per_request"] is None
    # A round of a few seconds on a busy machine may see no reply end inside its window; each server's do.
    for server in ("uvicorn", "runserver"):
        assert sum(row["requests"] for row in figures["rows"] if row["server"] == server) > 0


@pytest.mark.slow
def test_gateway(db, tmp_path):
    figures, table = run_scenario("gateway", 0.0001, tmp_path)
    assert_calibrated(figures, table)
    assert [row["messages"] for row in figures["rows"]] == [100]
    for row in figures["rows"]:
        assert row["floor_ms"] > 0 and row["upstream_tokens_max"] <= figures["window"]
    assert not list(tmp_path.glob("compaction_bench_gw*"))
