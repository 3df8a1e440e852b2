"""Which team a person may put a channel in, and which models a team's channels may choose.

Both refusals are a 400 naming the field, so a client sees which value to change."""

from collections.abc import Iterable

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from chatcore.models import LLMModel, Team, TeamMembership
from chatcore.selectors import llm_models_active


def channel_team_check(*, owner: User, team: Team | None) -> None:
    """A channel may be in one of its owner's own teams (any role), or in none."""
    if team is not None and not TeamMembership.objects.filter(team=team, user=owner).exists():
        raise ValidationError({"team": "You can only put a channel in a team you belong to."})


def allowed_model_names(*, team: Team | None) -> list[str] | None:
    """The models a team's channels may choose by name, or None when every active model is allowed."""
    if team is None:
        return None
    names = sorted(model.name for model in team.allowed_models.all())
    return names or None


def models_allowed(*, team: Team | None) -> QuerySet[LLMModel]:
    """The active models a channel in `team` may choose, by the rule model_allowed_check refuses by: what a
    page offers for a team channel is exactly what its check lets through."""
    names = allowed_model_names(team=team)
    models = llm_models_active().order_by("name", "id")
    return models if names is None else models.filter(name__in=names)


def teams_allowing(*, teams: Iterable[Team], models: Iterable[LLMModel]) -> dict[int, list[int]]:
    """For each model, the ids of the `teams` whose channels may choose it (the same rule), so a page where the
    team is picked beside the model can offer only the picked team's models. `teams` should have their
    `allowed_models` prefetched: no query is made per team."""
    allowed = [(team.pk, allowed_model_names(team=team)) for team in teams]
    return {model.pk: [pk for pk, names in allowed if names is None or model.name in names] for model in models}


def model_allowed_check(*, team: Team | None, model: LLMModel | None, field: str = "model") -> None:
    """A team that restricts its models refuses any other (a 400 naming `field`); no model asked: the role's."""
    if model is None:
        return
    allowed = allowed_model_names(team=team)
    if allowed is not None and model.name not in allowed:
        raise ValidationError(
            {field: f"The team {team} allows only these models: {', '.join(allowed)}; '{model.name}' is not one."}
        )


def acting_team(*, bound: Team | None, values: dict) -> dict:
    """A call through a token bound to a team acts in that team: `values` get it as their `team` when they name
    none, and naming another team is a 400 (the token cannot reach beyond its team)."""
    if bound is None:
        return values
    if "team" not in values:
        return {**values, "team": bound}
    if values["team"] is None or values["team"].pk != bound.pk:
        raise ValidationError({"team": f"This API token acts in the team {bound}: its channels belong to it."})
    return values
