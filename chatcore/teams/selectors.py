"""Reads of teams, with who may see what: a team's members see it, its admins and staff manage it."""

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Prefetch, QuerySet

from chatcore.errors import NotFound, PermissionDenied
from chatcore.models import ModelRole, Team, TeamMembership, TeamModelRole

MANAGE_TEAMS = "chatcore.change_team"


def is_team_staff(user: User | AnonymousUser | None) -> bool:
    """Staff who manage every team (the admin's rule: staff holding the permission)."""
    return bool(user is not None and user.is_active and user.is_staff and user.has_perm(MANAGE_TEAMS))


def _teams() -> QuerySet[Team]:
    return Team.objects.prefetch_related(
        "allowed_models",
        Prefetch("model_roles", queryset=TeamModelRole.objects.select_related("primary", "fallback")),
    )


def team_list(*, user: User) -> QuerySet[Team]:
    """The teams a person belongs to; every team for staff who manage teams."""
    if is_team_staff(user):
        return _teams().order_by("name", "id")
    return _teams().filter(memberships__user=user).order_by("name", "id")


def team_get(*, team_id: int) -> Team:
    """Any team by id, for staff whose permission was checked already (NotFound when there is none)."""
    team = _teams().filter(pk=team_id).first()
    if team is None:
        raise NotFound("Team not found.")
    return team


def membership_role(*, team_id: int, user: User) -> str | None:
    return TeamMembership.objects.filter(team_id=team_id, user=user).values_list("role", flat=True).first()


def team_manageable_get(*, user: User, team_id: int) -> Team:
    """A team its admin or staff may manage. A plain member is refused (403); to anyone else the
    team does not exist (404), like another person's channel."""
    team = _teams().filter(pk=team_id).first()
    if team is None:
        raise NotFound("Team not found.")
    if is_team_staff(user):
        return team
    role = membership_role(team_id=team.pk, user=user)
    if role is None:
        raise NotFound("Team not found.")
    if role != TeamMembership.Role.ADMIN:
        raise PermissionDenied("Only the team's admins and staff can manage the team.")
    return team


def team_members(*, team: Team) -> QuerySet[TeamMembership]:
    return TeamMembership.objects.filter(team=team).select_related("user").order_by("id")


def member_teams(*, user: User) -> QuerySet[Team]:
    """Teams a person may put their channels in (every team they belong to, whatever their role)."""
    return Team.objects.filter(memberships__user=user).order_by("name", "id")


def team_model_role_get(*, team_id: int, role: str) -> TeamModelRole | None:
    return TeamModelRole.objects.select_related("primary", "fallback").filter(team_id=team_id, role=role).first()


def team_usage_get(*, user: User, team_id: object) -> Team:
    """A team whose usage `user` may read: its admins and staff who manage teams. To anyone else, a plain
    member included, it does not exist (404): what each member spent is the admins' to see."""
    try:
        team_pk = int(str(team_id))
    except ValueError:
        raise NotFound("Team not found.") from None
    team = Team.objects.filter(pk=team_pk).first()
    if team is None or not (
        is_team_staff(user) or membership_role(team_id=team.pk, user=user) == TeamMembership.Role.ADMIN
    ):
        raise NotFound("Team not found.")
    return team


def roles_card() -> dict:
    """The admin's model-roles card: a row for the site and one per team, a cell per role, in two queries."""
    roles = [{"value": value, "label": label} for value, label in ModelRole.Role.choices]
    site = {r.role: r for r in ModelRole.objects.select_related("primary", "fallback")}
    by_team: dict[int, dict[str, TeamModelRole]] = {}
    for assigned in TeamModelRole.objects.select_related("team", "primary", "fallback"):
        by_team.setdefault(assigned.team_id, {})[assigned.role] = assigned
    teams = Team.objects.order_by("name", "id")

    def cells(assigned: dict) -> list[dict]:
        return [
            {
                "own": role["value"] in assigned,
                "primary": assigned[role["value"]].primary if role["value"] in assigned else None,
                "fallback": assigned[role["value"]].fallback if role["value"] in assigned else None,
            }
            for role in roles
        ]

    rows: list[dict[str, object]] = [{"team": None, "cells": cells(site)}]
    rows += [{"team": team, "cells": cells(by_team.get(team.pk, {}))} for team in teams]
    return {"roles": roles, "rows": rows}
