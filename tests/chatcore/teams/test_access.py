"""Which models a team's channels may choose: the pages' offer and the services' refusal follow one rule."""

import pytest
from django.core.exceptions import ValidationError

from chatcore.models import LLMModel
from chatcore.teams.access import model_allowed_check, models_allowed, teams_allowing
from tests.chatcore.factories import LLMModelFactory, TeamFactory


@pytest.fixture
def models(db) -> dict[str, LLMModel]:
    return {name: LLMModelFactory(name=name) for name in ("alpha", "beta", "gamma")}


def names(queryset) -> list[str]:
    return [model.name for model in queryset if model.name in {"alpha", "beta", "gamma"}]


def test_a_team_that_restricts_allows_its_active_models_only_and_the_check_agrees(models):
    team = TeamFactory(name="Research")
    LLMModel.objects.filter(pk=models["gamma"].pk).update(is_active=False)
    team.allowed_models.set([models["beta"], models["gamma"]])
    assert names(models_allowed(team=team)) == ["beta"]
    model_allowed_check(team=team, model=models["beta"])
    with pytest.raises(ValidationError) as refused:
        model_allowed_check(team=team, model=models["alpha"])
    assert refused.value.message_dict == {
        "model": ["The team Research allows only these models: beta, gamma; 'alpha' is not one."]
    }


def test_no_team_or_a_team_without_a_list_allows_every_active_model(models):
    every = list(LLMModel.objects.filter(is_active=True).order_by("name", "id"))
    assert list(models_allowed(team=None)) == every
    assert list(models_allowed(team=TeamFactory())) == every


def test_each_model_names_the_teams_that_allow_it_without_a_query_per_team(models, django_assert_num_queries):
    narrow, open_team = TeamFactory(), TeamFactory()
    narrow.allowed_models.set([models["alpha"]])
    teams = list(
        type(narrow).objects.filter(pk__in=[narrow.pk, open_team.pk]).order_by("pk").prefetch_related("allowed_models")
    )
    listed = list(models.values())
    with django_assert_num_queries(0):
        allowing = teams_allowing(teams=teams, models=listed)
    assert allowing == {
        models["alpha"].pk: [narrow.pk, open_team.pk],
        models["beta"].pk: [open_team.pk],
        models["gamma"].pk: [open_team.pk],
    }
