"""The staff usage dashboard, an admin page (listed on the admin index as
"Usage dashboard"): what compaction saved, how often it ran and failed and
why, how long it takes, which channels are next. Charts are server-rendered
SVG; `?format=csv` downloads the per-day table."""

import csv
import datetime
from decimal import Decimal

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from compaction.dashboard import Dashboard, Filters, usage_dashboard
from compaction.dashboard_charts import overlay_bars, stacked_bars
from compaction.forms import DashboardFilterForm
from compaction.models import UsageDashboard
from compaction.scanner.selectors import compaction_settings_get

TRIGGER_CLASSES = {"manual": "s-manual", "auto": "s-auto", "gateway": "s-gateway"}
# Every person's usage and channel titles: a permission of its own (chatcore.permissions), the page and its CSV alike.
VIEW_PERMISSION = "compaction.view_usage_dashboard"


def _filters(form: DashboardFilterForm) -> Filters:
    data = form.cleaned_data
    persona, team = data.get("persona"), data.get("team")
    return Filters(
        start=data["start"],
        end=data["end"],
        persona_id=persona.pk if persona else None,
        model=data["model"],
        team_id=team.pk if team else None,
    )


def _default_filters() -> Filters:
    end = timezone.now().date()
    return Filters(start=end - datetime.timedelta(days=29), end=end)


def _charts(data: Dashboard) -> dict:
    dates = [day.date for day in data.days]
    series = [
        (
            f"done · {trigger}",
            TRIGGER_CLASSES.get(trigger, "s-other"),
            [d.by_trigger.get(trigger, 0) for d in data.days],
        )
        for trigger in data.triggers
    ]
    series.append(("failed", "s-failed", [d.failed for d in data.days]))
    return {
        "tokens": overlay_bars(
            dates,
            ("tokens before", "s-before", [d.tokens_before for d in data.days]),
            ("tokens after", "s-after", [d.tokens_after for d in data.days]),
            title="Context tokens before and after compaction, per day",
        ),
        "cost": stacked_bars(
            dates,
            [("estimated cost saved", "s-saved", [float(max(d.cost_saved, Decimal(0))) for d in data.days])],
            title="Estimated cost saved per day (net of the compactions' own model calls)",
            unit="$",
        ),
        "compactions": stacked_bars(dates, series, title="Compactions per day by trigger and outcome"),
    }


def _csv(data: Dashboard) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    name = f"compaction-usage-{data.filters.start}-{data.filters.end}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    writer = csv.writer(response)
    triggers = data.triggers
    writer.writerow(
        [
            "date",
            "compactions",
            *(f"done_{t}" for t in triggers),
            "undone",
            "failed",
            *(f"failed_{t}" for t in triggers),
            "tokens_before",
            "tokens_after",
            "tokens_saved",
            "gross_saved_usd",
            "compaction_cost_usd",
            "cost_saved_usd",
        ]
    )
    for day in data.days:
        writer.writerow(
            [
                day.date.isoformat(),
                day.compactions,
                *(day.by_trigger.get(t, 0) for t in triggers),
                day.undone,
                day.failed,
                *(day.failed_by_trigger.get(t, 0) for t in triggers),
                day.tokens_before,
                day.tokens_after,
                day.tokens_saved,
                f"{day.gross_saved:.6f}",
                f"{day.compaction_cost:.6f}",
                f"{day.cost_saved:.6f}",
            ]
        )
    return response


@admin.register(UsageDashboard)
class UsageDashboardAdmin(admin.ModelAdmin):
    """A page, not a table: no add, change or delete; seen (and listed on the index) with VIEW_PERMISSION."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        user = request.user
        return user.is_active and user.is_staff and user.has_perm(VIEW_PERMISSION)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        if not self.has_view_permission(request):  # this view replaces Django's, and with it Django's check
            raise PermissionDenied
        params = request.GET.copy()
        export = params.pop("format", [""])[0] == "csv"
        form = DashboardFilterForm(params)
        # Bad filters are shown with their errors over the default view (the last 30 days, everything).
        filters = _filters(form) if form.is_valid() else _default_filters()
        data = usage_dashboard(filters=filters, settings=compaction_settings_get())
        if export:
            return _csv(data)
        context = {
            **self.admin_site.each_context(request),
            "title": "Usage dashboard",
            "opts": self.model._meta,
            "form": form,
            "data": data,
            "totals": data.totals,
            "charts": _charts(data),
            "csv_query": request.GET.urlencode(),
        }
        return TemplateResponse(request, "admin/compaction/usage_dashboard.html", {**context, **(extra_context or {})})
