"""Form parsing for the chat pages. Parsing only: rules live in the services."""

from typing import Any

from django import forms
from django.contrib.auth.models import User

from chatcore import selectors
from chatcore.models import Persona, Team
from chatcore.teams.selectors import member_teams


class ChannelCreateForm(forms.Form):
    # Not `required` here: the service says what a missing title means, as for the API.
    title = forms.CharField(
        max_length=200,
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "e.g. Release planning", "required": True}),
    )
    persona = forms.ModelChoiceField(queryset=Persona.objects.all(), required=False, empty_label="No persona")
    model = forms.ModelChoiceField(
        queryset=selectors.llm_models_active(), required=False, empty_label="Default chat model"
    )
    team = forms.ModelChoiceField(
        queryset=Team.objects.none(),
        required=False,
        empty_label="No team",
        help_text="The team's models, model access and budget apply; the channel stays yours alone.",
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        """Offers the person's own teams, and no team field to someone in none."""
        super().__init__(*args, **kwargs)
        teams = member_teams(user=user)
        if teams.exists():
            self.fields["team"].queryset = teams  # type: ignore[attr-defined]
        else:
            del self.fields["team"]


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
