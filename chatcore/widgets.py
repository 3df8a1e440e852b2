"""Form widgets that fix accessibility gaps in Django's own."""

from typing import Any

from django.contrib.admin.widgets import AdminSplitDateTime
from django.db import models


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


ADMIN_FORMFIELD_OVERRIDES: dict[type[models.Field], dict[str, Any]] = {
    models.DateTimeField: {"widget": LabelledAdminSplitDateTime},
}
