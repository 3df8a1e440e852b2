"""Create or update the scan schedule; optionally switch auto-compaction on or off."""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from compaction.scanner.selectors import compaction_settings_get
from compaction.scanner.services import compaction_settings_update, scan_schedule_sync


class Command(BaseCommand):
    help = (
        "Create the django-q2 schedule of the compaction scanner, every `interval_minutes` of the settings. "
        "Idempotent: running it again changes nothing, or updates the interval after a settings change."
    )

    def add_arguments(self, parser):
        switch = parser.add_mutually_exclusive_group()
        switch.add_argument("--enable", action="store_true", help="Also switch auto-compaction on.")
        switch.add_argument("--disable", action="store_true", help="Also switch auto-compaction off.")

    def handle(self, *args, enable=False, disable=False, **options):
        with transaction.atomic():
            if enable or disable:
                compaction_settings_update(actor=None, enabled=enable)
            settings = compaction_settings_get(lock=True)
            schedule, state = scan_schedule_sync(settings=settings, create=True)
        if schedule is None:  # create=True always leaves one
            raise CommandError("The scan schedule could not be created.")
        self.stdout.write(
            f"Scan schedule '{schedule.name}' {state}: every {schedule.minutes} minute(s), task {schedule.func}."
        )
        self.stdout.write(
            f"Auto-compaction is {'on' if settings.enabled else 'off'}"
            + ("" if settings.enabled else " (switch it on in the admin or with --enable)")
            + "."
        )
