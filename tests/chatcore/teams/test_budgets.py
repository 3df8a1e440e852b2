"""A team's monthly budgets: counted from its usage rows; a spent one refuses model calls for its channels
on the page, the API and /v1 with a 429 whose Retry-After is the reset, and writes nothing."""

import datetime as dt
import json
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from chatcore.api_tokens import api_token_create
from chatcore.errors import BudgetExhausted
from chatcore.models import AuditEntry, Channel, Cursor, Message, Summary, UsageEntry
from chatcore.teams.budgets import month_start, next_reset, team_budget_check, team_spend
from compaction.services import channel_compact
from tests.chatcore.factories import ChannelFactory, TeamFactory, TeamMembershipFactory
from tests.compaction.factories import converse
from tests.conftest import api_client

REFUSAL_START = "The team Research has used its monthly budget"


@pytest.fixture
def team(db, user):
    team = TeamFactory(name="Research", monthly_token_budget=1_000)
    TeamMembershipFactory(team=team, user=user)
    return team


@pytest.fixture
def channel(team, user, chat_model):
    channel = ChannelFactory(owner=user, team=team)
    converse(channel, 10)
    return channel


def _spent(team, *, tokens: int = 600, cost: str = "0", when: dt.datetime | None = None) -> UsageEntry:
    row = UsageEntry.objects.create(team=team, role="chat", model="m", input_tokens=tokens, output_tokens=tokens)
    row.cost = Decimal(cost)
    row.save(update_fields=["cost"])
    if when is not None:
        UsageEntry.objects.filter(pk=row.pk).update(created_at=when)
    return row


def _state() -> tuple:
    return (
        Message.objects.count(),
        Summary.objects.count(),
        Channel.objects.count(),
        UsageEntry.objects.count(),
        list(Cursor.objects.values_list("leaf_id", flat=True)),
        AuditEntry.objects.count(),
    )


def _retry_after(response) -> int:
    wait = int(response["Retry-After"])
    assert 1 <= wait <= 31 * 24 * 3600
    return wait


def test_the_month_starts_and_resets_in_utc():
    now = dt.datetime(2026, 12, 31, 23, 30, tzinfo=dt.UTC)
    assert month_start(now) == dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    assert next_reset(now) == dt.datetime(2027, 1, 1, tzinfo=dt.UTC)
    assert next_reset(dt.datetime(2026, 2, 10, tzinfo=dt.UTC)) == dt.datetime(2026, 3, 1, tzinfo=dt.UTC)


def test_spend_counts_this_months_rows_of_the_team_only(team):
    _spent(team, tokens=100, cost="0.5")
    _spent(team, tokens=999, when=month_start(dt.datetime.now(dt.UTC)) - dt.timedelta(seconds=1))
    _spent(None, tokens=999)
    _spent(TeamFactory(), tokens=999)
    spend = team_spend(team=team)
    assert (spend.tokens, spend.cost, spend.tokens_spent) == (200, Decimal("0.5"), False)


def test_a_spent_token_budget_refuses_until_the_reset(team):
    _spent(team)
    now = dt.datetime.now(dt.UTC)
    with pytest.raises(BudgetExhausted) as caught:
        team_budget_check(team_id=team.pk, now=now)
    assert caught.value.message.startswith(f"{REFUSAL_START} (1,200 of its 1,000 tokens)")
    assert caught.value.retry_after == pytest.approx((next_reset(now) - now).total_seconds(), abs=1)
    assert (caught.value.status_code, caught.value.code) == (429, "budget_exhausted")


def test_a_spent_cost_budget_refuses_and_no_budget_never_does(team):
    team.monthly_token_budget, team.monthly_cost_budget = None, Decimal("2")
    team.save()
    _spent(team, tokens=10**6, cost="1.99")
    team_budget_check(team_id=team.pk)
    _spent(team, tokens=1, cost="0.01")
    with pytest.raises(BudgetExhausted, match="2.00 of its 2.00 cost budget"):
        team_budget_check(team_id=team.pk)
    team.monthly_cost_budget = None
    team.save()
    team_budget_check(team_id=team.pk)
    team_budget_check(team_id=None)


def test_a_spent_budget_refuses_a_reply_on_the_page_and_writes_nothing(channel, team, client_user):
    _spent(team)
    before = _state()
    response = client_user.post(reverse("chat:send", args=[channel.pk]), {"content": "One more?"})
    assert response.status_code == 429 and _retry_after(response)
    assert REFUSAL_START in response.content.decode()
    assert _state() == before


def test_a_spent_budget_refuses_a_reply_through_the_api_and_writes_nothing(channel, team, user):
    _spent(team)
    before = _state()
    response = api_client(user).post(f"/api/channels/{channel.pk}/reply/", {"content": "One more?"}, format="json")
    body = response.json()
    assert (response.status_code, body["code"]) == (429, "budget_exhausted")
    assert body == {"detail": body["detail"], "code": "budget_exhausted", "retry_after": _retry_after(response)}
    assert body["detail"].startswith(REFUSAL_START)
    assert _state() == before


def test_a_spent_budget_refuses_v1_in_openais_shape_and_writes_nothing(channel, team, user, chat_model):
    _spent(team)
    _token, key = api_token_create(user=user, name="agent", team=team)
    before = _state()
    body = {"model": chat_model.name, "messages": [{"role": "user", "content": "A new conversation"}]}
    response = Client().post(
        "/v1/chat/completions", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    error = response.json()["error"]
    assert (response.status_code, error["type"], error["code"]) == (429, "insufficient_quota", "insufficient_quota")
    assert error["message"].startswith(REFUSAL_START) and _retry_after(response)
    assert _state() == before


def test_a_spent_budget_refuses_a_manual_compaction_but_not_an_automatic_one(channel, team, user, llm_server):
    _spent(team)
    before = _state()
    with pytest.raises(BudgetExhausted):
        channel_compact(channel=channel, actor=user, keep_recent=2)
    assert _state() == before
    result = channel_compact(channel=channel, actor=None, keep_recent=2, trigger=Summary.Trigger.AUTO)
    assert result.summary is not None and Summary.objects.count() == 1


def test_a_channel_outside_the_team_is_not_limited(team, user, chat_model, client_user):
    _spent(team)
    channel = ChannelFactory(owner=user)
    response = client_user.post(reverse("chat:send", args=[channel.pk]), {"content": "Mine"})
    assert response.status_code == 302 and Message.objects.filter(channel=channel).count() == 2
