"""The scanner's settings (the CompactionSettings row, edited in the admin and
read afresh at every tick) and the django-q2 schedule that runs the tick."""

import datetime
import logging

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django_q.models import Schedule

from chatcore.services import audit_record
from compaction import conf
from compaction.models import CompactionSettings
from compaction.scanner.selectors import compaction_settings_get

logger = logging.getLogger("compaction.scanner")


SETTINGS_FIELDS = (
    "enabled",
    "threshold",
    "interval_minutes",
    "concurrency",
    "cooldown_minutes",
    "min_messages",
    "min_new_messages",
    "idle_minutes",
    "active_within_days",
    "batch_size",
    "hourly_budget",
    "default_context_budget",
    "recall_tool",
)

_INTEGER_RANGES = {
    "interval_minutes": (1, 1440, "The scan interval is in minutes, from 1 to 1440 (a day)."),
    "concurrency": (
        1,
        64,
        "Concurrency is the number of compactions in flight at once across the deployment, from 1 to 64.",
    ),
    "cooldown_minutes": (0, 10_080, "The cooldown is in minutes, from 0 (none) to 10080 (a week)."),
    "min_messages": (2, 100_000, "Minimum messages on the path must be from 2 to 100000."),
    "min_new_messages": (1, 100_000, "Minimum new messages since the last summary must be from 1 to 100000."),
    "idle_minutes": (0, 1440, "Idle time is in minutes, from 0 to 1440 (a day)."),
    "active_within_days": (1, 3650, "The active-within window is in days, from 1 to 3650."),
    "batch_size": (1, 10_000, "The batch size is the number of candidates examined per scan, from 1 to 10000."),
    "hourly_budget": (
        0,
        1_000_000,
        "The hourly budget is a number of automatic compactions per hour, from 0 (none) to 1000000.",
    ),
    "default_context_budget": (
        1_000,
        10_000_000,
        "The default context budget is in tokens, from 1000 to 10000000 (128000 suits most current models).",
    ),
}


def compaction_settings_validate(values: dict) -> None:
    """Every value checked with a message that says what is expected."""
    errors: dict[str, str] = {}
    threshold = values.get("threshold")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.05 <= threshold <= 0.99:
        errors["threshold"] = (
            "The threshold is a share of the context window between 0.05 and 0.99 (0.70 means compact at 70% full)."
        )
    for name, (low, high, message) in _INTEGER_RANGES.items():
        value = values.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            errors[name] = message
    if not errors and values["min_new_messages"] > values["min_messages"]:
        errors["min_new_messages"] = (
            f"Cannot exceed the minimum messages on the path ({values['min_messages']}): "
            "new messages are part of the path."
        )
    if not errors and values["idle_minutes"] >= values["active_within_days"] * 1440:
        errors["idle_minutes"] = "The idle time must be shorter than the active-within window, or no channel qualifies."
    if errors:
        raise ValidationError(errors)


@transaction.atomic
def compaction_settings_update(*, actor: User | None, **changes) -> CompactionSettings:
    unknown = set(changes) - set(SETTINGS_FIELDS)
    if unknown:
        raise ValidationError(f"Unknown setting(s): {', '.join(sorted(unknown))}.")
    settings = compaction_settings_get(lock=True)
    values = {name: getattr(settings, name) for name in SETTINGS_FIELDS} | changes
    compaction_settings_validate(values)
    changed = sorted(name for name in changes if getattr(settings, name) != values[name])
    if not changed:
        return settings
    for name in changed:
        setattr(settings, name, values[name])
    settings.save(update_fields=[*changed, "updated_at"])
    audit_record(
        actor=actor,
        action="compaction.settings",
        resource="compaction-settings:1",
        details={name: values[name] for name in changed},
        actor_label="" if actor is not None else "system:compaction",
    )
    scan_schedule_sync(settings=settings, create=False)
    logger.info("settings: %s", ", ".join(f"{name}={values[name]}" for name in changed))
    return settings


def scan_schedule_sync(*, settings: CompactionSettings, create: bool = True) -> tuple[Schedule | None, str]:
    """Make the scan schedule exist (with `create`) and run every `interval_minutes`.

    Idempotent: a second call changes nothing. When the interval changes,
    the next run moves no later than one new interval from now.
    """
    now = timezone.now()
    schedules = list(Schedule.objects.filter(name=conf.SCAN_SCHEDULE_NAME).order_by("pk"))
    schedule = schedules[0] if schedules else None
    if len(schedules) > 1:
        Schedule.objects.filter(pk__in=[extra.pk for extra in schedules[1:]]).delete()
    if schedule is None:
        if not create:
            return None, "missing"
        schedule = Schedule.objects.create(
            name=conf.SCAN_SCHEDULE_NAME,
            func=conf.SCAN_TASK,
            schedule_type=Schedule.MINUTES,
            minutes=settings.interval_minutes,
            repeats=-1,
            next_run=now,
        )
        return schedule, "created"
    wanted = {
        "func": conf.SCAN_TASK,
        "schedule_type": Schedule.MINUTES,
        "minutes": settings.interval_minutes,
        "repeats": -1,
    }
    changed = [name for name, value in wanted.items() if getattr(schedule, name) != value]
    if not changed:
        return schedule, "unchanged"
    for name, value in wanted.items():
        setattr(schedule, name, value)
    soonest = now + datetime.timedelta(minutes=settings.interval_minutes)
    if schedule.next_run is None or schedule.next_run > soonest:
        schedule.next_run = soonest
        changed.append("next_run")
    schedule.save(update_fields=changed)
    return schedule, "updated"
