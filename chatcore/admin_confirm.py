"""A confirmation page for admin actions that destroy or reset something.

Django asks before "Delete selected"; the product's own destructive or
resetting actions (revert summaries, reset profiles, revoke tokens…) ask the
same way: the first POST shows what will happen to which rows, and only the
second ("Yes, I'm sure") runs the action.
"""

from collections.abc import Callable

from django.contrib import admin
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse


def confirmed_action(*, description: str, question: str, consequence: str) -> Callable:
    """Decorate an admin action so that it runs only after a confirmation page."""

    def wrap(action: Callable) -> Callable:
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
            return TemplateResponse(request, "admin/confirm_action.html", context)

        confirmed.__name__ = action.__name__
        return admin.action(description=description)(confirmed)

    return wrap
