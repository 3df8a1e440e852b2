"""Form widgets and fields the admin uses instead of Django's own: accessible date-time pairs, and JSON that
no database would refuse."""

from typing import Any

from django import forms
from django.contrib.admin.widgets import AdminSplitDateTime
from django.db import models

from chatcore.characters import unstorable_field


class LabelledAdminSplitDateTime(AdminSplitDateTime):
    """The admin's date + time pair, with an accessible name on each box.

    Django labels the pair as a whole and writes "Date:" and "Time:" as bare text, so a screen
    reader announces two unnamed inputs (axe: `label`, critical).
    """

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        for subwidget, part in zip(context["widget"]["subwidgets"], ("date", "time"), strict=True):
            subwidget["attrs"]["aria-label"] = f"{name.replace('_', ' ').capitalize()} ({part})"
        return context


class StorableJSONField(forms.JSONField):
    """JSON typed in a form: its escapes can make a NUL or a lone surrogate (chatcore.characters), refused here
    with where it is rather than by the database."""

    def bound_data(self, data: Any, initial: Any) -> Any:
        """What was typed, shown again as typed when it cannot be stored (its parsed value could not be sent)."""
        bound = super().bound_data(data, initial)
        return forms.fields.InvalidJSONInput(data) if unstorable_field(bound) is not None else bound

    def to_python(self, value: Any) -> Any:
        converted = super().to_python(value)
        if (found := unstorable_field(converted)) is not None:
            where, message = found
            raise forms.ValidationError(f"{where}: {message}" if where else message, code="unstorable")
        return converted


ADMIN_FORMFIELD_OVERRIDES: dict[type[models.Field], dict[str, Any]] = {
    models.DateTimeField: {"widget": LabelledAdminSplitDateTime},
    models.JSONField: {"form_class": StorableJSONField},
}
