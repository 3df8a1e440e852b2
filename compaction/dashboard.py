"""The staff usage dashboard's reads: what compaction does for the deployment.

Every figure is an aggregate computed by the database (one query per block,
so the number of queries does not depend on the date range or the row
count), over indexed columns: usage rows by (role, created_at), summaries by
created_at, channels by their pressure index.

- Tokens before → after and the estimated cost saved, per day, come from the
  summaries written that day. The saving is priced as the tokens a summary
  took out of the context × the input price of the channel's model (its own,
  else the chat role's): what the next request on that path no longer pays,
  net of what the compaction's own model calls cost that day. Every later
  request on the same path saves about as much again, so this is a floor.
- Compactions per day by trigger (whatever values exist: manual, auto,
  gateway…) and outcome: done (a summary was written; "undone" when it was
  reverted since) from the summaries, failed from the usage rows of the
  utility role (one per summarizing model call, the offline summarizer's
  included), which also give the failure reasons, the durations and what
  the calls cost.
- p50/p95 durations are read from a histogram of the durations (fixed,
  roughly 12%-wide buckets counted in one query), interpolated within the
  bucket: database-neutral and accurate to a few percent.
"""

import dataclasses
import datetime
import math
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from django.db.models import (
    Case,
    Count,
    DecimalField,
    ExpressionWrapper,
    F,
    FloatField,
    IntegerField,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Cast, Coalesce, Floor, Ln, TruncDate
from django.utils import timezone

from chatcore.models import Channel, ModelRole, Summary, Team, UsageEntry
from chatcore.teams.budgets import month_start
from compaction.models import CompactionSettings
from compaction.scanner.services import channel_threshold

# Duration buckets (ms): [0, 20), then [20·1.12^k, 20·1.12^(k+1)), up to ~20 minutes; the last is open.
BUCKET_FIRST, BUCKET_RATIO, BUCKET_COUNT = 20.0, 1.12, 80
BUCKET_EDGES: list[float] = [0.0] + [BUCKET_FIRST * BUCKET_RATIO**k for k in range(BUCKET_COUNT - 1)]
NEAREST_CHANNELS = 10
FAILURE_SAMPLES = 500


@dataclasses.dataclass(frozen=True)
class Filters:
    start: datetime.date
    end: datetime.date  # inclusive
    persona_id: int | None = None
    model: str = ""
    team_id: int | None = None
    using: str = "default"  # the database alias (the benchmark reads a database of its own)

    @property
    def since(self) -> datetime.datetime:
        return datetime.datetime.combine(self.start, datetime.time.min, tzinfo=datetime.UTC)

    @property
    def until(self) -> datetime.datetime:
        return datetime.datetime.combine(self.end + datetime.timedelta(days=1), datetime.time.min, tzinfo=datetime.UTC)

    @property
    def days(self) -> list[datetime.date]:
        return [self.start + datetime.timedelta(days=i) for i in range((self.end - self.start).days + 1)]


@dataclasses.dataclass
class Day:
    date: datetime.date
    compactions: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    gross_saved: Decimal = Decimal(0)
    compaction_cost: Decimal = Decimal(0)
    undone: int = 0
    by_trigger: dict[str, int] = dataclasses.field(default_factory=dict)
    failed: int = 0
    failed_by_trigger: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def tokens_saved(self) -> int:
        return max(0, self.tokens_before - self.tokens_after)

    @property
    def cost_saved(self) -> Decimal:
        return self.gross_saved - self.compaction_cost


@dataclasses.dataclass
class Dashboard:
    filters: Filters
    days: list[Day]
    triggers: list[str]
    failures: list[tuple[str, int]]
    p50_ms: float | None
    p95_ms: float | None
    calls: int
    nearest: list[dict]
    teams: "list[TeamSpend]" = dataclasses.field(default_factory=list)

    @property
    def totals(self) -> Day:
        total = Day(date=self.filters.end)
        for day in self.days:
            total.compactions += day.compactions
            total.tokens_before += day.tokens_before
            total.tokens_after += day.tokens_after
            total.gross_saved += day.gross_saved
            total.compaction_cost += day.compaction_cost
            total.undone += day.undone
            total.failed += day.failed
            for trigger, count in day.by_trigger.items():
                total.by_trigger[trigger] = total.by_trigger.get(trigger, 0) + count
            for trigger, count in day.failed_by_trigger.items():
                total.failed_by_trigger[trigger] = total.failed_by_trigger.get(trigger, 0) + count
        return total


def _summaries(filters: Filters):
    rows = Summary.objects.using(filters.using).filter(created_at__gte=filters.since, created_at__lt=filters.until)
    if filters.persona_id:
        rows = rows.filter(channel__persona_id=filters.persona_id)
    if filters.team_id:
        rows = rows.filter(channel__team_id=filters.team_id)
    if filters.model:
        rows = rows.filter(model=filters.model)
    return rows


def _usage(filters: Filters):
    rows = UsageEntry.objects.using(filters.using).filter(
        role="utility", created_at__gte=filters.since, created_at__lt=filters.until
    )
    if filters.persona_id:
        rows = rows.filter(channel__persona_id=filters.persona_id)
    if filters.team_id:
        rows = rows.filter(team_id=filters.team_id)
    if filters.model:
        rows = rows.filter(model=filters.model)
    return rows


@dataclasses.dataclass(frozen=True)
class TeamSpend:
    """A team's spend this calendar month (every role, as its budgets count it) against its budgets."""

    team: Team
    tokens: int
    cost: Decimal

    @property
    def token_share(self) -> float | None:
        budget = self.team.monthly_token_budget
        return self.tokens / budget if budget else None

    @property
    def cost_share(self) -> float | None:
        budget = self.team.monthly_cost_budget
        return float(self.cost / budget) if budget else None


def _team_spend(filters: Filters) -> list[TeamSpend]:
    """Every team's spend this month, grouped in one aggregate (the (team, created_at) index), with the teams."""
    teams = Team.objects.using(filters.using).order_by("name", "id")
    if filters.team_id:
        teams = teams.filter(pk=filters.team_id)
    totals = {
        row["team_id"]: row
        for row in UsageEntry.objects.using(filters.using)
        .filter(team__isnull=False, created_at__gte=month_start(timezone.now()))
        .values("team_id")
        .annotate(tokens_in=Sum("input_tokens"), tokens_out=Sum("output_tokens"), spent=Sum("cost"))
    }
    spends = []
    for team in teams:
        row = totals.get(team.pk)
        tokens = int(row["tokens_in"] or 0) + int(row["tokens_out"] or 0) if row else 0
        spends.append(TeamSpend(team=team, tokens=tokens, cost=Decimal(row["spent"] or 0) if row else Decimal(0)))
    return spends


def _default_price(using: str) -> Decimal:
    role = ModelRole.objects.using(using).select_related("primary").filter(role=ModelRole.Role.CHAT).first()
    return role.primary.price_in_per_million if role is not None else Decimal(0)


def _daily(rows: QuerySet, days: dict[datetime.date, Day], **aggregates: Any) -> Iterator[tuple[Day, dict]]:
    """`rows` summed per day and trigger, each with its Day; days outside the range are skipped."""
    for row in rows.annotate(day=TruncDate("created_at")).values("day", "trigger").annotate(**aggregates).order_by():
        day = days.get(_as_date(row["day"]))
        if day is not None:
            yield day, row


def _summary_days(filters: Filters, days: dict[datetime.date, Day]) -> set[str]:
    """Summaries written per day and trigger: tokens before/after, the saving priced, how many were undone."""
    price = Coalesce(
        F("channel__model__price_in_per_million"),
        Value(_default_price(filters.using)),
        output_field=DecimalField(max_digits=14, decimal_places=4),
    )
    saved = ExpressionWrapper(
        (F("tokens_before") - F("tokens_after")) * price, output_field=DecimalField(max_digits=24, decimal_places=4)
    )
    rows = _daily(
        _summaries(filters),
        days,
        n=Count("id"),
        undone=Count("id", filter=Q(reverted_at__isnull=False)),
        before=Sum("tokens_before"),
        after=Sum("tokens_after"),
        saved=Sum(saved),
    )
    triggers: set[str] = set()
    for day, row in rows:
        trigger = row["trigger"] or "other"
        triggers.add(trigger)
        day.compactions += row["n"]
        day.undone += row["undone"]
        day.by_trigger[trigger] = day.by_trigger.get(trigger, 0) + row["n"]
        day.tokens_before += row["before"] or 0
        day.tokens_after += row["after"] or 0
        day.gross_saved += Decimal(row["saved"] or 0) / Decimal(1_000_000)
    return triggers


def _usage_days(filters: Filters, days: dict[datetime.date, Day]) -> set[str]:
    """The summarizing model calls per day: failures by trigger, and what all of them cost (previews too)."""
    rows = _daily(_usage(filters), days, failed=Count("id", filter=Q(success=False)), cost=Sum("cost"))
    triggers: set[str] = set()
    for day, row in rows:
        day.compaction_cost += Decimal(row["cost"] or 0)
        if row["failed"]:
            trigger = row["trigger"] or "other"
            triggers.add(trigger)
            day.failed += row["failed"]
            day.failed_by_trigger[trigger] = day.failed_by_trigger.get(trigger, 0) + row["failed"]
    return triggers


def trigger_order(triggers: set[str]) -> list[str]:
    """The triggers people know first, then any other by name."""
    order = {"manual": 0, "auto": 1, "gateway": 2}
    return sorted(triggers, key=lambda t: (order.get(t, len(order)), t))


def _as_date(value) -> datetime.date:
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, str):
        return datetime.date.fromisoformat(value[:10])
    return value


FAILURE_REASON_CHARS = 80  # a failure's kind as a row of the table shows it


def failure_reason(error: str) -> str:
    """A failure's kind, without the particulars (model names, numbers, ids) that make every message unique."""
    text = (error or "").strip() or "unknown"
    text = text.split("\n", 1)[0]
    if " is not set" in text:
        return re.sub(r"\s*\(.*", "", text)
    head = re.split(r":\s", text, maxsplit=1)[0]
    head = re.sub(r"\(retry after [^)]*\)", "", head)
    return re.sub(r"\d{4,}", "…", head).strip()[:FAILURE_REASON_CHARS] or "unknown"


def _failures(filters: Filters) -> list[tuple[str, int]]:
    rows = (
        _usage(filters).filter(success=False).values("error").annotate(n=Count("id")).order_by("-n")[:FAILURE_SAMPLES]
    )
    reasons: dict[str, int] = {}
    for row in rows:
        reason = failure_reason(row["error"])
        reasons[reason] = reasons.get(reason, 0) + row["n"]
    return sorted(reasons.items(), key=lambda item: (-item[1], item[0]))


def _bucket_expression() -> Case:
    """A duration's bucket, computed (one logarithm per row, not a comparison per bucket)."""
    scaled = Cast(F("duration_ms"), FloatField()) / Value(BUCKET_FIRST)
    index = Cast(Floor(Ln(scaled) / Value(math.log(BUCKET_RATIO))), IntegerField()) + Value(1)
    return Case(
        When(duration_ms__lt=BUCKET_FIRST, then=Value(0)),
        When(duration_ms__gte=BUCKET_EDGES[-1], then=Value(BUCKET_COUNT - 1)),
        default=index,
        output_field=IntegerField(),
    )


def _percentiles(filters: Filters) -> tuple[float | None, float | None, int]:
    rows = (
        _usage(filters)
        .filter(success=True)
        .annotate(bucket=_bucket_expression())
        .values("bucket")
        .annotate(n=Count("id"))
        .order_by()
    )
    counts = {row["bucket"]: row["n"] for row in rows}
    total = sum(counts.values())
    if not total:
        return None, None, 0
    return histogram_percentile(counts, total, 0.50), histogram_percentile(counts, total, 0.95), total


def histogram_percentile(counts: dict[int, int], total: int, fraction: float) -> float:
    """The value below which `fraction` of the durations fall, interpolated inside its bucket."""
    wanted = fraction * total
    seen = 0
    for bucket in sorted(counts):
        n = counts[bucket]
        if seen + n >= wanted:
            low = BUCKET_EDGES[bucket]
            high = BUCKET_EDGES[bucket + 1] if bucket + 1 < len(BUCKET_EDGES) else low * BUCKET_RATIO
            return low + (high - low) * ((wanted - seen) / n if n else 0)
        seen += n
    return BUCKET_EDGES[-1]


def _nearest(filters: Filters, settings: CompactionSettings) -> list[dict]:
    """Channels closest to their threshold: the highest pressure first (the pressure index), each
    measured against its own threshold."""
    channels = Channel.objects.using(filters.using).filter(
        deleted_at__isnull=True, archived=False, ephemeral=False, type="direct"
    )
    if filters.persona_id:
        channels = channels.filter(persona_id=filters.persona_id)
    if filters.team_id:
        channels = channels.filter(team_id=filters.team_id)
    candidates = channels.select_related("owner", "persona", "model").order_by("-context_ratio")[: NEAREST_CHANNELS * 5]
    rows: list[dict[str, Any]] = []
    for channel in candidates:
        threshold = channel_threshold(channel=channel, settings=settings)
        rows.append(
            {
                "channel": channel,
                "ratio": channel.context_ratio,
                "threshold": threshold,
                "of_threshold": channel.context_ratio / threshold if threshold else 0.0,
                "auto": (channel.settings or {}).get("auto_compaction"),
            }
        )
    rows.sort(key=lambda row: -row["of_threshold"])
    return rows[:NEAREST_CHANNELS]


def usage_dashboard(*, filters: Filters, settings: CompactionSettings) -> Dashboard:
    days = {day: Day(date=day) for day in filters.days}
    triggers = trigger_order(_summary_days(filters, days) | _usage_days(filters, days))
    p50, p95, calls = _percentiles(filters)
    return Dashboard(
        filters=filters,
        days=list(days.values()),
        triggers=triggers,
        failures=_failures(filters),
        p50_ms=p50,
        p95_ms=p95,
        calls=calls,
        nearest=_nearest(filters, settings),
        teams=_team_spend(filters),
    )
