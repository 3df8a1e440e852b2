"""Use cases of automatic compaction: the tick, the event trigger, the task body,
the settings and the schedule.

Every automatic attempt goes through the lease row of its channel:

1. reserve (in the tick's or the event's transaction, under the settings
   row lock): `last_auto_at` = now, `attempt_leaf_id` = the owner's leaf;
   the task is enqueued after commit with that time as its ticket (a worker
   refilling the slot it just freed keeps one reservation for itself);
2. claim (the task starts): a conditional UPDATE that succeeds only while
   the reservation is the latest and unfinished, so a duplicate delivery by
   the broker, or a task that waited so long that its channel was reserved
   again, does nothing;
3. compact: `channel_compact(trigger="auto")`, which takes the lease itself;
4. finish: `last_finished_at`, `last_outcome`, `last_error`, failures.

An attempt reserved or claimed and unfinished holds one of the
`concurrency` slots until it finishes or its lease time passes; after that
it is abandoned (its worker died or was timed out) and the channel may be
tried again.
"""

import dataclasses
import datetime
import logging
import time
from functools import partial

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django_q.models import Schedule
from django_q.tasks import async_task

from chatcore.errors import Conflict, ModelCallFailed, Unprocessable
from chatcore.models import Channel
from chatcore.services import audit_record
from compaction import conf
from compaction.models import CompactionLease, CompactionSettings
from compaction.scanner import selectors
from compaction.scanner.selectors import (
    ABANDONED,
    BUSY,
    COOLDOWN_OUTCOMES,
    DONE,
    FAILED,
    INEFFECTIVE,
    NO_LOOP_OUTCOMES,
    NOTHING,
    SKIPPED,
    compaction_settings_get,
)
from compaction.services import channel_compact

logger = logging.getLogger("compaction.scanner")

ENQUEUE = "enqueue"
STALE = "stale"
WOULD_ENQUEUE = "would_enqueue"
SKIP = "skip"


@dataclasses.dataclass
class Decision:
    channel_id: int
    owner_id: int
    action: str = SKIP
    reason: str = ""
    detail: str = ""
    ratio: float = 0.0
    threshold: float = 0.0
    tokens: int = 0
    budget: int = 0
    messages: int = 0
    new_messages: int = 0
    leaf_id: int | None = None
    abandoned: bool = False
    ticket: str | None = None
    taken: bool = False

    def as_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["ratio"] = round(self.ratio, 4)
        return data

    def log_line(self) -> str:
        pressure = (
            f"{self.ratio:.0%} of {self.budget:,} tokens, threshold {self.threshold:.0%}; "
            f"{self.new_messages} messages since the summary, {self.messages} on the path"
        )
        if self.action == SKIP:
            return f"channel {self.channel_id} skipped ({self.detail or self.reason}) [{pressure}]"
        verb = (
            "taken by this worker"
            if self.taken
            else "enqueued"
            if self.action == ENQUEUE
            else "would be enqueued (dry run)"
        )
        extra = ", retrying an abandoned attempt" if self.abandoned else ""
        return f"channel {self.channel_id} qualifies ({pressure}{extra}): {verb}"


@dataclasses.dataclass
class ScanReport:
    source: str
    dry_run: bool
    enabled: bool
    threshold: float = 0.0
    coarse_bound: float = 0.0
    concurrency: int = 0
    in_flight: int = 0
    budget_used: int = 0
    hourly_budget: int = 0
    decisions: list[Decision] = dataclasses.field(default_factory=list)
    duration_ms: float = 0.0

    @property
    def enqueued(self) -> list[int]:
        return [d.channel_id for d in self.decisions if d.action in (ENQUEUE, WOULD_ENQUEUE) and not d.taken]

    @property
    def taken(self) -> Decision | None:
        """The reservation the scanning worker keeps for itself (see `auto_compaction_drain`)."""
        return next((d for d in self.decisions if d.taken), None)

    def as_dict(self) -> dict:
        data = {
            name: getattr(self, name)
            for name in (
                "source",
                "dry_run",
                "enabled",
                "threshold",
                "coarse_bound",
                "concurrency",
                "in_flight",
                "budget_used",
                "hourly_budget",
            )
        }
        data["duration_ms"] = round(self.duration_ms, 2)
        data["candidates"] = len(self.decisions)
        data["enqueued"] = self.enqueued
        data["decisions"] = [d.as_dict() for d in self.decisions]
        return data


@dataclasses.dataclass
class AutoOutcome:
    channel_id: int
    outcome: str
    detail: str = ""
    tokens_before: int = 0
    tokens_after: int = 0


def channel_threshold(*, channel: Channel, settings: CompactionSettings) -> float:
    own = (channel.settings or {}).get("compaction_threshold")
    if own is None:
        return settings.threshold
    return max(float(own), conf.MIN_CHANNEL_THRESHOLD)


def channel_budget(*, channel: Channel, settings: CompactionSettings, utility_window: int) -> int:
    """The channel's model's window, else the utility model's, else the settings' default."""
    if channel.model_id is not None and channel.model.context_window:
        return channel.model.context_window
    return utility_window or settings.default_context_budget


def _minutes(delta: datetime.timedelta) -> str:
    return f"{max(1, int(delta.total_seconds() // 60 + (1 if delta.total_seconds() % 60 else 0)))}m"


def _decide(
    *,
    channel: Channel,
    lease: CompactionLease | None,
    leaf: tuple[int, int] | None,
    settings: CompactionSettings,
    utility_window: int,
    now: datetime.datetime,
) -> Decision:
    """The precise check of one candidate, on data already loaded: no query."""
    budget = channel_budget(channel=channel, settings=settings, utility_window=utility_window)
    decision = Decision(
        channel_id=channel.pk,
        owner_id=channel.owner_id,
        tokens=channel.context_tokens,
        budget=budget,
        ratio=channel.context_tokens / budget,
        threshold=channel_threshold(channel=channel, settings=settings),
        new_messages=channel.context_messages,
        leaf_id=leaf[0] if leaf else None,
        messages=leaf[1] + 1 if leaf else 0,
    )

    def skip(reason: str, detail: str = "") -> Decision:
        decision.reason, decision.detail = reason, detail or reason.replace("_", " ")
        return decision

    if (channel.settings or {}).get("auto_compaction") is False:
        return skip("opted_out", "opted out")
    if leaf is None:
        return skip("no_path", "the owner has no active path")
    if decision.messages < settings.min_messages:
        return skip("too_few_messages", f"{decision.messages} messages on the path < {settings.min_messages}")
    if decision.new_messages < settings.min_new_messages:
        return skip(
            "too_few_new_messages", f"{decision.new_messages} messages since the summary < {settings.min_new_messages}"
        )
    if decision.ratio < decision.threshold:
        return skip("below_threshold", f"below threshold, {decision.ratio:.0%} < {decision.threshold:.0%}")
    if lease is not None:
        if lease.expires_at is not None and lease.expires_at > now:
            return skip(
                "lease_held",
                f"lease held by {lease.holder or 'another worker'} "
                f"for {int((lease.expires_at - now).total_seconds())}s more",
            )
        unfinished = lease.last_auto_at is not None and (
            lease.last_finished_at is None or lease.last_finished_at < lease.last_auto_at
        )
        cooldown_left = (
            lease.last_auto_at + datetime.timedelta(minutes=settings.cooldown_minutes) - now
            if lease.last_auto_at is not None
            else datetime.timedelta(0)
        )
        if unfinished:
            if lease.last_auto_at > now - datetime.timedelta(seconds=conf.LEASE_SECONDS):
                return skip("in_flight", "an automatic compaction is already queued or running")
            decision.abandoned = True
        elif cooldown_left > datetime.timedelta(0):
            if lease.last_outcome in COOLDOWN_OUTCOMES:
                return skip("cooldown", f"cooldown, {_minutes(cooldown_left)} remaining")
            if lease.last_outcome in NO_LOOP_OUTCOMES and lease.attempt_leaf_id == decision.leaf_id:
                return skip(
                    "no_loop",
                    f"last attempt {lease.last_outcome}, no new messages since; "
                    f"{_minutes(cooldown_left)} of cooldown remaining",
                )
    decision.action = ENQUEUE
    return decision


def _reserve(*, decision: Decision, lease: CompactionLease | None, now: datetime.datetime) -> bool:
    """Mark the channel's attempt as reserved; False if someone changed the row meanwhile."""
    values = {"last_auto_at": now, "attempt_leaf_id": decision.leaf_id}
    if decision.abandoned:
        values.update(
            last_outcome=ABANDONED,
            failure_count=F("failure_count") + 1,
            last_error="The previous automatic attempt never reported back (worker killed or timed out).",
        )
    if lease is None:
        try:
            with transaction.atomic():
                CompactionLease.objects.create(channel_id=decision.channel_id, **values)
            return True
        except IntegrityError:
            return False
    free = CompactionLease.objects.filter(pk=decision.channel_id, last_auto_at=lease.last_auto_at).exclude(
        expires_at__gt=now
    )
    return free.update(**values) == 1


def _enqueue(*, channel_id: int, ticket: str) -> None:
    transaction.on_commit(
        partial(async_task, conf.AUTO_COMPACT_TASK, channel_id, ticket, task_name=f"auto-compact-{channel_id}-{ticket}")
    )


def _evaluate(
    *,
    channels: list[Channel],
    settings: CompactionSettings,
    now: datetime.datetime,
    dry_run: bool,
    report: ScanReport,
    take: int = 0,
    until_full: bool = False,
) -> None:
    """Precise check of the candidates, then the budget and concurrency limits, then reservations.

    `take` reservations are kept for the caller instead of being enqueued.
    `until_full` stops at the first candidate that could no longer get a
    slot: a refill runs after every compaction, and judging and logging a
    whole batch of candidates that must wait anyway would keep the slot idle.
    """
    in_flight, failed = selectors.auto_attempt_counts(now=now)
    used = failed + selectors.auto_summaries_count(since=now - datetime.timedelta(hours=1))
    report.in_flight, report.budget_used, report.hourly_budget = in_flight, used, settings.hourly_budget
    free = max(0, settings.concurrency - in_flight)
    budget_left = max(0, settings.hourly_budget - used)
    if until_full and not (free and budget_left):
        return
    ids = [channel.pk for channel in channels]
    leases = selectors.leases_by_channel(channel_ids=ids)
    leaves = selectors.owner_leaves(channels=channels)
    utility_window = selectors.utility_context_window()
    for channel in channels:
        if until_full and not (free and budget_left):
            break
        decision = _decide(
            channel=channel,
            lease=leases.get(channel.pk),
            leaf=leaves.get(channel.pk),
            settings=settings,
            utility_window=utility_window,
            now=now,
        )
        if decision.action == ENQUEUE:
            if budget_left <= 0:
                decision.action, decision.reason = SKIP, "budget"
                decision.detail = f"budget, {used} of {settings.hourly_budget} automatic compactions this hour"
            elif free <= 0:
                decision.action, decision.reason = SKIP, "concurrency"
                decision.detail = f"concurrency, {settings.concurrency} already in flight"
            elif dry_run:
                decision.action = WOULD_ENQUEUE
                free, budget_left = free - 1, budget_left - 1
            elif _reserve(decision=decision, lease=leases.get(channel.pk), now=now):
                decision.ticket = now.isoformat()
                if take > 0:
                    decision.taken, take = True, take - 1
                else:
                    _enqueue(channel_id=channel.pk, ticket=decision.ticket)
                free, budget_left = free - 1, budget_left - 1
            else:
                decision.action, decision.reason = SKIP, "taken"
                decision.detail = "reserved by another scan a moment ago"
        report.decisions.append(decision)
        if decision.action != SKIP or not until_full:
            logger.info("%s: %s", report.source, decision.log_line())


def scan_run(
    *, dry_run: bool = False, source: str = "scan", now: datetime.datetime | None = None, take: int = 0
) -> ScanReport:
    """One tick of the scanner. Its query count is constant: it does not grow with
    the messages, nor with the candidates (only with the channels enqueued).

    A refill (the tick a worker runs when it finishes) only fills the free
    slots and may `take` one reservation for itself; a scheduled tick
    judges and logs every candidate, for the operator."""
    started = time.monotonic()
    with transaction.atomic():
        settings = compaction_settings_get(lock=not dry_run)
        now = now or timezone.now()
        report = ScanReport(
            source=source,
            dry_run=dry_run,
            enabled=settings.enabled,
            threshold=settings.threshold,
            coarse_bound=selectors.coarse_bound(settings=settings),
            concurrency=settings.concurrency,
        )
        if not dry_run and source != "refill":
            scan_schedule_sync(settings=settings, create=False)
        if settings.enabled:
            channels = list(selectors.scan_candidates(settings=settings, now=now))
            _evaluate(
                channels=channels,
                settings=settings,
                now=now,
                dry_run=dry_run,
                report=report,
                take=take,
                until_full=source == "refill",
            )
    report.duration_ms = (time.monotonic() - started) * 1000
    if not settings.enabled:
        logger.info("%s: tick: auto-compaction is off, nothing done", source)
    else:
        logger.info(
            "%s: tick%s: %d candidates (pressure >= %.2f), %d enqueued%s, %d skipped; "
            "%d in flight of %d; %d of %d hourly budget used; %.1f ms",
            source,
            " (dry run)" if dry_run else "",
            len(report.decisions),
            report.coarse_bound,
            len(report.enqueued),
            ", 1 taken by this worker" if report.taken else "",
            sum(d.action == SKIP for d in report.decisions),
            report.in_flight,
            settings.concurrency,
            report.budget_used,
            settings.hourly_budget,
            report.duration_ms,
        )
    return report


def auto_compaction_reserve(*, channel_id: int, source: str = "event") -> Decision:
    """The precise check and reservation of one channel, outside a scan (the event trigger)."""
    with transaction.atomic():
        settings = compaction_settings_get(lock=True)
        now = timezone.now()
        channel = (
            Channel.objects.select_related("model")
            .filter(pk=channel_id, type=Channel.Type.DIRECT, deleted_at__isnull=True, archived=False, ephemeral=False)
            .first()
        )
        if not settings.enabled or channel is None:
            decision = Decision(
                channel_id=channel_id,
                owner_id=channel.owner_id if channel else 0,
                reason="off" if not settings.enabled else "not_eligible",
                detail="auto-compaction is off"
                if not settings.enabled
                else "deleted, archived, ephemeral or not a direct channel",
            )
            logger.info("%s: %s", source, decision.log_line())
            return decision
        report = ScanReport(source=source, dry_run=False, enabled=True)
        _evaluate(channels=[channel], settings=settings, now=now, dry_run=False, report=report)
        return report.decisions[0]


def _claim(*, channel_id: int, ticket: datetime.datetime) -> bool:
    """The task takes its reservation; False for a stale or duplicate delivery."""
    return (
        CompactionLease.objects.filter(pk=channel_id, last_auto_at=ticket)
        .filter(selectors.unfinished_q())
        .update(last_auto_at=timezone.now())
        == 1
    )


def _finish(*, outcome: AutoOutcome) -> None:
    """Record how the attempt ended. The service leaves automatic attempts to us:
    a failure counts and keeps its error; a written summary clears both."""
    values = {
        "last_finished_at": timezone.now(),
        "last_outcome": outcome.outcome,
        "last_error": outcome.detail if outcome.outcome in NO_LOOP_OUTCOMES else "",
    }
    if outcome.outcome == FAILED:
        values["failure_count"] = F("failure_count") + 1
    elif outcome.outcome in COOLDOWN_OUTCOMES:
        values["failure_count"] = 0
    CompactionLease.objects.filter(pk=outcome.channel_id).update(**values)


def _attempt(*, channel_id: int, ticket: str | None) -> AutoOutcome:
    """Claim, compact, record the outcome of one reserved (or event-triggered) channel."""
    if ticket is None:
        decision = auto_compaction_reserve(channel_id=channel_id)
        if decision.action != ENQUEUE:
            return AutoOutcome(channel_id, SKIPPED, decision.detail)
        ticket = decision.ticket
    if not _claim(channel_id=channel_id, ticket=parse_datetime(ticket)):
        logger.info(
            "auto: channel %s: reservation %s is stale or was already handled; nothing to do", channel_id, ticket
        )
        return AutoOutcome(channel_id, STALE, "stale or duplicate delivery")
    outcome = _compact(channel_id=channel_id)
    _finish(outcome=outcome)
    return outcome


def auto_compaction_drain(
    *, channel_id: int, ticket: str | None = None, seconds: float | None = None
) -> list[AutoOutcome]:
    """The body of the automatic compaction task: the reserved channel, then
    the next ones this worker reserves for itself while `seconds` last.

    Expected failures (lease held, nothing to compact, model failure) are
    outcomes, not exceptions, so the broker never retries them: the scanner
    decides when to try again (no-loop rule, cooldown).

    After each compaction the worker refills the slot it frees. Keeping the
    next reservation instead of enqueuing it saves a broker round trip per
    compaction, during which the slot would carry no model call. A reservation
    taken by a worker that then dies is like a lost task: unfinished past the
    lease time, it is abandoned and the scanner offers the channel again.
    """
    deadline = time.monotonic() + (conf.DRAIN_SECONDS if seconds is None else seconds)
    outcomes = [_attempt(channel_id=channel_id, ticket=ticket)]
    while conf.REFILL_ON_FINISH and outcomes[-1].outcome not in (BUSY, SKIPPED, STALE):
        # What went wrong from here on is this worker's extra work: the compactions already
        # finished stand, the next scheduled tick refills the slot, and the broker must not
        # retry a task whose own channel is done.
        try:
            taken = scan_run(source="refill", take=1 if time.monotonic() < deadline else 0).taken
        except Exception:
            logger.exception(
                "refill: the tick after channel %s failed; the next tick refills the slot", outcomes[-1].channel_id
            )
            break
        if taken is None:
            break
        try:
            outcomes.append(_attempt(channel_id=taken.channel_id, ticket=taken.ticket))
        except Exception as error:
            logger.exception("auto: channel %s, taken by this worker, raised", taken.channel_id)
            outcome = AutoOutcome(taken.channel_id, FAILED, f"{type(error).__name__}: {error}")
            outcomes.append(outcome)
            try:
                _finish(outcome=outcome)
            except Exception:  # left unfinished: abandoned after the lease time, like a lost task
                logger.exception("auto: channel %s: the failure could not be recorded", taken.channel_id)
            break
    return outcomes


def _compact(*, channel_id: int) -> AutoOutcome:
    settings = compaction_settings_get()
    channel = Channel.objects.select_related("owner", "model").filter(pk=channel_id).first()
    if not settings.enabled:
        return AutoOutcome(channel_id, SKIPPED, "auto-compaction was turned off")
    if channel is None or channel.deleted_at or channel.archived or channel.ephemeral:
        return AutoOutcome(channel_id, SKIPPED, "the channel is gone, archived or ephemeral")
    if (channel.settings or {}).get("auto_compaction") is False:
        return AutoOutcome(channel_id, SKIPPED, "the channel opted out")
    budget = channel_budget(channel=channel, settings=settings, utility_window=selectors.utility_context_window())
    threshold = channel_threshold(channel=channel, settings=settings)
    logger.info(
        "auto: compacting channel %s for user %s (trigger=auto, %d tokens, %.0f%% of %d)",
        channel_id,
        channel.owner_id,
        channel.context_tokens,
        100 * channel.context_tokens / budget,
        budget,
    )
    try:
        result = channel_compact(channel=channel, actor=channel.owner, trigger="auto")
    except Conflict as error:
        outcome = AutoOutcome(channel_id, BUSY if error.code == "in_progress" else FAILED, error.message)
    except Unprocessable as error:
        outcome = AutoOutcome(channel_id, NOTHING, error.message)
    except ModelCallFailed as error:
        outcome = AutoOutcome(channel_id, FAILED, error.message)
    except Exception as error:  # recorded and logged; a broker retry would not help
        logger.exception("auto: channel %s: compaction raised", channel_id)
        outcome = AutoOutcome(channel_id, FAILED, f"{type(error).__name__}: {error}")
    else:
        under = result.tokens_after / budget < threshold
        outcome = AutoOutcome(
            channel_id,
            DONE if under else INEFFECTIVE,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            detail=f"{result.summarized_count} messages summarised by {result.model}",
        )
        logger.info(
            "auto: channel %s done: %s tokens -> %s (%.0f%% -> %.0f%% of %d)%s; %s",
            channel_id,
            f"{result.tokens_before:,}",
            f"{result.tokens_after:,}",
            100 * result.tokens_before / budget,
            100 * result.tokens_after / budget,
            budget,
            "" if under else ", still over the threshold",
            outcome.detail,
        )
        return outcome
    logger.warning("auto: channel %s %s: %s", channel_id, outcome.outcome, outcome.detail)
    return outcome


def worker_warm() -> None:
    """Load the model client library, the tokenizer tables and the secret
    detectors once in the qcluster parent, before it forks its workers:
    otherwise every worker's first compaction spends seconds on them, inside
    its task timeout and while it holds a concurrency slot."""
    import openai  # noqa: F401

    from chatcore.tokens import count_tokens
    from compaction.redaction import redact

    count_tokens("warm")
    redact("warm up the detectors: api_key = 'not-a-secret'")


def reply_pressure_check(*, channel: Channel, input_tokens: int | None) -> bool:
    """After a reply: enqueue an automatic compaction when the prompt the model
    just read was over the channel's threshold. Cheap; the task does the rest."""
    if channel.ephemeral or channel.archived or channel.deleted_at or channel.type != Channel.Type.DIRECT:
        return False
    if (channel.settings or {}).get("auto_compaction") is False or not input_tokens:
        return False
    settings = compaction_settings_get()
    if not settings.enabled:
        return False
    declared = channel.model_id is not None and channel.model.context_window
    budget = channel_budget(
        channel=channel, settings=settings, utility_window=0 if declared else selectors.utility_context_window()
    )
    threshold = channel_threshold(channel=channel, settings=settings)
    if input_tokens < threshold * budget:
        return False
    logger.info(
        "event: channel %s: the reply's prompt had %s tokens >= %.0f%% of %s; compaction enqueued",
        channel.pk,
        f"{input_tokens:,}",
        threshold * 100,
        f"{budget:,}",
    )
    transaction.on_commit(
        partial(
            async_task,
            conf.AUTO_COMPACT_TASK,
            channel.pk,
            None,
            task_name=f"auto-compact-{channel.pk}-event-{time.time_ns()}",
        ),
        robust=True,
    )
    return True


# --- settings and schedule -------------------------------------------------

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
def compaction_settings_update(*, actor: AbstractBaseUser | None, **changes) -> CompactionSettings:
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
