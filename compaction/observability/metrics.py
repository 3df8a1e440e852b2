"""The compaction app's Prometheus metrics, each counted at the one place its event happens:

- compactions (`services.compact._compact_with_lease`, which every trigger passes): `compaction_runs_total`
  [trigger: manual/auto/event/gateway, outcome: ok/failed/skipped], `compaction_duration_seconds`,
  `compaction_tokens_before_total`, `compaction_tokens_after_total` (dry runs write nothing and are not runs);
- the scanner (`scanner.tick.scan_run`): `scanner_ticks_total`, `scanner_candidates` (the last tick's);
- the lease table and the hourly budget, read when the metrics are scraped (`gauges_refresh`):
  `compaction_leases_held`, `compaction_budget_remaining`; a count kept by increments would drift when a
  worker dies holding a lease, the database's answer does not;
- redaction (`services.draft`, where each draft's counts are summed): `redactions_total` [family];
- injection checks (`safety.injection.injection_flags`): `injections_flagged_total`;
- the gateway (`gateway.views`): `gateway_added_seconds`, the time the gateway adds around the model.

The gauges are "most recent" across processes: the value written last by any process is the one shown.
"""

import contextlib
import contextvars
import datetime
from collections.abc import Iterator, Mapping

from django.utils import timezone
from prometheus_client import Counter, Gauge, Histogram

# A compaction takes from a fraction of a second (offline) to a couple of model calls.
COMPACTION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
# The gateway's own work around a turn (lookup, append, context): milliseconds to a second.
GATEWAY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

compaction_runs = Counter("compaction_runs", "Compactions, by trigger and outcome.", ["trigger", "outcome"])
compaction_duration = Histogram(
    "compaction_duration_seconds", "Duration of one compaction, lease included.", ["trigger"],
    buckets=COMPACTION_BUCKETS,
)  # fmt: skip
compaction_tokens_before = Counter("compaction_tokens_before", "Context tokens of the channels before compaction.")
compaction_tokens_after = Counter("compaction_tokens_after", "Context tokens of the channels after compaction.")

scanner_ticks = Counter("scanner_ticks", "Scheduled scanner ticks run.")
scanner_candidates = Gauge(
    "scanner_candidates", "Candidates the last scanner tick judged.", multiprocess_mode="mostrecent"
)
leases_held = Gauge("compaction_leases_held", "Channel leases held now.", multiprocess_mode="mostrecent")
budget_remaining = Gauge(
    "compaction_budget_remaining", "Automatic compactions left in this hour's budget.", multiprocess_mode="mostrecent"
)

redactions = Counter("redactions", "Secrets redacted before a summarizer saw them, by family.", ["family"])
injections_flagged = Counter("injections_flagged", "Texts the injection checks flagged.")

gateway_added_seconds = Histogram(
    "gateway_added_seconds", "Time the /v1 gateway adds to a turn outside the model.", buckets=GATEWAY_BUCKETS
)


class Outcome:
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"


_auto_label: contextvars.ContextVar[str | None] = contextvars.ContextVar("compaction_auto_label", default=None)


@contextlib.contextmanager
def auto_labelled(label: str) -> Iterator[None]:
    """Automatic compactions inside the block are counted under `label` (the event trigger's "event")."""
    token = _auto_label.set(label)
    try:
        yield
    finally:
        _auto_label.reset(token)


def trigger_label(trigger: str) -> str:
    return (_auto_label.get() or trigger) if trigger == "auto" else trigger


def compaction_observed(
    *, trigger: str, outcome: str, seconds: float, tokens_before: int = 0, tokens_after: int = 0
) -> None:
    label = trigger_label(trigger)
    compaction_runs.labels(trigger=label, outcome=outcome).inc()
    compaction_duration.labels(trigger=label).observe(seconds)
    if outcome == Outcome.OK:
        compaction_tokens_before.inc(tokens_before)
        compaction_tokens_after.inc(tokens_after)


def redactions_observed(counts: Mapping[str, int]) -> None:
    for family, count in counts.items():
        if count:
            redactions.labels(family=family).inc(count)


def gauges_refresh(*, now: datetime.datetime | None = None) -> None:
    """The gauges read from the database when the metrics are scraped (a few small, indexed queries)."""
    from compaction.models import CompactionLease
    from compaction.scanner import selectors

    now = now or timezone.now()
    leases_held.set(CompactionLease.objects.exclude(holder="").filter(expires_at__gt=now).count())
    settings = selectors.compaction_settings_get()
    _in_flight, failed = selectors.auto_attempt_counts(now=now)
    used = failed + selectors.auto_summaries_count(since=now - datetime.timedelta(hours=1))
    budget_observed(hourly_budget=settings.hourly_budget, used=used)


def budget_observed(*, hourly_budget: int, used: int) -> None:
    budget_remaining.set(max(0, hourly_budget - used))


def tick_observed(*, candidates: int) -> None:
    scanner_ticks.inc()
    scanner_candidates.set(candidates)
