"""Profile scope global, team or persona; for a channel: the persona's default, then its team's, then the global."""

import pytest
from django.core.exceptions import ValidationError

from compaction.models import CompactionProfile
from compaction.selectors import profiles_visible
from compaction.services import profile_resolve
from compaction.services.profiles import profile_create, profile_update
from tests.chatcore.factories import ChannelFactory, PersonaFactory, TeamFactory, TeamMembershipFactory, UserFactory
from tests.compaction.factories import CompactionProfileFactory


@pytest.fixture
def team(db, user):
    team = TeamFactory()
    TeamMembershipFactory(team=team, user=user)
    return team


def _resolved(channel) -> str:
    return profile_resolve(channel=channel, user=channel.owner).slug


def test_resolution_persona_then_team_then_global_at_each_level(team, user):
    persona = PersonaFactory()
    site_wide = CompactionProfile.objects.get(is_default=True, team=None, persona=None).slug
    CompactionProfileFactory(slug="team-notes", team=team, is_default=True)
    CompactionProfileFactory(slug="persona-notes", persona=persona, is_default=True)
    assert _resolved(ChannelFactory(owner=user, team=team, persona=persona)) == "persona-notes"
    assert _resolved(ChannelFactory(owner=user, team=team)) == "team-notes"
    assert _resolved(ChannelFactory(owner=user, persona=PersonaFactory())) == site_wide
    assert _resolved(ChannelFactory(owner=user)) == site_wide


def test_a_teams_profiles_apply_to_its_channels_and_show_to_its_members_only(team, user):
    mine = CompactionProfileFactory(slug="team-notes", team=team)
    theirs = CompactionProfileFactory(slug="their-notes", team=TeamFactory())
    assert mine in profiles_visible(user=user, channel=ChannelFactory(owner=user, team=team))
    assert mine not in profiles_visible(user=user, channel=ChannelFactory(owner=user))
    listed = profiles_visible(user=user)
    assert mine in listed and theirs not in listed
    assert mine not in profiles_visible(user=UserFactory())
    with pytest.raises(ValidationError, match="No profile 'their-notes'"):
        profile_resolve(channel=ChannelFactory(owner=user, team=team), user=user, slug="their-notes")


def test_one_default_per_team_and_the_global_default_stays(team, staff_user):
    first = profile_create(actor=staff_user, name="A", system_prompt="S", instructions="{transcript}", team=team)
    profile_update(profile=first, actor=staff_user, is_default=True)
    second = profile_create(
        actor=staff_user, name="B", system_prompt="S", instructions="{transcript}", team=team, is_default=True
    )
    first.refresh_from_db()
    assert (first.is_default, second.is_default) == (False, True)
    assert CompactionProfile.objects.filter(is_default=True, team__isnull=True, persona__isnull=True).count() == 1


def test_a_profile_is_not_a_teams_and_a_personas_at_once(team, staff_user):
    before = CompactionProfile.objects.count()
    with pytest.raises(ValidationError, match="not a team's and a persona's"):
        profile_create(
            actor=staff_user,
            name="Both",
            system_prompt="S",
            instructions="{transcript}",
            team=team,
            persona=PersonaFactory(),
        )
    assert CompactionProfile.objects.count() == before
