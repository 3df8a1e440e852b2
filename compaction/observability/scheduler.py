"""How the scanner's schedule is doing, for the admin's settings page: when the scan task last ran (django-q2
keeps each finished task's start and stop), how long it took, how many tasks wait in the broker's queue, and
whether the scans have stopped coming (no run for STALE_INTERVALS intervals: the cluster is down or stuck).
"""

import dataclasses
import datetime
import logging

from django.utils import timezone
from django_q.models import Schedule, Task

from compaction import conf
from compaction.scanner.selectors import compaction_settings_get

logger = logging.getLogger(__name__)

STALE_INTERVALS = 3  # one late tick is a busy cluster; three intervals without one is a stopped cluster


@dataclasses.dataclass(frozen=True)
class SchedulerHealth:
    interval_minutes: int
    scheduled: bool
    last_started: datetime.datetime | None
    last_seconds: float | None
    last_success: bool | None
    queued: int | None  # None: the broker could not be asked

    @property
    def stale(self) -> bool:
        return self.last_started is None or timezone.now() - self.last_started > datetime.timedelta(
            minutes=self.interval_minutes * STALE_INTERVALS
        )


def queue_length() -> int | None:
    from django_q.brokers import get_broker

    try:
        return int(get_broker().queue_size() or 0)
    except Exception as error:  # a broker that is down is reported as unknown, not as a broken admin page
        logger.warning("scheduler: the broker's queue length is unknown (%s)", error)
        return None


def scheduler_health() -> SchedulerHealth:
    interval = compaction_settings_get().interval_minutes
    schedule = Schedule.objects.filter(name=conf.SCAN_SCHEDULE_NAME).first()
    last = Task.objects.filter(func=schedule.func).order_by("-started").first() if schedule is not None else None
    return SchedulerHealth(
        interval_minutes=interval,
        scheduled=schedule is not None,
        last_started=last.started if last else None,
        last_seconds=last.time_taken() if last else None,
        last_success=last.success if last else None,
        queued=queue_length(),
    )
