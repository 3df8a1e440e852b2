"""Reads of the scanner. Each is one query whatever the number of candidates."""

import contextlib
import datetime
from collections.abc import Iterator
from contextvars import ContextVar

from django.db.models import Count, F, Q, QuerySet

from chatcore import conf as chatcore_conf
from chatcore.compiled import FixedQuery
from chatcore.models import Channel, Cursor, ModelRole, Summary, Team
from chatcore.signals import ReadAlong
from compaction import conf
from compaction.models import CompactionLease, CompactionSettings

SETTINGS_PK = 1

Outcome = CompactionLease.Outcome
# A summary was written: the channel waits out the cooldown.
COOLDOWN_OUTCOMES = frozenset({Outcome.DONE, Outcome.INEFFECTIVE})
# Nothing was written: the channel is not tried again until it has new messages (or the cooldown passed).
NO_LOOP_OUTCOMES = frozenset({Outcome.FAILED, Outcome.NOTHING, Outcome.ABANDONED})


_SETTINGS_ROW = FixedQuery(
    CompactionSettings, lambda using, pk: CompactionSettings.objects.using(using).filter(pk=pk)[:1], pk=int
)


# The settings row as every stored reply's write reads it (`chatcore.signals.ReadAlong`), for the event trigger
# after the reply (`trigger.reply_pressure_check`), which then sends no statement of its own after the commit.
# The fields the trigger reads (the others are deferred: loaded by a statement of their own if touched).
SETTINGS_READ_ALONG_NAME = "compaction.settings"
SETTINGS_READ_ALONG = ReadAlong(
    model=CompactionSettings,
    pk=SETTINGS_PK,
    fields=("enabled", "threshold", "default_context_budget", "cooldown_minutes"),
)


# The settings row as read by the call in progress (`settings_read_once`); None outside such a call.
_CALL_SETTINGS: ContextVar[list[CompactionSettings] | None] = ContextVar("compaction_call_settings", default=None)


@contextlib.contextmanager
def settings_read_once(*, held: list[CompactionSettings] | None = None) -> Iterator[None]:
    """Within the block, the unlocked settings row is read at most once: a gateway call reads it while it
    prepares (whether to offer recall_history) and again after the answer is stored (the event trigger), one
    statement of every call in a compacted channel; the second use takes the row the first read. The row
    is the call's own, never kept past it, so every call still sees the admin's latest settings (no
    process-local state). The holder is shared with the threads the block's steps run in (a context copy
    holds the same list). `held`: the holder of a block of the same call that has ended (`settings_held`),
    for a step the call takes after it (a streamed answer is stored once the view has returned)."""
    token = _CALL_SETTINGS.set([] if held is None else held)
    try:
        yield
    finally:
        _CALL_SETTINGS.reset(token)


def settings_held() -> list[CompactionSettings]:
    """The holder of the `settings_read_once` block in progress (the row, once read), to hand to a later step
    of the same call; a new, empty one outside such a block."""
    held = _CALL_SETTINGS.get()
    return [] if held is None else held


def compaction_settings_get(*, lock: bool = False, read: CompactionSettings | None = None) -> CompactionSettings:
    """The settings row, created with its defaults (auto-compaction off) if missing.

    With `lock`, the row is locked until the transaction ends: ticks and
    event reservations serialise on it, so two of them never hand out the
    same concurrency slot. Without, inside `settings_read_once`, the call's
    first read serves the rest of the call. `read` (unlocked only): the row as a
    statement of the caller's has just read it (`SETTINGS_READ_ALONG`, with a stored
    reply, some fields deferred), used instead of reading it again; a row the call
    holds already comes first, and `read` is not held for the rest of the call.
    """
    held = None if lock else _CALL_SETTINGS.get()
    if held:
        return held[0]
    if read is not None and not lock:
        return read
    row = _settings_read(lock=lock)
    if held is not None:
        held.append(row)
    return row


def _settings_read(*, lock: bool) -> CompactionSettings:
    queryset = CompactionSettings.objects.select_for_update() if lock else CompactionSettings.objects
    # Read on every reply in a compacted channel: unlocked, a statement built once (chatcore.compiled).
    found = queryset.filter(pk=SETTINGS_PK)[:1] if lock else _SETTINGS_ROW.fetch(pk=SETTINGS_PK)
    row = next(iter(found), None)
    if row is None:
        CompactionSettings.objects.get_or_create(pk=SETTINGS_PK)
        row = queryset.get(pk=SETTINGS_PK)
    return row


def coarse_bound(*, settings: CompactionSettings) -> float:
    """Lowest pressure-column value a channel can qualify with.

    The column is tokens / the budget chatcore stored; the precise check
    divides by the model's window, else the utility model's, else the
    settings' default budget. Where that default is smaller than chatcore's,
    the bound is lowered in proportion, so the range scan misses nobody.
    """
    lowest = min(settings.threshold, conf.MIN_CHANNEL_THRESHOLD)
    return lowest * min(1.0, settings.default_context_budget / chatcore_conf.DEFAULT_CONTEXT_BUDGET)


def scan_candidates(*, settings: CompactionSettings, now: datetime.datetime) -> QuerySet[Channel]:
    """Coarse filter, served by the partial index on the pressure column.

    The partial index covers exactly the direct, live, non-archived,
    non-ephemeral channels; the range scan walks it from the highest
    pressure down and stops after `batch_size` channels pass the activity
    and message-count filters.
    """
    return (
        Channel.objects.pressure_watched()
        .filter(
            context_ratio__gte=coarse_bound(settings=settings),
            last_activity_at__lte=now - datetime.timedelta(minutes=settings.idle_minutes),
            last_activity_at__gte=now - datetime.timedelta(days=settings.active_within_days),
            context_messages__gte=settings.min_new_messages,
        )
        .select_related("model")
        .order_by("-context_ratio")[: settings.batch_size]
    )


def leases_by_channel(*, channel_ids: list[int]) -> dict[int, CompactionLease]:
    if not channel_ids:
        return {}
    return {lease.channel_id: lease for lease in CompactionLease.objects.filter(channel_id__in=channel_ids)}


def owner_leaves(*, channels: list[Channel]) -> dict[int, tuple[int, int]]:
    """For each channel, its owner's active leaf: (leaf id, leaf depth)."""
    if not channels:
        return {}
    owners = {channel.pk: channel.owner_id for channel in channels}
    rows = Cursor.objects.filter(channel_id__in=list(owners)).values_list(
        "channel_id", "user_id", "leaf_id", "leaf__depth"
    )
    return {
        channel_id: (leaf_id, depth) for channel_id, user_id, leaf_id, depth in rows if owners[channel_id] == user_id
    }


def utility_context_window() -> int:
    window = (
        ModelRole.objects.filter(role=ModelRole.Role.UTILITY).values_list("primary__context_window", flat=True).first()
    )
    return window or 0


def unfinished_q() -> Q:
    """An automatic attempt was reserved or started and has not reported back."""
    return Q(last_auto_at__isnull=False) & (
        Q(last_finished_at__isnull=True) | Q(last_finished_at__lt=F("last_auto_at"))
    )


def auto_attempt_counts(*, now: datetime.datetime) -> tuple[int, int]:
    """(automatic attempts in flight, failed or unfinished attempts in the last hour).

    In flight: reserved or running and younger than the lease; older ones
    were abandoned by their worker and no longer hold a slot.
    """
    lease_ago = now - datetime.timedelta(seconds=conf.LEASE_SECONDS)
    hour_ago = now - datetime.timedelta(hours=1)
    counts = CompactionLease.objects.filter(last_auto_at__gte=min(lease_ago, hour_ago)).aggregate(
        in_flight=Count("pk", filter=Q(last_auto_at__gte=lease_ago) & unfinished_q()),
        failed=Count(
            "pk", filter=Q(last_auto_at__gte=hour_ago) & (unfinished_q() | Q(last_outcome__in=NO_LOOP_OUTCOMES))
        ),
    )
    return counts["in_flight"], counts["failed"]


def auto_summaries_count(*, since: datetime.datetime) -> int:
    return Summary.objects.filter(trigger=Summary.Trigger.AUTO, created_at__gte=since).count()


def team_hourly_left(*, channels: list[Channel], since: datetime.datetime) -> dict[int, int]:
    """Automatic compactions each team with an hourly budget of its own may still have, for the teams of
    `channels` (no query when none is in a team; two otherwise, whatever the number of teams)."""
    team_ids = {channel.team_id for channel in channels if channel.team_id is not None}
    if not team_ids:
        return {}
    budgets = dict(
        Team.objects.filter(pk__in=team_ids, hourly_compaction_budget__isnull=False).values_list(
            "pk", "hourly_compaction_budget"
        )
    )
    if not budgets:
        return {}
    used = dict(
        Summary.objects.filter(trigger=Summary.Trigger.AUTO, created_at__gte=since, channel__team_id__in=budgets)
        .values("channel__team_id")
        .annotate(n=Count("id"))
        .values_list("channel__team_id", "n")
    )
    return {team_id: max(0, (budget or 0) - used.get(team_id, 0)) for team_id, budget in budgets.items()}
