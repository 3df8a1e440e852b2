"""Use cases of teams: create, change, delete; members in and out; a team's own model roles.

Who may do what is checked here, so the API, the pages and the admin refuse alike: a team's admins
manage its name and members; staff holding the team permissions manage everything, budgets,
model access and role assignments included (a team admin raising their own budget would defeat it).
"""

from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction

from chatcore.errors import PermissionDenied
from chatcore.models import ApiToken, LLMModel, ModelRole, Team, TeamMembership, TeamModelRole
from chatcore.permissions import StaffRule
from chatcore.services import audit_record
from chatcore.teams.selectors import is_team_staff, membership_role

CREATE_TEAM = StaffRule(("chatcore.add_team",), "create teams")
CHANGE_TEAM = StaffRule(("chatcore.change_team",), "change a team's budgets, model access and model roles")
DELETE_TEAM = StaffRule(("chatcore.delete_team",), "delete teams")

# What a team's own admins may change; the rest of a team's fields are staff's (CHANGE_TEAM).
ADMIN_FIELDS = frozenset({"name", "slug"})
BUDGETS = ("monthly_token_budget", "monthly_cost_budget", "hourly_compaction_budget")
STAFF_FIELDS = frozenset({*BUDGETS, "allowed_models"})


def team_manage_check(*, team: Team, actor: User) -> None:
    """PermissionDenied unless `actor` is one of the team's admins or staff who manage teams."""
    if is_team_staff(actor):
        return
    if membership_role(team_id=team.pk, user=actor) != TeamMembership.Role.ADMIN:
        raise PermissionDenied("Only the team's admins and staff can manage the team.")


def _clean_name_slug(*, name: Any, slug: Any, team: Team | None) -> dict[str, str]:
    errors: dict[str, str] = {}
    values: dict[str, str] = {}
    if name is not None:
        values["name"] = str(name).strip()[:200]
        if not values["name"]:
            errors["name"] = "Give the team a name."
    if slug is not None:
        values["slug"] = str(slug).strip()
        try:
            validate_slug(values["slug"])
        except ValidationError:
            errors["slug"] = "Letters, digits, hyphens and underscores only."
        else:
            others = Team.objects.filter(slug=values["slug"])
            taken = (others.exclude(pk=team.pk) if team is not None else others).exists()
            if taken:
                errors["slug"] = f"A team with the slug '{values['slug']}' exists already."
    if errors:
        raise ValidationError(errors)
    return values


def _clean_budgets(changes: dict[str, Any]) -> dict[str, Any]:
    errors: dict[str, str] = {}
    for name in (BUDGETS[0], BUDGETS[2]):
        value = changes.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            errors[name] = "A whole number of 0 or more, or null for no limit."
    cost = changes.get("monthly_cost_budget")
    if cost is not None:
        try:
            cost = Decimal(str(cost))
        except ArithmeticError:
            cost = Decimal(-1)
        if not cost.is_finite() or cost < 0:
            errors["monthly_cost_budget"] = "An amount of 0 or more, or null for no limit."
        changes = {**changes, "monthly_cost_budget": cost}
    if errors:
        raise ValidationError(errors)
    return changes


@transaction.atomic
def team_create(
    *,
    actor: User,
    name: str,
    slug: str,
    monthly_token_budget: int | None = None,
    monthly_cost_budget: Decimal | None = None,
    hourly_compaction_budget: int | None = None,
    allowed_models: list[LLMModel] | None = None,
) -> Team:
    CREATE_TEAM.check(actor)
    values = _clean_name_slug(name=name, slug=slug, team=None)
    budgets = _clean_budgets(
        {
            "monthly_token_budget": monthly_token_budget,
            "monthly_cost_budget": monthly_cost_budget,
            "hourly_compaction_budget": hourly_compaction_budget,
        }
    )
    team = Team.objects.create(**values, **budgets)
    if allowed_models:
        team.allowed_models.set(allowed_models)
    audit_record(actor=actor, action="team.create", resource=f"team:{team.pk}", details={"slug": team.slug})
    return team


@transaction.atomic
def team_update(*, team: Team, actor: User, **changes: Any) -> Team:
    unknown = set(changes) - ADMIN_FIELDS - STAFF_FIELDS
    if unknown:
        raise ValidationError(f"Cannot change: {', '.join(sorted(unknown))}.")
    team_manage_check(team=team, actor=actor)
    if not changes:
        return team
    if set(changes) & STAFF_FIELDS:
        CHANGE_TEAM.check(actor)
    values: dict[str, Any] = _clean_name_slug(name=changes.get("name"), slug=changes.get("slug"), team=team)
    values |= {k: v for k, v in _clean_budgets(changes).items() if k in BUDGETS}
    for name, value in values.items():
        setattr(team, name, value)
    if values:
        team.save(update_fields=sorted(values))
    if "allowed_models" in changes:
        team.allowed_models.set(changes["allowed_models"] or [])
    audit_record(actor=actor, action="team.update", resource=f"team:{team.pk}", details={"fields": sorted(changes)})
    return team


@transaction.atomic
def team_delete(*, team: Team, actor: User) -> None:
    """The team goes; its channels stay their owners' without a team, its usage rows keep their numbers."""
    DELETE_TEAM.check(actor)
    audit_record(actor=actor, action="team.delete", resource=f"team:{team.pk}", details={"slug": team.slug})
    team.delete()


@transaction.atomic
def team_member_add(*, team: Team, actor: User, user: User, role: str = TeamMembership.Role.MEMBER) -> TeamMembership:
    """Adds `user` to the team with `role`; a member already there gets the new role."""
    team_manage_check(team=team, actor=actor)
    if role not in TeamMembership.Role.values:
        raise ValidationError({"role": f"One of: {', '.join(TeamMembership.Role.values)}."})
    if not user.is_active:
        raise ValidationError({"user": "That account is inactive."})
    membership, _created = TeamMembership.objects.update_or_create(team=team, user=user, defaults={"role": role})
    audit_record(
        actor=actor,
        action="team.member_add",
        resource=f"team:{team.pk}",
        details={"user": user.pk, "role": role},
    )
    return membership


@transaction.atomic
def team_member_remove(*, team: Team, actor: User, user: User) -> None:
    """The person leaves the team: their tokens bound to it stop working, their channels in it leave it."""
    team_manage_check(team=team, actor=actor)
    removed, _ = TeamMembership.objects.filter(team=team, user=user).delete()
    if not removed:
        raise ValidationError({"user": "Not a member of this team."})
    ApiToken.objects.filter(user=user, team=team).delete()
    user.channels.filter(team=team).update(team=None)
    audit_record(actor=actor, action="team.member_remove", resource=f"team:{team.pk}", details={"user": user.pk})


@transaction.atomic
def team_role_set(
    *, team: Team, actor: User, role: str, primary: LLMModel, fallback: LLMModel | None = None
) -> TeamModelRole:
    """The team's own model for a role: it wins over the site's for every call of the team's channels."""
    CHANGE_TEAM.check(actor)
    if role not in ModelRole.Role.values:
        raise ValidationError({"role": f"One of: {', '.join(ModelRole.Role.values)}."})
    if fallback is not None and fallback.pk == primary.pk:
        raise ValidationError({"fallback": "The fallback must be another model than the primary (or null)."})
    assigned, _created = TeamModelRole.objects.update_or_create(
        team=team, role=role, defaults={"primary": primary, "fallback": fallback}
    )
    audit_record(
        actor=actor,
        action="team.role_set",
        resource=f"team:{team.pk}",
        details={"role": role, "primary": primary.name, "fallback": fallback.name if fallback else None},
    )
    return assigned


@transaction.atomic
def team_role_clear(*, team: Team, actor: User, role: str) -> None:
    """The team's channels go back to the site's assignment of the role."""
    CHANGE_TEAM.check(actor)
    if role not in ModelRole.Role.values:
        raise ValidationError({"role": f"One of: {', '.join(ModelRole.Role.values)}."})
    TeamModelRole.objects.filter(team=team, role=role).delete()
    audit_record(actor=actor, action="team.role_clear", resource=f"team:{team.pk}", details={"role": role})
