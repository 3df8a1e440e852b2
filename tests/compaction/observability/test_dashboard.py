"""The Grafana dashboard in the docs shows every metric of the contract, and only metrics that exist."""

import json
import re

from prometheus_client import REGISTRY

import chatcore.observability.metrics  # noqa: F401  (registers the substrate's metrics)
import compaction.observability.metrics  # noqa: F401
from tests.servers import ROOT

DASHBOARD = ROOT / "docs" / "assets" / "grafana" / "compaction-dashboard.json"
CONTRACT = {
    "compaction_runs_total",
    "compaction_duration_seconds",
    "compaction_tokens_before_total",
    "compaction_tokens_after_total",
    "llm_calls_total",
    "llm_call_duration_seconds",
    "llm_tokens_total",
    "llm_fallbacks_total",
    "chat_replies_total",
    "reply_server_seconds",
    "gateway_added_seconds",
    "search_queries_total",
    "search_duration_seconds",
    "scanner_ticks_total",
    "scanner_candidates",
    "compaction_leases_held",
    "compaction_budget_remaining",
    "throttled_total",
    "redactions_total",
    "injections_flagged_total",
}
SUFFIXES = ("_bucket", "_count", "_sum")
GROUPING = re.compile(r"\bby \([^)]*\)")  # the labels summed by are not metrics
NAME = re.compile(r"\b([a-z][a-z0-9_]*)(?=\[|\{|\)|\s*$)")


def _queried() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    names = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            for name in NAME.findall(GROUPING.sub("", target["expr"])):
                names.add(
                    name[: -len(suffix)] if (suffix := next((s for s in SUFFIXES if name.endswith(s)), "")) else name
                )
    return names - {"rate", "sum", "histogram_quantile"}


def test_the_dashboard_shows_every_metric_of_the_contract():
    assert CONTRACT - _queried() == set()


def test_the_dashboard_queries_only_metrics_that_exist():
    exposed = set()
    for metric in REGISTRY.collect():
        exposed.update(sample.name for sample in metric.samples)
        exposed.add(metric.name + ("_total" if metric.type == "counter" else ""))
        exposed.add(metric.name)
    assert _queried() - exposed == set()
