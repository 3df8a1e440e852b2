"""Run one scanner tick now and print its candidates and decisions."""

import json as _json

from django.core.management.base import BaseCommand

from compaction.scanner.services import scan_run


class Command(BaseCommand):
    help = "Run one tick of the automatic compaction scanner and print the candidates and the decision on each."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Decide but reserve and enqueue nothing.")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")

    def handle(self, *args, dry_run=False, json=False, **options):
        report = scan_run(dry_run=dry_run, source="command")
        if json:
            self.stdout.write(_json.dumps(report.as_dict(), indent=2, default=str))
            return
        if not report.enabled:
            self.stdout.write(
                "Auto-compaction is off: nothing scanned. Switch it on in the admin "
                "(Compaction › Auto-compaction settings) or with `setup_schedules --enable`."
            )
            return
        self.stdout.write(
            f"{len(report.decisions)} candidate(s) with pressure >= {report.coarse_bound:.2f}; "
            f"{report.in_flight} in flight of {report.concurrency}; "
            f"{report.budget_used} of {report.hourly_budget} hourly budget used; {report.duration_ms:.1f} ms"
            + (" (dry run: nothing reserved or enqueued)" if dry_run else "")
        )
        header = f"{'channel':>8}  {'ratio':>6}  {'thresh':>6}  {'tokens':>9}  {'budget':>9}  {'new':>5}  decision"
        self.stdout.write(header)
        for d in report.decisions:
            verdict = {"enqueue": "enqueued", "would_enqueue": "would enqueue"}.get(d.action, f"skip: {d.detail}")
            self.stdout.write(
                f"{d.channel_id:>8}  {d.ratio:>6.2f}  {d.threshold:>6.2f}  {d.tokens:>9,}  "
                f"{d.budget:>9,}  {d.new_messages:>5}  {verdict}"
            )
