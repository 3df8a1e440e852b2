"""The benchmark pages of the docs site, written from the JSON of `compaction_bench --json`.

One page per installed scenario (docs/benchmarks/<scenario>.md): what it measures (its module's
docstring), when and where it ran (date, commit, database, scale, load average, the calibration
yardstick), its figures as tables, and a chart (an SVG drawn by the benchmark's own chart code) when
matplotlib is installed. A scenario measured on several databases shows the newest run on each, in a
section of its own. A scenario no data file holds gets a page that says how to measure it. Pages are
generated, never edited: `manage.py bench_pages` writes them again from docs/benchmarks/data/.
"""

from __future__ import annotations

import inspect
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devtools import benchmarks
from devtools.calibration import CAL_SUFFIX

# The run's own fields (devtools.calibration's and compaction_bench's), shown in the page's header.
RUN_FIELDS = ("calibration_ms", "calibration_ms_start", "calibration_ms_end", "load_average")
# How the pages name the databases a run records (compaction_bench's run identity).
DATABASE_NAMES = {"postgresql": "PostgreSQL", "sqlite": "SQLite"}
# Columns of one table at most: a wider table is unreadable on a page (the JSON keeps the rest).
MAX_COLUMNS = 9


@dataclass
class Measured:
    """One scenario's figures and the run they came from."""

    figures: dict[str, Any]
    source: str
    run: dict[str, Any] = field(default_factory=dict)
    scale: float | None = None

    @property
    def database(self) -> str | None:
        return self.run.get("database")


def measured_from(data_dir: Path) -> dict[str, list[Measured]]:
    """Each scenario's newest figures on each database among the data files (the run dated latest),
    PostgreSQL's first: a run on SQLite does not hide the one on PostgreSQL, nor the reverse."""
    found: dict[str, dict[str | None, Measured]] = {}
    for path in sorted(data_dir.glob("*.json")):
        document = json.loads(path.read_text())
        run = document.get("run", {})
        for name, figures in document.get("scenarios", {}).items():
            if not isinstance(figures, dict):
                continue
            candidate = Measured(figures=figures, source=path.name, run=run, scale=document.get("scale"))
            runs = found.setdefault(name, {})
            current = runs.get(candidate.database)
            if current is None or str(run.get("date", "")) >= str(current.run.get("date", "")):
                runs[candidate.database] = candidate
    return {name: sorted(runs.values(), key=lambda m: m.database or "") for name, runs in found.items()}


def _value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return " ".join(str(value).split()).replace("|", "\\|")


def _table(rows: list[dict[str, Any]]) -> list[str]:
    columns: list[str] = []
    for row in rows:
        columns += [key for key in row if key not in columns and not isinstance(row[key], (dict, list))]
    plain = [key for key in columns if not key.endswith(CAL_SUFFIX)]
    shown = (plain + [key for key in columns if key.endswith(CAL_SUFFIX)])[:MAX_COLUMNS]
    lines = ["| " + " | ".join(f"`{key}`" for key in shown) + " |", "|" + "---|" * len(shown)]
    lines += ["| " + " | ".join(_value(row.get(key, "")) for key in shown) + " |" for row in rows]
    return lines


def _figures(figures: dict[str, Any], heading: str = "##") -> list[str]:
    """Scalars as one table, lists of rows as tables of their own, nested objects as sub-sections."""
    scalars = {
        key: value for key, value in figures.items() if key not in RUN_FIELDS and not isinstance(value, (dict, list))
    }
    lines: list[str] = []
    if scalars:
        lines += ["| figure | value |", "|---|---|"]
        lines += [f"| `{key}` | {_value(value)} |" for key, value in scalars.items()]
        lines.append("")
    for key, value in figures.items():
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            lines += [f"{heading} `{key}`", "", *_table(value), ""]
        elif isinstance(value, list) and value:
            lines += [f"{heading} `{key}`", "", ", ".join(_value(item) for item in value), ""]
        elif isinstance(value, dict) and value:
            lines += [f"{heading} `{key}`", "", *_figures(value, heading + "#")]
    return lines


def _about(name: str) -> str:
    """What the scenario measures: the first paragraph of its module's docstring."""
    doc = inspect.getdoc(benchmarks.scenario_module(name)) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _chart(name: str, figures: dict[str, Any], path: Path) -> Path | None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return None
    from devtools.benchmarks.chart import chart_write

    return chart_write(results={name: figures}, path=path)


def _run_text(name: str, measured: Measured, *, chart: Path | None, heading: str) -> list[str]:
    """One run: where and when it ran, its chart and its figures."""
    run, figures = measured.run, measured.figures
    lines = [
        "| run | |",
        "|---|---|",
        f"| date | {run.get('date', 'not recorded')} |",
        f"| commit | `{run.get('commit', 'not recorded')}` |",
        f"| database | {DATABASE_NAMES.get(measured.database or '', measured.database or 'not recorded')} |",
        f"| scale | {_value(measured.scale)} |",
        f"| load average before the run | {_value(figures.get('load_average'))} |",
        f"| calibration (ms; start, end) | {_value(figures.get('calibration_ms'))} "
        f"({_value(figures.get('calibration_ms_start'))}, {_value(figures.get('calibration_ms_end'))}) |",
        f"| data | `docs/benchmarks/data/{measured.source}` |",
        "",
    ]
    if chart is not None:
        lines += [f"![{name}](charts/{chart.name})", ""]
    return lines + [f"{heading} Figures", "", *_figures(figures, heading + "#")]


def page_text(name: str, measured: list[Measured], *, charts: list[Path | None]) -> str:
    lines = [f"# {name}", "", "*Generated by `python manage.py bench_pages`; do not edit.*", "", _about(name), ""]
    if not measured:
        lines += [
            "No figures yet. Measure on an idle machine, then write the pages again:",
            "",
            "```bash",
            f"python manage.py compaction_bench --scenario {name} --json > docs/benchmarks/data/{name}.json",
            "python manage.py bench_pages",
            "```",
            "",
        ]
        return "\n".join(lines)
    lines += [
        f"Figures ending in `{CAL_SUFFIX}` are in calibration units: the milliseconds divided by the "
        "calibration, so that runs on a fast day and a slow one compare.",
        "",
    ]
    if len(measured) == 1:
        return "\n".join(lines + _run_text(name, measured[0], chart=charts[0], heading="##"))
    for each, chart in zip(measured, charts, strict=True):
        title = DATABASE_NAMES.get(each.database or "", each.database or "Database not recorded")
        lines += [f"## {title}", "", *_run_text(name, each, chart=chart, heading="###")]
    return "\n".join(lines)


def _chart_path(name: str, measured: Measured, *, several: bool, charts_dir: Path) -> Path:
    """One chart per page, or one per database when the page shows several."""
    return charts_dir / (f"{name}-{measured.database}.svg" if several and measured.database else f"{name}.svg")


def pages_write(*, data_dir: Path, pages_dir: Path, charts: bool = True) -> list[Path]:
    """Write every scenario's page (and charts) from the data files; the paths written."""
    measured = measured_from(data_dir)
    written = []
    for name in benchmarks.REGISTRY:
        runs = measured.get(name, [])
        drawn = [
            _chart(name, each.figures, _chart_path(name, each, several=len(runs) > 1, charts_dir=pages_dir / "charts"))
            if charts
            else None
            for each in runs
        ]
        path = pages_dir / f"{name}.md"
        path.write_text(page_text(name, runs, charts=drawn).rstrip("\n") + "\n")
        written.append(path)
    return written
