"""Admin of automatic compaction: the settings card and the lease rows (scanner)."""

import datetime

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Sum
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django_q.models import Schedule

from chatcore.admin import ReadOnlyAdmin
from chatcore.errors import error_text
from chatcore.widgets import ADMIN_FORMFIELD_OVERRIDES
from compaction import conf
from compaction.models import CompactionLease, CompactionSettings
from compaction.observability.scheduler import STALE_INTERVALS, scheduler_health
from compaction.scanner import selectors as scanner_selectors
from compaction.scanner import services as scanner_services


class CompactionSettingsForm(forms.ModelForm):
    class Meta:
        model = CompactionSettings
        fields = list(scanner_services.SETTINGS_FIELDS)

    def clean(self):
        cleaned = super().clean() or {}
        values = {name: getattr(self.instance, name) for name in scanner_services.SETTINGS_FIELDS}
        values.update({name: value for name, value in cleaned.items() if name in values})
        try:
            scanner_services.compaction_settings_validate(values)
        except ValidationError as error:
            for field, messages_ in error.message_dict.items():
                if field not in self.errors:
                    self.add_error(field, messages_)
        return cleaned


@admin.register(CompactionSettings)
class CompactionSettingsAdmin(admin.ModelAdmin):
    """One row, one card: the list page opens it directly."""

    form = CompactionSettingsForm
    fieldsets = [
        (
            "Auto-compaction",
            {
                "fields": list(scanner_services.SETTINGS_FIELDS),
                "description": "Read afresh at every scan: changes apply from the next tick, no restart. "
                "Channels may opt out or set their own threshold in their settings.",
            },
        ),
        ("Status", {"fields": ["schedule_status", "scheduler_health", "activity_status", "failure_status"]}),
    ]
    readonly_fields = ["schedule_status", "scheduler_health", "activity_status", "failure_status"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        if not self.has_view_or_change_permission(request):  # this view replaces Django's, and with it its check
            raise PermissionDenied
        row = scanner_selectors.compaction_settings_get()
        return HttpResponseRedirect(reverse("admin:compaction_compactionsettings_change", args=[row.pk]))

    def save_model(self, request, obj, form, change):
        changes = {
            name: form.cleaned_data[name] for name in form.changed_data if name in scanner_services.SETTINGS_FIELDS
        }
        try:
            scanner_services.compaction_settings_update(actor=request.user, **changes)
        except ValidationError as error:
            self.message_user(request, error_text(error), level=messages.ERROR)

    @admin.display(description="Scan schedule")
    def schedule_status(self, obj):
        schedule = Schedule.objects.filter(name=conf.SCAN_SCHEDULE_NAME).first()
        if schedule is None:
            return "No schedule yet: run `python manage.py setup_schedules`."
        return (
            f"Every {schedule.minutes} minute(s); next run {timezone.localtime(schedule.next_run):%Y-%m-%d %H:%M:%S}."
        )

    @admin.display(description="Scheduler")
    def scheduler_health(self, obj):
        health = scheduler_health()
        queued = "unknown (the broker did not answer)" if health.queued is None else str(health.queued)
        if health.last_started is None:
            last = "The scanner has not run yet."
        else:
            outcome = "" if health.last_success else " and failed"
            last = (
                f"The scanner last ran {timezone.localtime(health.last_started):%Y-%m-%d %H:%M:%S}, "
                f"took {health.last_seconds:.2f} s{outcome}."
            )
        text = format_html("{} Tasks waiting in the queue: {}.", last, queued)
        if health.stale:
            warning = format_html(
                "<strong class='errornote'>No scan for {} intervals ({} minutes): is the task cluster "
                "(manage.py qcluster) running?</strong> ",
                STALE_INTERVALS,
                STALE_INTERVALS * health.interval_minutes,
            )
            return format_html("{}{}", warning, text)
        return text

    @admin.display(description="Activity")
    def activity_status(self, obj):
        now = timezone.now()
        in_flight, failed = scanner_selectors.auto_attempt_counts(now=now)
        done = scanner_selectors.auto_summaries_count(since=now - datetime.timedelta(hours=1))
        return (
            f"{in_flight} automatic compaction(s) in flight; in the last hour {done} summarie(s) written "
            f"and {failed} attempt(s) failed or unfinished (budget {obj.hourly_budget})."
        )

    @admin.display(description="Failures")
    def failure_status(self, obj):
        failing = CompactionLease.objects.filter(failure_count__gt=0)
        total = failing.aggregate(total=Sum("failure_count"))["total"] or 0
        if not total:
            return "No failures recorded."
        latest = failing.exclude(last_error="").select_related("channel").order_by("-last_finished_at")[:5]
        rows = format_html_join(
            "",
            "<li><a href='{}'>{}</a> ({} failure(s), last {}): {}</li>",
            (
                (
                    reverse("admin:compaction_compactionlease_change", args=[lease.pk]),
                    lease.channel,
                    lease.failure_count,
                    lease.last_outcome,
                    lease.last_error[:200],
                )
                for lease in latest
            ),
        )
        return format_html("{} failure(s) on {} channel(s). Latest errors:<ul>{}</ul>", total, failing.count(), rows)


@admin.register(CompactionLease)
class CompactionLeaseAdmin(ReadOnlyAdmin):
    """The database state of single-flight, cooldown and failures per channel: read-only."""

    formfield_overrides = ADMIN_FORMFIELD_OVERRIDES

    list_display = [
        "channel",
        "holder",
        "expires_at",
        "last_auto_at",
        "last_finished_at",
        "last_outcome",
        "failure_count",
        "short_error",
    ]
    list_filter = ["last_outcome"]
    list_select_related = ["channel"]
    search_fields = ["channel__title", "last_error"]
    ordering = ["-last_finished_at"]

    @admin.display(description="Last error")
    def short_error(self, obj):
        return obj.last_error[:120]
