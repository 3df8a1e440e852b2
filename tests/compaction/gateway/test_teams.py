"""/v1 through an API token bound to a team: the conversation lands in the team, under its model rules."""

import json

import pytest
from django.test import Client

from chatcore.api_tokens import api_token_create
from chatcore.models import Channel, Message, TeamMembership, UsageEntry
from tests.chatcore.factories import LLMModelFactory, TeamFactory, TeamMembershipFactory


@pytest.fixture
def team(db, user):
    team = TeamFactory(name="Research")
    TeamMembershipFactory(team=team, user=user, role=TeamMembership.Role.MEMBER)
    return team


def _post(key: str, model: str) -> tuple[int, dict]:
    body = {"model": model, "messages": [{"role": "user", "content": "Where were we?"}]}
    response = Client().post(
        "/v1/chat/completions", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    return response.status_code, response.json()


def test_a_conversation_through_a_team_token_lands_in_the_team(chat_model, echo_llm, team, user):
    _token, key = api_token_create(user=user, name="team agent", team=team)
    status, body = _post(key, chat_model.name)
    assert status == 200, body
    channel = Channel.objects.get()
    assert (channel.owner, channel.team_id) == (user, team.pk)
    assert list(UsageEntry.objects.values_list("model", "team_id")) == [(chat_model.name, team.pk)]


def test_a_personal_token_keeps_the_conversation_outside_any_team(chat_model, echo_llm, team, user):
    _token, key = api_token_create(user=user, name="personal")
    assert _post(key, chat_model.name)[0] == 200
    assert Channel.objects.get().team_id is None


def test_a_model_the_team_does_not_allow_is_a_400_naming_model(chat_model, echo_llm, team, user):
    team.allowed_models.set([LLMModelFactory(name="the-allowed-one")])
    _token, key = api_token_create(user=user, name="team agent", team=team)
    status, body = _post(key, chat_model.name)
    assert status == 400 and body["error"]["param"] == "model", body
    assert "the-allowed-one" in body["error"]["message"]
    assert not Channel.objects.exists() and not Message.objects.exists() and not UsageEntry.objects.exists()
    assert echo_llm.requests == []


def test_v1_models_offers_a_restricted_team_only_its_models(chat_model, team, user):
    allowed = LLMModelFactory(name="the-allowed-one")
    _token, personal = api_token_create(user=user, name="personal")
    _token, bound = api_token_create(user=user, name="team agent", team=team)

    def names(key: str) -> list[str]:
        response = Client().get("/v1/models", HTTP_AUTHORIZATION=f"Bearer {key}")
        return sorted(model["id"] for model in response.json()["data"])

    assert names(bound) == names(personal) == sorted([chat_model.name, allowed.name])
    team.allowed_models.set([allowed])
    assert names(bound) == [allowed.name]
    assert names(personal) == sorted([chat_model.name, allowed.name])
