"""Form parsing for the chat pages. Parsing only: rules live in the services."""

from typing import Any, cast

from django import forms
from django.contrib.auth.models import User

from chatcore import selectors
from chatcore.models import Persona, Team
from chatcore.teams.access import teams_allowing
from chatcore.teams.selectors import member_teams


class TeamModelSelect(forms.Select):
    """A model select whose options say which of the person's teams allow them (`data-teams`, space-separated
    ids), for the page script to offer only the picked team's models. The service still refuses any other."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.teams_by_model: dict[int, list[int]] = {}

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        pk = getattr(value, "value", None)
        if pk in self.teams_by_model:
            option["attrs"]["data-teams"] = " ".join(str(team) for team in self.teams_by_model[pk])
        return option


def offer_teams_and_models(form: forms.Form, *, user: User) -> None:
    """Gives a form's `team` field the person's own teams and marks each option of its `model` field (a
    TeamModelSelect) with the teams that allow it; someone in no team gets no team field."""
    teams = list(member_teams(user=user).prefetch_related("allowed_models"))
    model = cast(forms.ModelChoiceField, form.fields["model"])
    if teams:
        cast(forms.ModelChoiceField, form.fields["team"]).queryset = member_teams(user=user)
        cast(TeamModelSelect, model.widget).teams_by_model = teams_allowing(teams=teams, models=model.queryset or ())
    else:
        del form.fields["team"]
        model.widget.attrs.pop("data-team-field", None)


class ChannelCreateForm(forms.Form):
    # Not `required` here: the service says what a missing title means, as for the API.
    title = forms.CharField(
        max_length=200,
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "e.g. Release planning", "required": True}),
    )
    persona = forms.ModelChoiceField(queryset=Persona.objects.all(), required=False, empty_label="No persona")
    model = forms.ModelChoiceField(
        queryset=selectors.llm_models_active(),
        required=False,
        empty_label="Default chat model",
        widget=TeamModelSelect(attrs={"data-team-field": "team"}),
    )
    team = forms.ModelChoiceField(
        queryset=Team.objects.none(),
        required=False,
        empty_label="No team",
        help_text="The team's models, model access and budget apply; the channel stays yours alone.",
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        """Offers the person's own teams, and no team field to someone in none; each model says which of those
        teams allow it (no team: every model)."""
        super().__init__(*args, **kwargs)
        offer_teams_and_models(self, user=user)


class MessageForm(forms.Form):
    content = forms.CharField(strip=False, widget=forms.Textarea(attrs={"rows": 2}))


class CursorForm(forms.Form):
    message_id = forms.IntegerField(min_value=1)
    step = forms.TypedChoiceField(
        choices=[("-1", "previous"), ("1", "next"), ("0", "this")], coerce=int, required=False, empty_value=None
    )


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        required=False,  # the service says what a missing name means, as for the API
        widget=forms.TextInput(attrs={"placeholder": "e.g. laptop script", "required": True, "autocomplete": "off"}),
    )
    expires_in_days = forms.TypedChoiceField(
        label="Expires",
        choices=[("", "Never"), ("7", "In 7 days"), ("30", "In 30 days"), ("90", "In 90 days"), ("365", "In a year")],
        coerce=int,
        empty_value=None,
        required=False,
    )
