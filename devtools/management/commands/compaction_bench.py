"""Run the benchmarks and print their figures.

    python manage.py compaction_bench                      # every scenario, scale 1
    python manage.py compaction_bench --scenario context --scenario path --scale 0.1
    python manage.py compaction_bench --json > figures.json   # tables on stderr, JSON on stdout

Each scenario is timed beside a yardstick (devtools.calibration): its JSON
carries `calibration_ms`, the load average before the run, and every timing
also in calibration units (`<name>_cal`), which are printed after its table.

The figures are also drawn into var/bench/compaction_bench.png (under VAR_DIR;
--chart PATH elsewhere, --no-chart not at all).

A figure that misses its goal is reported, not turned into a failure: the
command exits non-zero only when something goes wrong.
"""

import json
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connection
from django.test.utils import override_settings

from chatcore.throttling import expensive_calls_exempt
from devtools import benchmarks
from devtools.calibration import cal_lines, calibration

CHART_NAME = "compaction_bench.png"


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], capture_output=True, text=True, check=True, cwd=settings.BASE_DIR
    ).stdout.strip()


# The loopback model servers the scenarios start listen here.
LOOPBACK_HOSTS = ["127.0.0.1", "localhost"]


def run_identity() -> dict:
    """When and from which code the figures come (the benchmark pages show both): the UTC time and the
    commit checked out, marked when the tree has changes of its own (None outside a git checkout); and
    the database the scenarios ran on, since the same scenario on PostgreSQL and SQLite are two results."""
    try:
        commit = _git("rev-parse", "--short=12", "HEAD")
        changed = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        commit, changed = None, ""
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": f"{commit}+changes" if commit and changed else commit,
        "database": connection.vendor,
    }


def production_like() -> override_settings:
    """DEBUG off, as in production: its cursor records every statement, a cost production does not pay
    (DEBUG is on by default in development, where this command usually runs). The loopback models the
    scenarios call are then allowed as plain-http hosts, which DEBUG used to allow."""
    hosts = getattr(settings, "CHATCORE_LLM_HTTP_HOSTS", [])
    return override_settings(DEBUG=False, CHATCORE_LLM_HTTP_HOSTS=[*hosts, *LOOPBACK_HOSTS])


class Command(BaseCommand):
    help = "Benchmark the hot paths (context assembly, path loading, scanner, compaction, ...) and print figures."

    def add_arguments(self, parser):
        parser.add_argument(
            "--scenario",
            action="append",
            choices=sorted(benchmarks.REGISTRY),
            metavar="NAME",
            help=f"Scenario to run (repeatable; default: all of {', '.join(benchmarks.REGISTRY)} that are installed).",
        )
        parser.add_argument(
            "--scale", type=float, default=1.0, help="Multiplies the data sizes (default 1; e.g. 0.1 for a quick run)."
        )
        parser.add_argument(
            "--json", action="store_true", help="Print the figures as JSON on stdout (the tables go to stderr)."
        )
        parser.add_argument(
            "--chart",
            metavar="PATH",
            help="Where to draw the figures as a PNG (matplotlib; default "
            "var/bench/compaction_bench.png under VAR_DIR).",
        )
        parser.add_argument("--no-chart", action="store_true", help="Never draw a chart (overrides --chart).")
        parser.add_argument("--data", metavar="DIR", help="Where a scenario's input data lies (tokens: LoCoMo).")

    def handle(self, *args, **options):
        scale = options["scale"]
        if not scale > 0:
            raise CommandError("--scale must be a positive number.")
        available = benchmarks.scenarios_available()
        names = options["scenario"] or available
        missing = [name for name in names if name not in available]
        if missing:
            raise CommandError(f"Scenario(s) not installed: {', '.join(missing)}. Available: {', '.join(available)}.")

        tables = self.stderr if options["json"] else self.stdout
        results: dict[str, dict] = {}
        for name in names:
            started = time.monotonic()
            try:
                # Compactions back to back on purpose: not a person's calls, so not under their limit.
                with production_like(), expensive_calls_exempt(), calibration() as yardstick:
                    figures = benchmarks.scenario_run(name, scale=scale, stdout=tables, data=options["data"])
            except DatabaseError as error:
                raise CommandError(f"{name}: the database failed: {error}") from error
            results[name] = yardstick.apply(figures)
            tables.write(f"  {yardstick.summary()}\n")
            for line in cal_lines(results[name]):
                tables.write(f"    {line}\n")
            tables.write(f"  ({name}: {time.monotonic() - started:.1f} s including setup)\n\n")

        if not options["no_chart"]:
            from devtools.benchmarks.chart import chart_write

            chart = Path(options["chart"]) if options["chart"] else Path(settings.VAR_DIR) / "bench" / CHART_NAME
            path = chart_write(results=results, path=chart)
            tables.write(f"chart: {path}\n")
        if options["json"]:
            document = {"run": run_identity(), "scale": scale, "scenarios": results}
            self.stdout.write(json.dumps(document, indent=2, default=str))
