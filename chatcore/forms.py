"""Form parsing for the chat pages. Parsing only: rules live in the services."""

from django import forms

from chatcore import selectors
from chatcore.models import Persona


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


class MessageForm(forms.Form):
    content = forms.CharField(strip=False, widget=forms.Textarea(attrs={"rows": 2}))


class CursorForm(forms.Form):
    message_id = forms.IntegerField(min_value=1)
    step = forms.TypedChoiceField(
        choices=[("-1", "previous"), ("1", "next"), ("0", "this")], coerce=int, required=False, empty_value=None
    )
