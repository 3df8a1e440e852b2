"""Form parsing for the compaction pages. Parsing only: the rules (ranges,
allowed settings, what may be compacted) live in the services."""

import datetime
from typing import Any, cast

from django import forms
from django.contrib.auth.models import User
from django.utils import timezone

from chatcore.forms import TeamModelSelect, offer_teams_and_models
from chatcore.models import Channel, LLMModel, Persona, Team
from chatcore.teams.access import models_allowed


class CompactForm(forms.Form):
    ACTIONS = [("preview", "Preview"), ("now", "Summarize now"), ("replace", "Replace"), ("branch", "Branch")]

    profile = forms.ChoiceField(required=False, label="Profile")
    focus = forms.CharField(required=False, label="Focus (optional)", widget=forms.Textarea(attrs={"rows": 2}))
    keep_recent = forms.IntegerField(required=False, min_value=0, label="Keep the newest messages as they are")
    draft = forms.CharField(required=False, strip=False, label="Draft summary")
    # The preview's signed word of who wrote the draft (compaction.services.origin): handed back, never believed
    # beyond what its signature covers.
    draft_token = forms.CharField(required=False, max_length=1000, widget=forms.HiddenInput)
    through_message_id = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)
    action = forms.ChoiceField(choices=ACTIONS, required=False, initial="preview")

    def __init__(self, *args, profiles=(), **kwargs):
        super().__init__(*args, **kwargs)
        # Empty means "the channel's default", which the service resolves.
        field = cast(forms.ChoiceField, self.fields["profile"])
        field.choices = [("", "default")] + [(p.slug, p.name) for p in profiles]

    def clean_draft(self) -> str:
        """A browser sends a textarea's lines with CRLF: the draft's own line endings are LF."""
        return self.cleaned_data["draft"].replace("\r\n", "\n")


class ChannelCompactionForm(forms.Form):
    AUTO = [("", "Use the site-wide setting"), ("on", "On"), ("off", "Off")]

    auto_compaction = forms.ChoiceField(choices=AUTO, required=False, label="Automatic compaction")
    threshold_percent = forms.FloatField(
        required=False, label="Threshold", help_text="Share of the model's context window that starts a compaction."
    )
    model = forms.ModelChoiceField(
        queryset=LLMModel.objects.none(),
        required=False,
        empty_label="Default chat model",
        widget=TeamModelSelect(attrs={"data-team-field": "team"}),
    )
    team = forms.ModelChoiceField(queryset=Team.objects.none(), required=False, empty_label="No team")

    def __init__(self, *args: Any, user: User, channel: Channel, **kwargs: Any) -> None:
        """Offers the models the channel's team allows (every active one outside a team), and the person's own
        teams to move the channel between (no team field to someone in none)."""
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["model"]).queryset = models_allowed(team=channel.team)
        offer_teams_and_models(self, user=user)

    def changes(self, channel: Channel) -> dict:
        """channel_update's keywords: the settings, and the model and team when they changed. A post without
        the model field (a script, an older page) leaves the model as it is."""
        changes: dict[str, Any] = {"settings": self.settings_value()}
        if "model" in self.data and self.cleaned_data.get("model") != channel.model:
            changes["model"] = self.cleaned_data.get("model")
        if "team" in self.fields and self.cleaned_data.get("team") != channel.team:
            changes["team"] = self.cleaned_data.get("team")
        return changes

    def settings_value(self) -> dict:
        """The API's `settings` object: None removes a key (back to the site-wide value)."""
        auto = self.cleaned_data.get("auto_compaction") or ""
        percent = self.cleaned_data.get("threshold_percent")
        return {
            "auto_compaction": {"on": True, "off": False}.get(auto),
            "compaction_threshold": None if percent is None else round(percent / 100, 4),
        }


class DashboardFilterForm(forms.Form):
    """The usage dashboard's filters (a GET form). Parsing only; empty means the last 30 days, everyone."""

    start = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), label="From")
    end = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), label="To")
    persona = forms.ModelChoiceField(
        queryset=Persona.objects.order_by("name"), required=False, empty_label="All personas"
    )
    model = forms.ChoiceField(required=False, label="Model")
    team = forms.ModelChoiceField(queryset=Team.objects.order_by("name"), required=False, empty_label="All teams")

    MAX_DAYS = 366

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        names = LLMModel.objects.exclude(name="offline").order_by("name").values_list("name", flat=True)
        field = cast(forms.ChoiceField, self.fields["model"])
        field.choices = [("", "All models"), ("offline", "offline"), *((n, n) for n in names)]

    def clean(self) -> dict:
        cleaned = super().clean() or {}
        today = timezone.now().date()
        end = cleaned.get("end") or today
        start = cleaned.get("start") or end - datetime.timedelta(days=29)
        if start > end:
            raise forms.ValidationError("The start date is after the end date.")
        if (end - start).days >= self.MAX_DAYS:
            raise forms.ValidationError(f"Choose at most {self.MAX_DAYS} days.")
        cleaned["start"], cleaned["end"] = start, end
        return cleaned


class ImportForm(forms.Form):
    FORMATS = [
        ("chatgpt", "ChatGPT (conversations.json or the export ZIP)"),
        ("claude", "Claude (conversations.json or the export ZIP)"),
        ("openwebui", "Open WebUI (chat export JSON)"),
        ("openai-messages", "OpenAI messages (JSON or JSON Lines)"),
    ]

    file = forms.FileField(label="Export file")
    format = forms.ChoiceField(choices=FORMATS, label="Exported from")
