"""The precise check of one candidate channel, on data already loaded: no query.

Used by the tick (every candidate of a scan) and by the event trigger (one
channel); the thresholds and budgets here are also the attempt's and the
trigger's, so the three never disagree.
"""

import dataclasses
import datetime

from django.db import models

from chatcore.models import Channel
from compaction import conf
from compaction.models import CompactionLease, CompactionSettings
from compaction.scanner.selectors import COOLDOWN_OUTCOMES, NO_LOOP_OUTCOMES


class Action(models.TextChoices):
    ENQUEUE = "enqueue", "Enqueue"
    WOULD_ENQUEUE = "would_enqueue", "Would enqueue (dry run)"
    SKIP = "skip", "Skip"


@dataclasses.dataclass
class Decision:
    channel_id: int
    owner_id: int
    action: str = Action.SKIP
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
        if self.action == Action.SKIP:
            return f"channel {self.channel_id} skipped ({self.detail or self.reason}) [{pressure}]"
        verb = (
            "taken by this worker"
            if self.taken
            else "enqueued"
            if self.action == Action.ENQUEUE
            else "would be enqueued (dry run)"
        )
        extra = ", retrying an abandoned attempt" if self.abandoned else ""
        return f"channel {self.channel_id} qualifies ({pressure}{extra}): {verb}"


def channel_threshold(*, channel: Channel, settings: CompactionSettings) -> float:
    own = (channel.settings or {}).get("compaction_threshold")
    if own is None:
        return settings.threshold
    return max(float(own), conf.MIN_CHANNEL_THRESHOLD)


def channel_opted_out(channel: Channel) -> bool:
    """The owner switched automatic compaction off for this channel."""
    return (channel.settings or {}).get("auto_compaction") is False


def channel_budget(*, channel: Channel, settings: CompactionSettings, utility_window: int) -> int:
    """The channel's model's window, else the utility model's, else the settings' default."""
    if channel.model is not None and channel.model.context_window:
        return channel.model.context_window
    return utility_window or settings.default_context_budget


def _minutes(delta: datetime.timedelta) -> str:
    return f"{max(1, int(delta.total_seconds() // 60 + (1 if delta.total_seconds() % 60 else 0)))}m"


def decide(
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

    reason = _path_skip(channel=channel, decision=decision, settings=settings, has_leaf=leaf is not None)
    if reason is None and lease is not None:
        reason = _lease_skip(lease=lease, decision=decision, settings=settings, now=now)
    if reason is None:
        decision.action = Action.ENQUEUE
    else:
        decision.reason, decision.detail = reason[0], reason[1] or reason[0].replace("_", " ")
    return decision


def _path_skip(
    *, channel: Channel, decision: Decision, settings: CompactionSettings, has_leaf: bool
) -> tuple[str, str] | None:
    """(reason, detail) when the channel's path does not qualify: opted out, too short, under the threshold."""
    if channel_opted_out(channel):
        return "opted_out", "opted out"
    if not has_leaf:
        return "no_path", "the owner has no active path"
    if decision.messages < settings.min_messages:
        return "too_few_messages", f"{decision.messages} messages on the path < {settings.min_messages}"
    if decision.new_messages < settings.min_new_messages:
        return (
            "too_few_new_messages",
            f"{decision.new_messages} messages since the summary < {settings.min_new_messages}",
        )
    if decision.ratio < decision.threshold:
        return "below_threshold", f"below threshold, {decision.ratio:.0%} < {decision.threshold:.0%}"
    return None


def lease_wait_reason(*, lease: CompactionLease, settings: CompactionSettings, now: datetime.datetime) -> str | None:
    """What the lease row alone says of a new attempt, whatever the path: held, in flight or cooling
    down. The event trigger asks it before enqueuing, so that the replies of a channel already
    compacting or compacted do not each cost a task that the attempt would then skip."""
    reason = _lease_skip(lease=lease, decision=Decision(channel_id=lease.pk, owner_id=0), settings=settings, now=now)
    return reason[0] if reason is not None and reason[0] != "no_loop" else None


def _lease_skip(
    *, lease: CompactionLease, decision: Decision, settings: CompactionSettings, now: datetime.datetime
) -> tuple[str, str] | None:
    """(reason, detail) when the lease row says wait: held, in flight, cooling down, or no loop.
    An attempt unfinished past the lease time is abandoned: the decision says so and goes on."""
    if lease.expires_at is not None and lease.expires_at > now:
        seconds = int((lease.expires_at - now).total_seconds())
        return "lease_held", f"lease held by {lease.holder or 'another worker'} for {seconds}s more"
    last_auto = lease.last_auto_at
    if last_auto is None:
        return None
    if lease.last_finished_at is None or lease.last_finished_at < last_auto:
        if last_auto > now - datetime.timedelta(seconds=conf.LEASE_SECONDS):
            return "in_flight", "an automatic compaction is already queued or running"
        decision.abandoned = True
        return None
    cooldown_left = last_auto + datetime.timedelta(minutes=settings.cooldown_minutes) - now
    if cooldown_left <= datetime.timedelta(0):
        return None
    if lease.last_outcome in COOLDOWN_OUTCOMES:
        return "cooldown", f"cooldown, {_minutes(cooldown_left)} remaining"
    if lease.last_outcome in NO_LOOP_OUTCOMES and lease.attempt_leaf_id == decision.leaf_id:
        return (
            "no_loop",
            f"last attempt {lease.last_outcome}, no new messages since; "
            f"{_minutes(cooldown_left)} of cooldown remaining",
        )
    return None
