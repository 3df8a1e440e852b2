"""Use cases of automatic compaction, one module per role; this is their public face.

- `tick`: the scheduled scan (and a worker's refill): candidates, the
  precise check (`decide`), the limits, reservations, enqueuing;
- `attempt`: the task body: claim the reservation, compact, record the
  outcome, and go on with channels the worker reserves for itself;
- `trigger`: the event trigger after a reply;
- `settings`: the settings row and the django-q2 schedule.

Every automatic attempt goes through its channel's lease row: reserved by a
tick or the trigger, claimed by the task, finished with an outcome
(`CompactionLease.Outcome`). Which channels qualify at all is one rule,
`chatcore.models.PRESSURE_WATCHED`, plus the owner's opt-out.
"""

from compaction.scanner.attempt import AutoOutcome, auto_compaction_drain, worker_warm
from compaction.scanner.decide import Action, Decision, channel_budget, channel_threshold
from compaction.scanner.settings import (
    SETTINGS_FIELDS,
    compaction_settings_update,
    compaction_settings_validate,
    scan_schedule_sync,
)
from compaction.scanner.tick import ScanReport, auto_compaction_reserve, scan_run
from compaction.scanner.trigger import reply_pressure_check

__all__ = [
    "SETTINGS_FIELDS",
    "Action",
    "AutoOutcome",
    "Decision",
    "ScanReport",
    "auto_compaction_drain",
    "auto_compaction_reserve",
    "channel_budget",
    "channel_threshold",
    "compaction_settings_update",
    "compaction_settings_validate",
    "reply_pressure_check",
    "scan_run",
    "scan_schedule_sync",
    "worker_warm",
]
