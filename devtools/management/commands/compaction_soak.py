"""Soak test: real qcluster workers, users writing, workers killed, model faults."""

from django.core.management.base import BaseCommand, CommandError

from devtools.soak import Soak, SoakConfig


class Command(BaseCommand):
    help = (
        "Run qcluster workers against the configured database while simulated users write, kill workers "
        "with SIGKILL at random moments and inject model faults; then check that nothing was lost, "
        "duplicated or left stuck. Exits non-zero if an invariant broke. Use a database of its own."
    )

    def add_arguments(self, parser):
        parser.add_argument("--channels", type=int, default=6)
        parser.add_argument("--workers", type=int, default=3, help="qcluster processes, one worker each.")
        parser.add_argument("--fault-rate", type=float, default=0.1, help="Share of model calls that fail (0-1).")
        parser.add_argument("--minutes", type=float, default=10.0, help="Duration of the load phase.")
        parser.add_argument("--users", type=int, default=3, help="Threads appending messages.")
        parser.add_argument(
            "--kill-every", type=float, default=30.0, help="Mean seconds between worker kills (0: never)."
        )
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--lease-seconds",
            type=int,
            default=40,
            help="Compaction lease of the workers (task timeout and retry are set below it).",
        )

    def handle(self, *args, **options):
        given = {name: options[name] for name in ("channels", "workers", "fault_rate", "minutes", "users")}
        counts_bad = min(given["channels"], given["workers"], given["users"]) < 1
        if counts_bad or not 0 <= given["fault_rate"] <= 1 or given["minutes"] <= 0:
            raise CommandError(
                "channels, workers and users must be at least 1, fault-rate within 0-1, minutes above 0."
            )
        lease = options["lease_seconds"]
        if lease < 20:
            raise CommandError("--lease-seconds must be at least 20 (model timeout < task timeout < retry < lease).")
        # The other timeouts nest below the lease (SoakConfig).
        config = SoakConfig(**given, kill_every=options["kill_every"], seed=options["seed"], lease=lease)
        report = Soak(config, stdout=self.stdout).run()
        for line in report.lines():
            self.stdout.write(line)
        if not report.ok:
            raise CommandError("An invariant broke during the soak (see above).")
