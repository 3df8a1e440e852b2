"""bench_pages: the docs' benchmark pages written from compaction_bench's JSON."""

import io
import json

from django.core.management import call_command

from devtools import benchmarks

RUN = {
    "run": {"date": "2026-12-05 10:00 UTC", "commit": "0123456789ab"},
    "scale": 0.1,
    "scenarios": {
        "path": {
            "rows": [
                {"messages": 100, "cte_ms": 1.5, "walk_ms": 30.0, "cte_ms_cal": 0.015},
                {"messages": 1000, "cte_ms": 2.5, "walk_ms": 300.0, "cte_ms_cal": 0.025},
            ],
            "calibration_ms": 100.0,
            "calibration_ms_start": 99.0,
            "calibration_ms_end": 101.0,
            "load_average": 0.42,
        }
    },
}


def test_a_page_per_scenario_with_the_run_and_its_figures(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "path.json").write_text(json.dumps(RUN))

    call_command("bench_pages", data=str(data), out=str(tmp_path), stdout=io.StringIO())

    assert sorted(path.stem for path in tmp_path.glob("*.md")) == sorted(benchmarks.REGISTRY)
    page = (tmp_path / "path.md").read_text()
    assert "| date | 2026-12-05 10:00 UTC |" in page
    assert "| commit | `0123456789ab` |" in page
    assert "| load average before the run | 0.42 |" in page
    assert "| calibration (ms; start, end) | 100 (99, 101) |" in page
    assert "| `messages` | `cte_ms` | `walk_ms` | `cte_ms_cal` |" in page
    assert "| 1,000 | 2.5 | 300 | 0.025 |" in page
    assert "![path](charts/path.svg)" in page
    assert (tmp_path / "charts" / "path.svg").read_text().lstrip().startswith("<?xml")
    unmeasured = (tmp_path / "context.md").read_text()
    assert "No figures yet" in unmeasured
    assert "compaction_bench --scenario context --json > docs/benchmarks/data/context.json" in unmeasured


def test_the_newest_run_of_a_scenario_wins(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    older = {**RUN, "run": {"date": "2026-12-01 09:00 UTC", "commit": "older"}}
    (data / "a.json").write_text(json.dumps(RUN))
    (data / "b.json").write_text(json.dumps(older))

    call_command("bench_pages", data=str(data), out=str(tmp_path), no_chart=True, stdout=io.StringIO())

    page = (tmp_path / "path.md").read_text()
    assert "`0123456789ab`" in page
    assert "older" not in page
    assert "charts/" not in page


def test_a_scenario_measured_on_two_databases_shows_both(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    postgresql = {**RUN, "run": {**RUN["run"], "database": "postgresql"}}
    sqlite = {**RUN, "run": {"date": "2026-12-05 11:00 UTC", "commit": "fedcba987654", "database": "sqlite"}}
    (data / "path.json").write_text(json.dumps(postgresql))
    (data / "path-sqlite.json").write_text(json.dumps(sqlite))

    call_command("bench_pages", data=str(data), out=str(tmp_path), stdout=io.StringIO())

    page = (tmp_path / "path.md").read_text()
    postgresql_part, sqlite_part = page.split("## PostgreSQL", 1)[1].split("## SQLite", 1)
    assert "| commit | `0123456789ab` |" in postgresql_part and "| database | PostgreSQL |" in postgresql_part
    assert "| commit | `fedcba987654` |" in sqlite_part and "| database | SQLite |" in sqlite_part
    assert "![path](charts/path-postgresql.svg)" in postgresql_part
    assert "![path](charts/path-sqlite.svg)" in sqlite_part
    assert "### Figures" in sqlite_part and "| 1,000 | 2.5 | 300 | 0.025 |" in sqlite_part
    assert (tmp_path / "charts" / "path-sqlite.svg").exists()
