"""The staff usage dashboard: figures from usage and summary rows, filters,
CSV, its own permission, and a query count that does not depend on the range or the
number of rows."""

import datetime
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from chatcore.models import Summary, UsageEntry
from chatcore.teams.budgets import month_start
from compaction.dashboard import BUCKET_EDGES, Filters, failure_reason, histogram_percentile, usage_dashboard
from compaction.scanner.selectors import compaction_settings_get
from tests.chatcore.factories import (
    ChannelFactory,
    LLMModelFactory,
    PersonaFactory,
    TeamFactory,
    UserFactory,
    build_path,
)

URL = "/admin/compaction/usagedashboard/"


@pytest.fixture
def staff_client(db):
    client = Client()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def _summary(channel, *, before: int, after: int, trigger: str, when: datetime.datetime, reverted: bool = False):
    message = channel.messages.order_by("-id").first() or build_path(channel, 1)[0]
    summary = Summary.objects.create(
        channel=channel,
        through_message=message,
        content="x",
        tokens_before=before,
        tokens_after=after,
        trigger=trigger,
        model="offline",
        reverted_at=when if reverted else None,
    )
    Summary.objects.filter(pk=summary.pk).update(created_at=when)
    return summary


def _usage(channel, *, when, trigger="manual", success=True, error="", ms=1000, cost="0", model="offline"):
    entry = UsageEntry.objects.create(
        channel=channel,
        role="utility",
        model=model,
        trigger=trigger,
        success=success,
        error=error,
        duration_ms=ms,
        cost=Decimal(cost),
    )
    UsageEntry.objects.filter(pk=entry.pk).update(created_at=when)


@pytest.fixture
def world(db):
    today = timezone.now().replace(hour=12, minute=0, second=0, microsecond=0)
    priced = LLMModelFactory(name="priced", price_in_per_million=Decimal("2.0"))
    persona = PersonaFactory(name="Engineer")
    channel = ChannelFactory(model=priced, persona=persona, title="Ledger")
    other = ChannelFactory(model=priced, title="Other")
    build_path(channel, 2)
    build_path(other, 2)
    yesterday = today - datetime.timedelta(days=1)
    _summary(channel, before=10_000, after=2_000, trigger="manual", when=yesterday)
    _summary(channel, before=6_000, after=1_000, trigger="auto", when=today, reverted=True)
    _summary(other, before=4_000, after=1_000, trigger="gateway", when=today)
    _usage(channel, when=yesterday, ms=800, cost="0.001")
    _usage(channel, when=today, trigger="auto", ms=1200, cost="0.002")
    _usage(channel, when=today, trigger="auto", success=False, error="timeout: the model did not answer in time")
    _usage(other, when=today, trigger="gateway", success=False, error="HTTP 500: Error code: 500 - boom")
    _usage(other, when=today, trigger="gateway", success=False, error="HTTP 500: Error code: 500 - other")
    return {"today": today.date(), "yesterday": yesterday.date(), "persona": persona, "channel": channel}


def test_figures_per_day_by_trigger_and_outcome(world):
    filters = Filters(start=world["yesterday"], end=world["today"])
    data = usage_dashboard(filters=filters, settings=compaction_settings_get())
    first, second = data.days
    assert (first.date, first.compactions, first.by_trigger, first.failed) == (world["yesterday"], 1, {"manual": 1}, 0)
    assert (first.tokens_before, first.tokens_after, first.tokens_saved) == (10_000, 2_000, 8_000)
    assert first.gross_saved == Decimal("0.016")  # 8,000 tokens × $2 per million
    assert first.cost_saved == Decimal("0.015")  # less the summarizing call's $0.001
    assert (second.compactions, second.undone, second.by_trigger) == (2, 1, {"auto": 1, "gateway": 1})
    assert (second.failed, second.failed_by_trigger) == (3, {"auto": 1, "gateway": 2})
    assert data.triggers == ["manual", "auto", "gateway"]
    assert data.failures == [("HTTP 500", 2), ("timeout", 1)]
    assert data.calls == 2 and 800 <= data.p50_ms <= 1200 and 1000 <= data.p95_ms <= 1400
    assert data.totals.compactions == 3 and data.totals.tokens_saved == 16_000


def test_persona_and_model_filters(world):
    filters = Filters(start=world["yesterday"], end=world["today"], persona_id=world["persona"].pk)
    data = usage_dashboard(filters=filters, settings=compaction_settings_get())
    assert data.totals.compactions == 2 and data.totals.failed == 1
    assert [row["channel"].title for row in data.nearest] == ["Ledger"]
    filters = Filters(start=world["yesterday"], end=world["today"], model="no-such-model")
    assert usage_dashboard(filters=filters, settings=compaction_settings_get()).totals.compactions == 0


def test_page_renders_charts_and_filters(world, staff_client):
    response = staff_client.get(URL, {"start": world["yesterday"].isoformat(), "end": world["today"].isoformat()})
    page = response.content.decode()
    assert response.status_code == 200
    assert page.count('<svg class="chart"') == 3
    for text in ("Tokens before → after", "Failure reasons", "HTTP 500", "Channels closest to their threshold"):
        assert text in page
    assert "<script" not in page.split('id="content-main"')[1]


def test_csv_export(world, staff_client):
    response = staff_client.get(
        URL, {"start": world["yesterday"].isoformat(), "end": world["today"].isoformat(), "format": "csv"}
    )
    lines = response.content.decode().strip().splitlines()
    assert response["Content-Type"].startswith("text/csv")
    assert lines[0].startswith("date,compactions,done_manual,done_auto,done_gateway,undone,failed")
    assert lines[1].startswith(f"{world['yesterday'].isoformat()},1,1,0,0,0,0")
    assert len(lines) == 3


def test_bad_filters_fall_back_and_say_why(world, staff_client):
    response = staff_client.get(URL, {"start": "2026-05-01", "end": "2026-01-01"})
    assert response.status_code == 200
    assert "The start date is after the end date." in response.content.decode()


def test_staff_with_the_dashboard_permission_only(world):
    """Every person's usage and channel titles: the page and its CSV need view_usage_dashboard, and the admin's
    index lists it only for those who hold it."""
    client = Client()
    client.force_login(UserFactory())
    assert client.get(URL).status_code == 302  # to the admin's login page
    client.force_login(UserFactory(is_staff=True, permissions=["chatcore.view_usageentry"]))
    assert client.get(URL).status_code == 403
    assert client.get(URL, {"format": "csv"}).status_code == 403
    assert URL not in client.get("/admin/").content.decode()
    client.force_login(UserFactory(is_staff=True, permissions=["compaction.view_usage_dashboard"]))
    assert client.get(URL).status_code == 200
    csv = client.get(URL, {"format": "csv"})
    assert csv.status_code == 200 and csv.content.decode().startswith("date,compactions,")
    assert URL in client.get("/admin/").content.decode()


def test_linked_from_the_admin_index(staff_client):
    assert URL in staff_client.get("/admin/").content.decode()


@pytest.mark.parametrize("days", [1, 365])
def test_query_count_does_not_depend_on_range_or_rows(world, staff_client, days, django_assert_num_queries):
    end = world["today"]
    for i in range(days if days < 30 else 30):
        _usage(world["channel"], when=timezone.now() - datetime.timedelta(days=i * 12 % days or 0))
    params = {"start": (end - datetime.timedelta(days=days - 1)).isoformat(), "end": end.isoformat()}
    with django_assert_num_queries(QUERIES):
        assert staff_client.get(URL, params).status_code == 200


# session + user, form (models, persona lookup none), chat role price, 3 day aggregates,
# failures, histogram, settings, nearest channels, the teams and their month's spend (2),
# persona and team choices rendered.
QUERIES = 14


def test_failure_reasons_drop_the_particulars():
    assert failure_reason("HTTP 429: Error code: 429 - slow down") == "HTTP 429"
    assert failure_reason("rate limited (429): slow (retry after 3s)") == "rate limited (429)"
    assert failure_reason("OPENAI_API_KEY is not set (model gpt-x calls …)") == "OPENAI_API_KEY is not set"
    assert failure_reason("") == "unknown"


def test_histogram_percentile_interpolates_inside_the_bucket():
    index = next(i for i, edge in enumerate(BUCKET_EDGES) if edge >= 1000)
    counts = {index: 100}
    value = histogram_percentile(counts, 100, 0.5)
    assert BUCKET_EDGES[index] <= value <= BUCKET_EDGES[index + 1]


def test_teams_spend_against_budget_and_the_team_filter(staff_client):
    team = TeamFactory(name="Research", monthly_token_budget=1_000, monthly_cost_budget=Decimal("4"))
    quiet = TeamFactory(name="Quiet")
    channel = ChannelFactory(team=None)
    UsageEntry.objects.create(team=team, channel=channel, role="chat", model="m", input_tokens=200, output_tokens=50)
    UsageEntry.objects.create(team=team, role="utility", model="m", input_tokens=50, cost=Decimal("1"))
    last_month = UsageEntry.objects.create(team=team, role="chat", model="m", input_tokens=10**6)
    UsageEntry.objects.filter(pk=last_month.pk).update(created_at=month_start(timezone.now()) - datetime.timedelta(1))
    UsageEntry.objects.create(role="chat", model="m", input_tokens=999)

    today = timezone.now().date()
    data = usage_dashboard(filters=Filters(start=today, end=today), settings=compaction_settings_get())
    assert [(row.team, row.tokens, row.cost, row.token_share, row.cost_share) for row in data.teams] == [
        (quiet, 0, Decimal(0), None, None),
        (team, 300, Decimal(1), 0.3, 0.25),
    ]
    only = usage_dashboard(filters=Filters(start=today, end=today, team_id=team.pk), settings=compaction_settings_get())
    assert [row.team for row in only.teams] == [team]
    assert only.calls == 1  # the team's one summarizing call in range

    page = staff_client.get(URL, {"team": team.pk}).content.decode()
    assert "Teams this month: spend against budget" in page and "· team Research" in page
    cells = ['<td class="num">300</td>', '<td class="num">1,000</td>', '<td class="num">30.0%</td>']
    assert "\n          ".join(cells) in page
