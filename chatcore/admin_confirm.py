"""What the product's admin actions over selected rows share.

A confirmation page for the actions that destroy or reset something: Django
asks before "Delete selected"; the product's own destructive or resetting
actions (revert summaries, reset profiles, revoke tokens…) ask the same way:
the first POST shows what will happen to which rows, and only the second
("Yes, I'm sure") runs the action. And one loop that applies a service to
each selected row, so that a row the service refuses is reported, not fatal.
"""

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from chatcore.errors import ServiceError, error_text

Row = TypeVar("Row")
Result = TypeVar("Result")


def confirmed_action(*, description: str, question: str, permissions: Sequence[str]) -> Callable:
    """Decorate an admin action so that it runs only after a confirmation page. The page asks
    `question` and states the consequence: the action's docstring, so that what the action does is
    written once, for the reader of the code and for the person about to confirm it. `permissions`
    are the admin's (`"change"`: the model admin's has_change_permission): without them the action
    is neither offered nor run."""

    def wrap(action: Callable) -> Callable:
        if not action.__doc__:
            raise TypeError(f"{action.__name__}: a confirmed action's docstring states its consequence.")
        consequence = " ".join(action.__doc__.split())

        def confirmed(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
            if request.POST.get("confirmed") == "yes":
                return action(modeladmin, request, queryset)
            opts = modeladmin.model._meta
            context = {
                **modeladmin.admin_site.each_context(request),
                "title": question,
                "question": question,
                "consequence": consequence,
                "objects": list(queryset[:200]),
                "count": queryset.count(),
                "opts": opts,
                "action": action.__name__,
                "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
                "select_across": request.POST.get("select_across", "0"),
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, "chatcore/admin/confirm_action.html", context)

        confirmed.__name__ = action.__name__
        return admin.action(description=description, permissions=permissions)(confirmed)

    return wrap


def each_applied(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    rows: Iterable[Row],
    apply: Callable[[Row], Result],
    *,
    label: Callable[[Row], str] = str,
) -> Iterator[tuple[Row, Result]]:
    """Each row with what `apply` (a service call) returned for it. A row the service refuses is
    reported as a warning, "label: reason", and skipped: one bad row never stops the others, and
    the action reports on the rows that were done."""
    for row in rows:
        try:
            result = apply(row)
        except (ValidationError, ServiceError) as error:
            modeladmin.message_user(request, f"{label(row)}: {error_text(error)}", level=messages.WARNING)
            continue
        yield row, result
