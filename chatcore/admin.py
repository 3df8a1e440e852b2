import json

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from chatcore import admin_display as d
from chatcore import api_tokens, catalogue, data_control, errors, services
from chatcore.admin_confirm import confirmed_action, each_applied
from chatcore.endpoints import ENDPOINT_FIELDS
from chatcore.metadata.stored import metadata_display
from chatcore.models import (
    ApiToken,
    AuditEntry,
    Channel,
    Cursor,
    LLMModel,
    Message,
    ModelRole,
    Persona,
    Summary,
    UsageEntry,
)
from chatcore.permissions import EXPORT_CHANNEL
from chatcore.teams import admin as teams_admin  # noqa: F401  (registers the team pages)
from chatcore.teams.selectors import roles_card
from chatcore.widgets import ADMIN_FORMFIELD_OVERRIDES

ENDPOINT_LOCKED = "Changing this needs the permission “Can change an LLM model's provider, base URL and key variable”."

# The lists are the admin's main view: at 1280 px the navigation sidebar would
# take a quarter of the width from them (the index and breadcrumbs remain).
admin.site.enable_nav_sidebar = False


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows that are history: viewable, never edited or added by hand."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Persona)
class PersonaAdmin(admin.ModelAdmin):
    list_display = ["symbol", "name", "slug"]
    search_fields = ["name", "slug", "system_prompt"]
    prepopulated_fields = {"slug": ["name"]}


@admin.register(LLMModel)
class LLMModelAdmin(admin.ModelAdmin):
    """Where a model's requests go (provider, base URL, key variable) is shown to everyone but
    editable only with the endpoint permission (chatcore.catalogue); without it a new model
    gets the defaults, and a POST that carries those fields anyway is refused."""

    list_display = ["name", "label", "provider", "context_window", "max_output_tokens", "is_active"]
    list_filter = ["provider", "is_active"]
    search_fields = ["name", "label", "base_url"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}  # a base URL without a scheme: https

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if not catalogue.endpoint_change_allowed(actor=request.user):
            for name in ENDPOINT_FIELDS:  # disabled: the stored (or default) value is kept whatever is sent
                if name in form.base_fields:
                    form.base_fields[name].disabled = True
                    field = form.base_fields[name]
                    field.help_text = f"{field.help_text} {ENDPOINT_LOCKED}".strip()
        return form

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        crafted = [name for name in ENDPOINT_FIELDS if name in request.POST]
        if request.method == "POST" and crafted and not catalogue.endpoint_change_allowed(actor=request.user):
            raise PermissionDenied(f"{ENDPOINT_LOCKED} (sent: {', '.join(crafted)})")
        return super().changeform_view(request, object_id, form_url, extra_context)

    def save_model(self, request, obj, form, change):
        try:
            catalogue.llm_model_save(actor=request.user, model=obj)
        except errors.PermissionDenied as error:
            raise PermissionDenied(error.message) from error


@admin.register(ModelRole)
class ModelRoleAdmin(admin.ModelAdmin):
    list_display = ["role", "primary", "fallback"]
    list_select_related = ["primary", "fallback"]

    def changelist_view(self, request, extra_context=None):
        """The site's assignments, and below them every team's beside the site's (teams.selectors.roles_card)."""
        return super().changelist_view(request, {**(extra_context or {}), "roles_card": roles_card()})


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    formfield_overrides = ADMIN_FORMFIELD_OVERRIDES
    list_display = [
        d.channel_name,
        d.channel_owner,
        "persona",
        "model",
        d.context_used,
        d.since_summary,
        d.channel_state,
        d.when("last_activity_at", "Last activity"),
    ]
    list_filter = [
        "type",
        "archived",
        "ephemeral",
        ("deleted_at", admin.EmptyFieldListFilter),
        "persona",
        "model",
        "team",
    ]
    date_hierarchy = "last_activity_at"
    list_select_related = ["owner", "persona", "model"]
    search_fields = ["title", "owner__username"]
    readonly_fields = [
        "context_tokens",
        "context_messages",
        "context_budget",
        "context_ratio",
        "created_at",
        "last_activity_at",
        "branch_origin",
    ]
    raw_id_fields = ["owner"]
    actions = ["export_json"]

    def has_export_permission(self, request) -> bool:
        """The export action's permission (chatcore.permissions): any person's channel, every branch."""
        return request.user.is_active and request.user.is_staff and request.user.has_perm(EXPORT_CHANNEL)

    @admin.display(description="Branched from")
    def branch_origin(self, obj: Channel) -> str:
        """The source channel and summary, linked, and how the branch opens: the summary, then the copies."""
        if not obj.pk or not (obj.branched_from_id or obj.branched_from_summary_id):
            return "—"
        parts = []
        if obj.branched_from_id:
            source = Channel.objects.filter(pk=obj.branched_from_id).values_list("title", flat=True).first()
            url = reverse("admin:chatcore_channel_change", args=[obj.branched_from_id])
            parts.append(format_html('channel <a href="{}">#{} “{}”</a>', url, obj.branched_from_id, source or "?"))
        if obj.branched_from_summary_id:
            url = reverse("admin:chatcore_summary_change", args=[obj.branched_from_summary_id])
            parts.append(format_html('at <a href="{}">summary #{}</a>', url, obj.branched_from_summary_id))
        copies = Message.objects.filter(channel=obj, metadata__has_key="copied_from").count()
        opening = format_html(
            "; it opens with the carried-over summary, then {} cop{} of the messages after it "
            '(<a href="{}?channel__id__exact={}">messages</a>)',
            copies,
            "y" if copies == 1 else "ies",
            reverse("admin:chatcore_message_changelist"),
            obj.pk,
        )
        return format_html("{}{}", format_html(" ".join(["{}"] * len(parts)), *parts), opening)

    @admin.action(description="Export selected channels as JSON (with messages and summaries)", permissions=["export"])
    def export_json(self, request, queryset):
        documents = [
            data_control.channel_export(channel=channel, actor=request.user)
            for channel in queryset.select_related("owner", "persona", "model").order_by("pk")
        ]
        response = HttpResponse(
            json.dumps(documents, ensure_ascii=False, indent=2), content_type="application/json; charset=utf-8"
        )
        response["Content-Disposition"] = 'attachment; filename="channels-export.json"'
        return response

    def get_deleted_objects(self, objs, request):
        """Deleting a channel purges its history (messages and summaries are
        read-only in the admin, so Django's per-row permission check would
        refuse); the confirmation page shows counts, not every row."""
        objs = list(objs)
        counts = {
            "channels": len(objs),
            "messages": Message.objects.filter(channel__in=objs).count(),
            "summaries": Summary.objects.filter(channel__in=objs).count(),
        }
        return [str(obj) for obj in objs], counts, set(), []

    def delete_model(self, request, obj):
        data_control.channel_purge(channel=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        for channel in queryset:
            data_control.channel_purge(channel=channel, actor=request.user)

    def save_model(self, request, obj, form, change):
        if not change:
            return super().save_model(request, obj, form, change)
        fields = {
            name: form.cleaned_data[name]
            for name in form.changed_data
            if name in {"title", "persona", "model", "settings", "archived"}
        }
        fields["settings"] = form.cleaned_data["settings"]
        try:
            services.channel_update(channel=Channel.objects.get(pk=obj.pk), actor=request.user, **fields)
        except Exception as error:  # shown to the staff member, nothing saved
            self.message_user(request, str(error), level=messages.ERROR)


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        d.channel_title,
        "role",
        d.message_excerpt,
        "depth",
        "tokens",
        d.when("created_at", "Created"),
        "provenance",
    ]
    list_filter = ["role"]
    date_hierarchy = "created_at"
    list_select_related = ["channel"]
    search_fields = ["content"]
    raw_id_fields = ["channel", "parent", "author"]
    readonly_fields = ["provenance"]

    @admin.display(description="Provenance")
    def provenance(self, obj: Message) -> str:
        """Where a branched channel's message comes from: the carried-over summary, or a copy of an original."""
        metadata = metadata_display(obj.metadata)  # links only from ids a URL can be made of
        if metadata.get("kind") == "branch_summary" and metadata["source_channel"]:
            source = metadata.get("source_channel")
            summary = metadata.get("source_summary")
            link = format_html(
                '<a href="{}">channel #{}</a>', reverse("admin:chatcore_channel_change", args=[source]), source
            )
            if summary:
                url = reverse("admin:chatcore_summary_change", args=[summary])
                return format_html('carried-over summary of {} (<a href="{}">summary #{}</a>)', link, url, summary)
            return format_html("carried-over summary of {} (an unsaved draft)", link)
        copied = metadata.get("copied_from")
        if isinstance(copied, dict) and copied.get("message"):
            url = reverse("admin:chatcore_message_change", args=[copied["message"]])
            return format_html(
                'copy of <a href="{}">message #{}</a> of channel #{}', url, copied["message"], copied.get("channel")
            )
        return "—"


@admin.register(Cursor)
class CursorAdmin(ReadOnlyAdmin):
    list_display = ["user", "channel", "leaf_id", "summary_id", "updated_at"]
    list_select_related = ["user", "channel"]


@admin.register(Summary)
class SummaryAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        d.channel_title,
        "trigger",
        "profile_slug",
        "model",
        "messages_covered",
        d.tokens_before_after,
        "edited",
        d.in_force,
        d.when("created_at", "Created"),
    ]
    list_filter = ["trigger", "model", "used_fallback", "edited", ("reverted_at", admin.EmptyFieldListFilter)]
    list_select_related = ["channel"]
    search_fields = ["content", "channel__title"]
    date_hierarchy = "created_at"
    actions = ["revert_selected"]
    fields = [
        "channel",
        "through_message",
        "previous",
        "content",
        "trigger",
        "profile_slug",
        "model",
        "used_fallback",
        ("tokens_before", "tokens_after", "tokens"),
        ("input_tokens", "output_tokens"),
        "messages_covered",
        "formatted_extracts",
        "edited",
        "reverted_at",
        "quotes_purged_at",
        "created_by",
        "created_at",
    ]
    readonly_fields = ["formatted_extracts"]

    def has_change_permission(self, request, obj=None):
        """A summary is never edited here; "change summary" is what its actions need (revert, branch)."""
        return obj is None and admin.ModelAdmin.has_change_permission(self, request)

    @admin.display(description="Extracts")
    def formatted_extracts(self, obj: Summary):
        return d.formatted_extracts(obj)

    @confirmed_action(
        description="Revert (undo) selected summaries", question="Revert these summaries?", permissions=["change"]
    )
    def revert_selected(self, request, queryset):
        """The messages each summary stands for go back into the channel's context at once
        (nothing is deleted; a new compaction can summarize them again)."""
        rows = queryset.filter(reverted_at__isnull=True)
        reverted = each_applied(
            self, request, rows, lambda row: services.summary_revert(summary=row, actor=request.user)
        )
        done = len(list(reverted))
        self.message_user(request, f"Reverted {done} summar{'y' if done == 1 else 'ies'}.")


@admin.register(UsageEntry)
class UsageEntryAdmin(ReadOnlyAdmin):
    list_display = [
        d.when("created_at", "When"),
        d.usage_user,
        d.channel_title,
        "role",
        "model",
        "trigger",
        d.usage_tokens,
        d.usage_cost,
        d.usage_duration,
        d.usage_outcome,
    ]
    list_filter = ["role", "trigger", "success", "model", "team"]
    list_select_related = ["user", "channel"]
    search_fields = ["model", "error"]
    date_hierarchy = "created_at"


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = [d.when("created_at", "When"), d.audit_actor, "action", "resource", "redactions"]
    list_filter = ["action"]
    list_select_related = ["actor"]
    search_fields = ["actor__username", "actor_label", "action", "resource"]
    date_hierarchy = "created_at"

    @admin.display(description="Secrets redacted")
    def redactions(self, obj: AuditEntry) -> str:
        """The secrets hidden by the audited operation, by kind (a compaction records them in its details)."""
        counts = (obj.details or {}).get("redactions") if isinstance(obj.details, dict) else None
        if not isinstance(counts, dict) or not counts:
            return "—"
        return ", ".join(f"{kind} × {count}" for kind, count in sorted(counts.items()))


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    """People make their own tokens (the key is shown to them once); staff see
    who has which, by prefix, and may revoke (delete) them."""

    list_display = ["name", "user", "prefix", "created", "expiry", "last_used_at"]
    list_select_related = ["user"]
    list_filter = [("expiry", admin.EmptyFieldListFilter)]
    search_fields = ["name", "token_key", "user__username"]
    date_hierarchy = "created"
    fields = ["name", "user", "token_key", "created", "expiry", "last_used_at"]

    def has_delete_permission(self, request, obj=None):
        """Revoking someone's token is "delete API token" (the rows themselves are never edited)."""
        return admin.ModelAdmin.has_delete_permission(self, request, obj)

    def delete_model(self, request, obj):
        api_tokens.api_token_revoke(token=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        for token in queryset:
            api_tokens.api_token_revoke(token=token, actor=request.user)
