"""Write the docs site's benchmark pages from the benchmark's JSON.

    python manage.py compaction_bench --scenario context --json > docs/benchmarks/data/context.json
    python manage.py bench_pages          # docs/benchmarks/<scenario>.md and charts/<scenario>.svg

Every file in docs/benchmarks/data/ is read; each scenario's page shows its newest figures.
"""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from devtools.benchmarks.pages import pages_write

DOCS = Path(settings.BASE_DIR) / "docs" / "benchmarks"


class Command(BaseCommand):
    help = "Write docs/benchmarks/<scenario>.md (figures, chart, date, commit, load, calibration) from the JSON."

    def add_arguments(self, parser):
        parser.add_argument("--data", default=str(DOCS / "data"), help="The folder of compaction_bench --json files.")
        parser.add_argument("--out", default=str(DOCS), help="Where the pages go (charts in its charts/).")
        parser.add_argument("--no-chart", action="store_true", help="Tables only, no SVG chart.")

    def handle(self, *args, **options):
        for path in pages_write(
            data_dir=Path(options["data"]), pages_dir=Path(options["out"]), charts=not options["no_chart"]
        ):
            self.stdout.write(str(path))
