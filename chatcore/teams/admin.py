"""Teams in the admin: staff manage teams, their members, budgets, model access and model roles.

Every save goes through the team services (who may, the audit row), as the API's do."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.forms import BaseInlineFormSet

from chatcore import errors
from chatcore.models import Team, TeamMembership, TeamModelRole
from chatcore.teams import services


class TeamMembershipInline(admin.TabularInline):
    model = TeamMembership
    extra = 0
    fields = ["user", "role"]
    raw_id_fields = ["user"]


class TeamModelRoleInline(admin.TabularInline):
    model = TeamModelRole
    extra = 0
    fields = ["role", "primary", "fallback"]
    verbose_name = "model role of the team (wins over the site's)"
    verbose_name_plural = "model roles of the team (a role not set here: the site's)"


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "monthly_token_budget", "monthly_cost_budget", "hourly_compaction_budget"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["allowed_models"]
    inlines = [TeamMembershipInline, TeamModelRoleInline]

    def save_model(self, request, obj, form, change):
        fields = {name: form.cleaned_data[name] for name in form.changed_data if name != "allowed_models"}
        try:
            if change:
                services.team_update(team=Team.objects.get(pk=obj.pk), actor=request.user, **fields)
            else:
                created = services.team_create(
                    actor=request.user, **{k: form.cleaned_data.get(k) for k in ("name", "slug", *services.BUDGETS)}
                )
                obj.pk = created.pk
        except errors.PermissionDenied as error:
            raise PermissionDenied(error.message) from error

    def save_related(self, request, form, formsets, change):
        team = Team.objects.get(pk=form.instance.pk)
        if "allowed_models" in form.changed_data:
            services.team_update(
                team=team, actor=request.user, allowed_models=list(form.cleaned_data["allowed_models"])
            )
        for formset in formsets:
            self._save_inline(request, team, formset)

    def _save_inline(self, request, team: Team, formset: BaseInlineFormSet) -> None:
        # What Django's own formset.save() would leave for the admin's history message; the services wrote.
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        for inline_form in formset.forms:
            data = inline_form.cleaned_data
            if not data:
                continue
            try:
                if formset.model is TeamMembership:
                    if data.get("DELETE") and data.get("id") is not None:
                        services.team_member_remove(team=team, actor=request.user, user=data["id"].user)
                    elif not data.get("DELETE") and inline_form.has_changed():
                        services.team_member_add(team=team, actor=request.user, user=data["user"], role=data["role"])
                elif data.get("DELETE") and data.get("id") is not None:
                    services.team_role_clear(team=team, actor=request.user, role=data["id"].role)
                elif not data.get("DELETE") and inline_form.has_changed():
                    services.team_role_set(
                        team=team,
                        actor=request.user,
                        role=data["role"],
                        primary=data["primary"],
                        fallback=data.get("fallback"),
                    )
            except (ValidationError, errors.ServiceError) as error:
                self.message_user(request, errors.error_text(error), level=messages.ERROR)

    def delete_model(self, request, obj):
        try:
            services.team_delete(team=obj, actor=request.user)
        except errors.PermissionDenied as error:
            raise PermissionDenied(error.message) from error

    def delete_queryset(self, request, queryset):
        for team in queryset:
            self.delete_model(request, team)
