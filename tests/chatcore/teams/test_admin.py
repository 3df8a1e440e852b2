"""Teams in the admin: the model-roles card shows the site's and every team's assignments side by side;
saving a team goes through the team services."""

import re

from django.test import Client

from chatcore.models import AuditEntry, ModelRole, Team, TeamMembership, TeamModelRole
from tests.chatcore.factories import LLMModelFactory, ModelRoleFactory, TeamFactory, UserFactory


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def test_the_model_roles_card_shows_site_and_teams_side_by_side(db, staff_user):
    ModelRoleFactory(role=ModelRole.Role.CHAT, primary=LLMModelFactory(name="site-chat"))
    research, quiet = TeamFactory(name="Research"), TeamFactory(name="Quiet")
    TeamModelRole.objects.create(
        team=research,
        role=ModelRole.Role.UTILITY,
        primary=LLMModelFactory(name="team-utility"),
        fallback=LLMModelFactory(name="team-fallback"),
    )
    client = Client()
    client.force_login(staff_user)
    page = client.get("/admin/chatcore/modelrole/").content.decode()
    card = _text(page[page.index('id="roles-side-by-side"') :])
    assert "Scope Chat Utility (summaries)" in card
    assert "Site (global) site-chat offline" in card
    assert "Quiet site's site's" in card and "Research site's team-utility → team-fallback" in card
    assert card.index("Site (global)") < card.index("Quiet") < card.index("Research")
    assert quiet.pk


def test_staff_create_a_team_with_members_in_the_admin(db, staff_user):
    member = UserFactory()
    client = Client()
    client.force_login(staff_user)
    form = {
        "name": "Research",
        "slug": "research",
        "monthly_token_budget": "1000",
        "monthly_cost_budget": "",
        "hourly_compaction_budget": "",
        "memberships-TOTAL_FORMS": "1",
        "memberships-INITIAL_FORMS": "0",
        "memberships-0-user": str(member.pk),
        "memberships-0-role": "admin",
        "model_roles-TOTAL_FORMS": "0",
        "model_roles-INITIAL_FORMS": "0",
    }
    response = client.post("/admin/chatcore/team/add/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    team = Team.objects.get()
    assert (team.slug, team.monthly_token_budget) == ("research", 1000)
    assert TeamMembership.objects.get(team=team).user == member
    assert set(AuditEntry.objects.values_list("action", flat=True)) == {"team.create", "team.member_add"}


def test_staff_change_members_and_a_teams_model_role_in_the_admin(db, staff_user):
    team = TeamFactory(name="Research", slug="research")
    stays, leaves = UserFactory(), UserFactory()
    kept = TeamMembership.objects.create(team=team, user=stays, role="member")
    gone = TeamMembership.objects.create(team=team, user=leaves, role="member")
    model = LLMModelFactory(name="team-utility")
    client = Client()
    client.force_login(staff_user)
    form = {
        "name": "Research",
        "slug": "research",
        "monthly_token_budget": "",
        "monthly_cost_budget": "",
        "hourly_compaction_budget": "",
        "memberships-TOTAL_FORMS": "2",
        "memberships-INITIAL_FORMS": "2",
        "memberships-0-id": str(kept.pk),
        "memberships-0-team": str(team.pk),
        "memberships-0-user": str(stays.pk),
        "memberships-0-role": "admin",
        "memberships-1-id": str(gone.pk),
        "memberships-1-team": str(team.pk),
        "memberships-1-user": str(leaves.pk),
        "memberships-1-role": "member",
        "memberships-1-DELETE": "on",
        "model_roles-TOTAL_FORMS": "1",
        "model_roles-INITIAL_FORMS": "0",
        "model_roles-0-role": "utility",
        "model_roles-0-primary": str(model.pk),
    }
    response = client.post(f"/admin/chatcore/team/{team.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert list(TeamMembership.objects.values_list("user_id", "role")) == [(stays.pk, "admin")]
    assert list(TeamModelRole.objects.values_list("team_id", "role", "primary_id")) == [(team.pk, "utility", model.pk)]
    actions = set(AuditEntry.objects.values_list("action", flat=True))
    assert actions == {"team.member_add", "team.member_remove", "team.role_set"}
