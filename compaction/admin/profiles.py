"""Admin of compaction profiles, and the "compact now" action on channels.

Every change goes through the services (the same ones the API calls); the
admin only parses and reports.
"""

import json

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.exceptions import NotRegistered
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from chatcore.admin_confirm import confirmed_action, each_applied
from chatcore.errors import ServiceError, error_text
from chatcore.models import Channel, Summary
from compaction import services
from compaction.builtins import OPTION_FIELDS
from compaction.models import CompactionProfile
from compaction.services import CompactionResult
from compaction.services.profiles import EDITABLE_FIELDS


def _name(profile: CompactionProfile) -> str:
    return profile.name


class ProfileImportForm(forms.Form):
    file = forms.FileField(help_text="A JSON file made by the 'Export as JSON' action.")


@admin.register(CompactionProfile)
class CompactionProfileAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "slug",
        "scope",
        "is_default",
        "is_builtin",
        "keep_recent",
        "max_summary_tokens",
        "model",
    ]
    list_display_links = ["__str__"]
    list_filter = ["is_builtin", "is_default", "persona", "team"]
    list_select_related = ["persona", "team", "model"]
    search_fields = ["name", "slug", "description", "instructions"]
    readonly_fields = ["is_builtin", "created_at", "updated_at", "offline_rendering"]
    fieldsets = [
        (None, {"fields": ["name", "slug", "symbol", "description", "persona", "team", "is_default", "is_builtin"]}),
        (
            "Prompt",
            {
                "fields": ["system_prompt", "instructions"],
                "description": "The request template may use {transcript} (required), {previous_summary}, "
                "{focus} and {persona}; write {{ and }} for literal braces.",
            },
        ),
        (
            "Options",
            {"fields": [*OPTION_FIELDS, "model"]},
        ),
        ("Without a model", {"fields": ["offline_rendering"]}),
        ("History", {"fields": ["created_at", "updated_at"]}),
    ]
    actions = ["reset_to_shipped", "duplicate", "export_json"]

    @admin.display(description="Offline summarizer")
    def offline_rendering(self, obj: CompactionProfile) -> str:
        """What the built-in offline summarizer makes of this profile, and what it cannot follow, in plain words."""
        from compaction.summarizers.offline.profiles import offline_notes

        if obj is None or not obj.pk:
            return "Save the profile to see how the offline summarizer follows it."
        return format_html_join("", "<p>{}</p>", ((note,) for note in offline_notes(obj)))

    change_list_template = "admin/compaction/compactionprofile/change_list.html"

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.is_builtin:
            fields.append("slug")
        return fields

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.is_builtin:
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request, obj, form, change):
        fields = {name: form.cleaned_data[name] for name in EDITABLE_FIELDS if name in form.cleaned_data}
        try:
            if change:
                current = CompactionProfile.objects.get(pk=obj.pk)
                changed = {name: value for name, value in fields.items() if name in form.changed_data}
                saved = services.profile_update(profile=current, actor=request.user, **changed)
            else:
                saved = services.profile_create(actor=request.user, **fields)
        except (ValidationError, ServiceError) as error:
            self.message_user(request, f"Not saved: {error_text(error)}", level=messages.ERROR)
            return
        obj.pk = saved.pk

    def delete_model(self, request, obj):
        try:
            services.profile_delete(profile=obj, actor=request.user)
        except (ValidationError, ServiceError) as error:
            self.message_user(request, f"Not deleted: {error_text(error)}", level=messages.ERROR)

    def delete_queryset(self, request, queryset):
        for profile in queryset:
            self.delete_model(request, profile)

    @admin.display(description="Scope", ordering="persona__name")
    def scope(self, obj: CompactionProfile) -> str:
        if obj.persona_id:
            return f"persona {obj.persona}"
        return f"team {obj.team}" if obj.team_id else "global"

    @confirmed_action(
        description="Reset selected built-in profiles to their shipped text",
        question="Reset these profiles to their shipped text?",
        permissions=["change"],
    )
    def reset_to_shipped(self, request, queryset):
        """Their prompts and options are replaced by the text the product ships with; any edits to
        them are lost (custom profiles are left as they are)."""
        reset = each_applied(
            self, request, queryset, lambda row: services.profile_reset(profile=row, actor=request.user), label=_name
        )
        self.message_user(request, f"Reset {len(list(reset))} profile(s) to their shipped text.")

    @admin.action(description="Duplicate selected profiles (editable copies)", permissions=["add"])
    def duplicate(self, request, queryset):
        copies = [services.profile_duplicate(profile=profile, actor=request.user) for profile in queryset]
        self.message_user(request, "Created " + ", ".join(copy.slug for copy in copies) + ".")

    @admin.action(description="Export selected profiles as JSON", permissions=["view"])
    def export_json(self, request, queryset):
        document = services.profile_export(profiles=queryset.select_related("model", "persona").order_by("pk"))
        response = HttpResponse(
            json.dumps(document, ensure_ascii=False, indent=2), content_type="application/json; charset=utf-8"
        )
        response["Content-Disposition"] = 'attachment; filename="compaction-profiles.json"'
        return response

    def get_urls(self):
        custom = [
            path("import/", self.admin_site.admin_view(self.import_view), name="compaction_compactionprofile_import")
        ]
        return custom + super().get_urls()

    def import_view(self, request):
        if not (self.has_add_permission(request) and self.has_change_permission(request)):
            raise PermissionDenied  # an import creates some profiles and updates others
        form = ProfileImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            try:
                imported = services.profile_import(data=form.cleaned_data["file"].read(), actor=request.user)
            except (ValidationError, ServiceError) as error:
                form.add_error("file", error_text(error))
            else:
                self.message_user(
                    request, f"Imported {len(imported)} profile(s): " + ", ".join(p.slug for p in imported) + "."
                )
                return HttpResponseRedirect(reverse("admin:compaction_compactionprofile_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "title": "Import compaction profiles",
            "form": form,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/compaction/compactionprofile/import.html", context)


@admin.action(description="Compact now (summarize the older part of the owner's active path)", permissions=["change"])
def compact_now(modeladmin, request, queryset):
    rows = queryset.select_related("owner")

    def compact(channel: Channel) -> CompactionResult:
        return services.channel_compact(channel=channel, actor=request.user, trigger="manual")

    for channel, result in each_applied(modeladmin, request, rows, compact):
        modeladmin.message_user(
            request,
            f"{channel}: messages {result.messages_before:,} → {result.messages_after:,}, "
            f"tokens {result.tokens_before:,} → {result.tokens_after:,} "
            f"(summary #{result.summary.pk if result.summary else '?'}, "
            f"{result.model or 'edited'}).",
        )


@admin.action(
    description="Branch into a new channel (the summary, then copies of the messages after it)", permissions=["change"]
)
def branch_from_summary(modeladmin, request, queryset):
    rows = queryset.select_related("channel", "channel__owner", "channel__persona", "channel__model")

    def branch_one(summary: Summary) -> Channel:
        return services.summary_branch(channel=summary.channel, actor=request.user, summary=summary)

    for summary, branch in each_applied(modeladmin, request, rows, branch_one, label=lambda s: f"Summary #{s.pk}"):
        url = reverse("admin:chatcore_channel_change", args=[branch.pk])
        copied = branch.context_messages - 1
        modeladmin.message_user(
            request,
            format_html(
                'Summary #{}: branched into <a href="{}">{}</a> (channel #{}; the summary and {} copied message{}).',
                summary.pk,
                url,
                branch.title,
                branch.pk,
                copied,
                "" if copied == 1 else "s",
            ),
        )


def _add_actions() -> None:
    """chatcore's admin stays unaware of compaction: the actions are attached here."""
    for model, action in ((Channel, compact_now), (Summary, branch_from_summary)):
        try:
            model_admin = admin.site.get_model_admin(model)
        except NotRegistered:
            continue
        if action not in (model_admin.actions or []):
            model_admin.actions = [*(model_admin.actions or []), action]


_add_actions()
