"""Teams over the API: who may do what (admins and staff; members 403; others 404), whole bodies,
nothing written on refusal; channels and tokens in a team."""

import pytest

from chatcore.api_tokens import api_token_create
from chatcore.models import ApiToken, AuditEntry, Channel, Team, TeamMembership, TeamModelRole, UsageEntry
from tests.chatcore.factories import (
    ChannelFactory,
    LLMModelFactory,
    TeamFactory,
    TeamMembershipFactory,
    UserFactory,
)
from tests.chatcore.test_api import channel_body, fields_body
from tests.conftest import api_client


def team_body(team: Team) -> dict:
    body = fields_body(team, "id name slug monthly_token_budget hourly_compaction_budget created_at")
    cost = team.monthly_cost_budget
    body["monthly_cost_budget"] = float(cost) if cost is not None else None
    body["allowed_models"] = sorted(m.name for m in team.allowed_models.all())
    body["roles"] = [
        {"role": r.role, "primary": r.primary.name, "fallback": r.fallback.name if r.fallback else None}
        for r in team.model_roles.order_by("role")
    ]
    ordered = ["id", "name", "slug", "monthly_token_budget", "monthly_cost_budget", "hourly_compaction_budget"]
    return {key: body[key] for key in [*ordered, "allowed_models", "roles", "created_at"]}


def member_body(membership: TeamMembership) -> dict:
    membership.refresh_from_db()
    return {
        "user": membership.user_id,
        "username": membership.user.username,
        "role": membership.role,
        "created_at": fields_body(membership, "created_at")["created_at"],
    }


def page(results: list) -> dict:
    return {"count": len(results), "next": None, "previous": None, "results": results}


@pytest.fixture
def team(db):
    return TeamFactory(name="Research", slug="research")


@pytest.fixture
def admin(team):
    return TeamMembershipFactory(team=team, role=TeamMembership.Role.ADMIN).user


@pytest.fixture
def member(team):
    return TeamMembershipFactory(team=team).user


def _state() -> tuple:
    return (
        list(Team.objects.order_by("pk").values_list("name", "slug", "monthly_token_budget", "monthly_cost_budget")),
        list(TeamMembership.objects.order_by("pk").values_list("team_id", "user_id", "role")),
        list(TeamModelRole.objects.values_list("team_id", "role", "primary_id")),
        AuditEntry.objects.count(),
    )


def test_staff_create_a_team_and_it_is_listed_for_its_members(db, staff_api, user):
    model = LLMModelFactory(name="gpt-4o-mini")
    payload = {
        "name": "Research",
        "slug": "research",
        "monthly_token_budget": 5_000_000,
        "monthly_cost_budget": "120.50",
        "allowed_models": ["gpt-4o-mini"],
    }
    response = staff_api.post("/api/teams/", payload, format="json")
    team = Team.objects.get()
    assert (response.status_code, response.json()) == (201, team_body(team))
    assert response.json()["monthly_cost_budget"] == 120.5 and response.json()["allowed_models"] == [model.name]
    assert AuditEntry.objects.get(action="team.create").resource == f"team:{team.pk}"

    TeamFactory()  # another team the user is not in
    TeamMembershipFactory(team=team, user=user)
    listing = api_client(user).get("/api/teams/")
    assert (listing.status_code, listing.json()) == (200, page([team_body(team)]))


def test_a_person_who_is_not_staff_cannot_create_a_team(db, api, team, admin):
    before = _state()
    response = api_client(admin).post("/api/teams/", {"name": "Mine", "slug": "mine"}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "forbidden"
    assert _state() == before


def test_unknown_allowed_model_is_a_400_naming_the_field(db, staff_api):
    response = staff_api.post("/api/teams/", {"name": "R", "slug": "r", "allowed_models": ["nope"]}, format="json")
    assert response.status_code == 400 and list(response.json()["errors"]) == ["allowed_models"]
    assert not Team.objects.exists()


def test_a_taken_slug_is_a_400(db, staff_api, team):
    response = staff_api.post("/api/teams/", {"name": "Again", "slug": "research"}, format="json")
    assert (response.status_code, response.json()["errors"]) == (
        400,
        {"slug": ["A team with the slug 'research' exists already."]},
    )
    assert Team.objects.count() == 1


def test_team_detail_for_admins_and_staff_403_for_members_404_for_others(db, team, admin, member, staff_api):
    url = f"/api/teams/{team.pk}/"
    assert (api_client(admin).get(url).status_code, api_client(admin).get(url).json()) == (200, team_body(team))
    assert staff_api.get(url).json() == team_body(team)
    refused = api_client(member).get(url)
    assert (refused.status_code, refused.json()) == (
        403,
        {"detail": "Only the team's admins and staff can manage the team.", "code": "forbidden"},
    )
    hidden = api_client(UserFactory()).get(url)
    assert (hidden.status_code, hidden.json()) == (404, {"detail": "Team not found.", "code": "not_found"})
    assert api_client(UserFactory(is_staff=True)).get(url).status_code == 404  # staff without the permission


def test_an_admin_renames_the_team_but_budgets_and_models_are_staffs(db, team, admin, staff_api):
    client = api_client(admin)
    response = client.patch(f"/api/teams/{team.pk}/", {"name": "R&D"}, format="json")
    assert (response.status_code, response.json()) == (200, team_body(team))
    assert team.name == "R&D"
    before = _state()
    refused = client.patch(f"/api/teams/{team.pk}/", {"monthly_token_budget": 10**9}, format="json")
    assert refused.status_code == 403 and "budgets" in refused.json()["detail"]
    assert _state() == before

    model = LLMModelFactory()
    changed = staff_api.patch(
        f"/api/teams/{team.pk}/",
        {"monthly_token_budget": 1000, "monthly_cost_budget": None, "allowed_models": [model.name]},
        format="json",
    )
    assert (changed.status_code, changed.json()) == (200, team_body(team))
    assert (team.monthly_token_budget, list(team.allowed_models.all())) == (1000, [model])


def test_staff_delete_a_team_its_channels_stay_their_owners(db, team, admin, staff_api):
    channel = ChannelFactory(owner=admin, team=team)
    assert api_client(admin).delete(f"/api/teams/{team.pk}/").status_code == 403
    assert staff_api.delete(f"/api/teams/{team.pk}/").status_code == 204
    channel.refresh_from_db()
    assert not Team.objects.exists() and channel.team_id is None and channel.owner == admin


def test_an_admin_adds_lists_and_removes_members(db, team, admin, member):
    client = api_client(admin)
    newcomer = UserFactory()
    response = client.post(f"/api/teams/{team.pk}/members/", {"user": newcomer.pk, "role": "admin"}, format="json")
    added = TeamMembership.objects.get(team=team, user=newcomer)
    assert (response.status_code, response.json()) == (201, member_body(added))
    assert added.role == "admin"
    listing = client.get(f"/api/teams/{team.pk}/members/")
    memberships = TeamMembership.objects.filter(team=team).order_by("pk")
    assert (listing.status_code, listing.json()) == (200, page([member_body(m) for m in memberships]))

    token, _key = api_token_create(user=member, name="bound", team=team)
    channel = ChannelFactory(owner=member, team=team)
    assert client.delete(f"/api/teams/{team.pk}/members/{member.pk}/").status_code == 204
    channel.refresh_from_db()
    assert not TeamMembership.objects.filter(user=member).exists()
    assert not ApiToken.objects.filter(pk=token.pk).exists() and channel.team_id is None
    again = client.delete(f"/api/teams/{team.pk}/members/{member.pk}/")
    assert (again.status_code, again.json()) == (404, {"detail": "Not a member of this team.", "code": "not_found"})


def test_a_member_cannot_manage_members(db, team, member):
    before = _state()
    client = api_client(member)
    assert client.post(f"/api/teams/{team.pk}/members/", {"user": member.pk}, format="json").status_code == 403
    assert client.get(f"/api/teams/{team.pk}/members/").status_code == 403
    assert _state() == before


def test_staff_assign_and_clear_a_teams_model_role(db, team, admin, staff_api):
    primary, fallback = LLMModelFactory(), LLMModelFactory()
    url = f"/api/teams/{team.pk}/roles/utility/"
    before = _state()
    assert api_client(admin).put(url, {"primary": primary.name}, format="json").status_code == 403
    assert _state() == before
    response = staff_api.put(url, {"primary": primary.name, "fallback": fallback.name}, format="json")
    assert (response.status_code, response.json()) == (
        200,
        {"role": "utility", "primary": primary.name, "fallback": fallback.name},
    )
    assert staff_api.get(f"/api/teams/{team.pk}/").json()["roles"] == [response.json()]
    same = staff_api.put(url, {"primary": primary.name, "fallback": primary.name}, format="json")
    assert same.status_code == 400 and list(same.json()["errors"]) == ["fallback"]
    assert staff_api.put(f"/api/teams/{team.pk}/roles/painter/", {"primary": primary.name}).status_code == 404
    assert staff_api.delete(url).status_code == 204
    assert not TeamModelRole.objects.exists()


def test_a_channel_goes_only_in_its_owners_teams(db, team, member):
    other_team = TeamFactory()
    client = api_client(member)
    refused = client.post("/api/channels/", {"title": "Plans", "team": other_team.pk}, format="json")
    assert (refused.status_code, refused.json()["errors"]) == (
        400,
        {"team": ["You can only put a channel in a team you belong to."]},
    )
    assert not Channel.objects.exists()
    created = client.post("/api/channels/", {"title": "Plans", "team": team.pk}, format="json")
    channel = Channel.objects.get()
    assert (created.status_code, created.json()) == (201, channel_body(channel))
    assert created.json()["team"] == team.pk
    moved = client.patch(f"/api/channels/{channel.pk}/", {"team": other_team.pk}, format="json")
    assert moved.status_code == 400 and list(moved.json()["errors"]) == ["team"]
    channel.refresh_from_db()
    assert channel.team_id == team.pk
    left = client.patch(f"/api/channels/{channel.pk}/", {"team": None}, format="json")
    assert (left.status_code, left.json()["team"]) == (200, None)


def test_a_team_that_restricts_models_refuses_another_naming_the_field(db, team, member):
    allowed, other = LLMModelFactory(name="allowed-model"), LLMModelFactory(name="other-model")
    team.allowed_models.set([allowed])
    client = api_client(member)
    refused = client.post("/api/channels/", {"title": "x", "team": team.pk, "model": other.name}, format="json")
    assert (refused.status_code, refused.json()["errors"]) == (
        400,
        {"model": ["The team Research allows only these models: allowed-model; 'other-model' is not one."]},
    )
    assert not Channel.objects.exists()
    created = client.post("/api/channels/", {"title": "x", "team": team.pk, "model": allowed.name}, format="json")
    assert created.status_code == 201
    channel = Channel.objects.get()
    assert client.patch(f"/api/channels/{channel.pk}/", {"model": other.name}, format="json").status_code == 400
    outside = ChannelFactory(owner=member, model=other)
    moved = client.patch(f"/api/channels/{outside.pk}/", {"team": team.pk}, format="json")
    assert moved.status_code == 400 and list(moved.json()["errors"]) == ["model"]


def test_a_token_bound_to_a_team_creates_its_channels_there(db, team, member):
    other_team = TeamFactory()
    client = api_client(member)
    refused = client.post("/api/tokens/", {"name": "ci", "team": other_team.pk}, format="json")
    assert (refused.status_code, refused.json()["errors"]) == (
        400,
        {"team": ["You can only bind a token to a team you belong to."]},
    )
    assert not ApiToken.objects.exists()
    response = client.post("/api/tokens/", {"name": "ci", "team": team.pk}, format="json")
    assert (response.status_code, response.json()["team"]) == (201, team.pk)

    bound = api_client(None)
    bound.credentials(HTTP_AUTHORIZATION=f"Bearer {response.json()['key']}")
    created = bound.post("/api/channels/", {"title": "From CI"}, format="json")
    assert (created.status_code, created.json()["team"]) == (201, team.pk)
    TeamMembershipFactory(team=other_team, user=member)
    elsewhere = bound.post("/api/channels/", {"title": "x", "team": other_team.pk}, format="json")
    assert elsewhere.status_code == 400 and list(elsewhere.json()["errors"]) == ["team"]
    assert Channel.objects.count() == 1


def usage_body(row: UsageEntry) -> dict:
    body = fields_body(row, "id created_at role model trigger input_tokens output_tokens success error duration_ms")
    body |= {"user": row.user_id, "channel": row.channel_id, "team": row.team_id, "cost": float(row.cost)}
    order = ["id", "created_at", "user", "channel", "team", "role", "model", "trigger", "input_tokens"]
    return {key: body[key] for key in [*order, "output_tokens", "cost", "success", "error", "duration_ms"]}


def _usage(user, team, tokens: int) -> UsageEntry:
    return UsageEntry.objects.create(user=user, team=team, role="chat", model="m", input_tokens=tokens, cost="0.25")


def test_usage_lists_your_own_calls_and_a_teams_for_its_admins(db, team, admin, member):
    mine = _usage(member, team, 10)
    admins = _usage(admin, team, 20)
    _usage(member, TeamFactory(), 30)
    _usage(UserFactory(), None, 40)
    own = api_client(member).get("/api/usage/")
    assert (own.status_code, own.json()["count"]) == (200, 2)
    assert own.json()["results"][1] == usage_body(mine)
    listing = api_client(admin).get(f"/api/usage/?team={team.pk}")
    assert (listing.status_code, listing.json()) == (200, page([usage_body(admins), usage_body(mine)]))


def test_a_teams_usage_is_hidden_from_its_members_and_everyone_else(db, team, admin, member):
    _usage(admin, team, 20)
    other_team = TeamFactory()
    TeamMembershipFactory(team=other_team, user=member, role=TeamMembership.Role.ADMIN)
    for user, team_id in ((member, team.pk), (admin, other_team.pk), (UserFactory(), team.pk), (admin, "x")):
        response = api_client(user).get(f"/api/usage/?team={team_id}")
        assert (response.status_code, response.json()) == (404, {"detail": "Team not found.", "code": "not_found"})
