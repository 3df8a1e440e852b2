"""The tick: select the candidates, check each precisely, apply the budget and
concurrency limits, and reserve and enqueue the channels that qualify.

A reservation is made in the tick's transaction, under the settings row
lock, so two ticks (or a tick and the event trigger) never hand out the same
concurrency slot: `last_auto_at` = now and `attempt_leaf_id` = the owner's
leaf in the channel's lease row; the task is enqueued after commit with that
time as its ticket (see compaction.scanner.attempt for what happens next).
"""

import dataclasses
import datetime
import logging
import time
from functools import partial
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django_q.tasks import async_task

from chatcore.models import Channel
from compaction import conf
from compaction.models import CompactionLease, CompactionSettings
from compaction.observability.metrics import budget_observed, tick_observed
from compaction.scanner import selectors
from compaction.scanner.decide import Action, Decision, decide
from compaction.scanner.selectors import Outcome, compaction_settings_get
from compaction.scanner.settings import scan_schedule_sync

logger = logging.getLogger("compaction.scanner")


@dataclasses.dataclass
class ScanReport:
    """What one tick saw and did. The defaults are a scheduled tick's (`scan_run`'s): others say how they differ."""

    source: str = "scan"
    dry_run: bool = False
    enabled: bool = True
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
        return [
            d.channel_id for d in self.decisions if d.action in (Action.ENQUEUE, Action.WOULD_ENQUEUE) and not d.taken
        ]

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


def _reserve(*, decision: Decision, lease: CompactionLease | None, now: datetime.datetime) -> bool:
    """Mark the channel's attempt as reserved; False if someone changed the row meanwhile."""
    values: dict[str, Any] = {"last_auto_at": now, "attempt_leaf_id": decision.leaf_id}
    if decision.abandoned:
        values.update(
            last_outcome=Outcome.ABANDONED,
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
    *, channels: list[Channel], settings: CompactionSettings, now: datetime.datetime, report: ScanReport, take: int = 0
) -> None:
    """Precise check of the candidates, then the budget and concurrency limits, then reservations, in the
    report's mode (its `dry_run`, its `source`).

    `take` reservations are kept for the caller instead of being enqueued.
    A refill stops at the first candidate that could no longer get a
    slot: a refill runs after every compaction, and judging and logging a
    whole batch of candidates that must wait anyway would keep the slot idle.
    """
    until_full, dry_run = report.source == "refill", report.dry_run
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
    slots = _Slots(free=free, budget_left=budget_left, take=take, used=used)
    slots.team_left = selectors.team_hourly_left(channels=channels, since=now - datetime.timedelta(hours=1))
    for channel in channels:
        if until_full and not slots.open:
            break
        lease = leases.get(channel.pk)
        decision = decide(
            channel=channel,
            lease=lease,
            leaf=leaves.get(channel.pk),
            settings=settings,
            utility_window=utility_window,
            now=now,
        )
        if decision.action == Action.ENQUEUE:
            _admit(
                decision=decision,
                lease=lease,
                slots=slots,
                settings=settings,
                now=now,
                dry_run=dry_run,
                team_id=channel.team_id,
            )
        report.decisions.append(decision)
        if decision.action != Action.SKIP or not until_full:
            logger.info("%s: %s", report.source, decision.log_line())


@dataclasses.dataclass
class _Slots:
    """What a tick may still hand out: concurrency slots, hourly budget, reservations kept by the caller."""

    free: int
    budget_left: int
    take: int
    used: int
    # Teams with an hourly budget of their own: what each may still have this hour (team id -> compactions).
    team_left: dict[int, int] = dataclasses.field(default_factory=dict)

    @property
    def open(self) -> bool:
        return self.free > 0 and self.budget_left > 0


def _admit(
    *,
    decision: Decision,
    lease: CompactionLease | None,
    slots: _Slots,
    settings: CompactionSettings,
    now: datetime.datetime,
    dry_run: bool,
    team_id: int | None = None,
) -> None:
    """A qualifying channel against the limits (the site's hourly budget, its team's, concurrency): reserved
    (and enqueued or kept), or skipped with the reason."""
    if slots.budget_left <= 0:
        decision.action, decision.reason = Action.SKIP, "budget"
        decision.detail = f"budget, {slots.used} of {settings.hourly_budget} automatic compactions this hour"
        return
    if team_id is not None and slots.team_left.get(team_id, 1) <= 0:
        decision.action, decision.reason = Action.SKIP, "team budget"
        decision.detail = f"team budget, team {team_id} has used its automatic compactions this hour"
        return
    if slots.free <= 0:
        decision.action, decision.reason = Action.SKIP, "concurrency"
        decision.detail = f"concurrency, {settings.concurrency} already in flight"
        return
    if dry_run:
        decision.action = Action.WOULD_ENQUEUE
    elif _reserve(decision=decision, lease=lease, now=now):
        decision.ticket = now.isoformat()
        if slots.take > 0:
            decision.taken, slots.take = True, slots.take - 1
        else:
            _enqueue(channel_id=decision.channel_id, ticket=decision.ticket)
    else:
        decision.action, decision.reason = Action.SKIP, "taken"
        decision.detail = "reserved by another scan a moment ago"
        return
    slots.free, slots.budget_left = slots.free - 1, slots.budget_left - 1
    if team_id in slots.team_left:
        slots.team_left[team_id] -= 1


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
            _evaluate(channels=channels, settings=settings, now=now, report=report, take=take)
    report.duration_ms = (time.monotonic() - started) * 1000
    if source == "scan" and not dry_run:
        tick_observed(candidates=len(report.decisions))
        if settings.enabled:
            budget_observed(hourly_budget=settings.hourly_budget, used=report.budget_used)
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
            sum(d.action == Action.SKIP for d in report.decisions),
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
        channel = Channel.objects.pressure_watched().select_related("model").filter(pk=channel_id).first()
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
        report = ScanReport(source=source)
        _evaluate(channels=[channel], settings=settings, now=now, report=report)
        return report.decisions[0]
