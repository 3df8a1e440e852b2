"""Role resolution per team: for a team's channel the team's assignment of a role wins over the site's,
on every path that calls a model (seen on the loopback model server); without one, the site's."""

import pytest

from chatcore import replies
from chatcore.models import ModelRole, TeamMembership, TeamModelRole, UsageEntry
from compaction.services import channel_compact
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, TeamFactory, TeamMembershipFactory
from tests.chatcore.test_streaming import post_stream
from tests.compaction.factories import converse


@pytest.fixture(autouse=True)
def _no_retries(settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0


@pytest.fixture
def team(db, user):
    team = TeamFactory()
    TeamMembershipFactory(team=team, user=user, role=TeamMembership.Role.MEMBER)
    return team


def _team_model(llm_server, team, role: str, name: str, **fallback):
    model = LLMModelFactory(name=name, base_url=llm_server.url)
    TeamModelRole.objects.create(team=team, role=role, primary=model, **fallback)
    return model


def test_a_team_channels_compaction_calls_the_teams_utility_model(utility_model, llm_server, team, user):
    _team_model(llm_server, team, ModelRole.Role.UTILITY, "team-utility")
    channel = ChannelFactory(owner=user, team=team)
    converse(channel, 10)
    llm_server.script(Reply(content="## Goal\n- The team's summary."))
    result = channel_compact(channel=channel, actor=user, keep_recent=2)
    assert [r["model"] for r in llm_server.requests] == ["team-utility"]
    assert (result.model, result.summary.model) == ("team-utility", "team-utility")
    usage = UsageEntry.objects.get()
    assert (usage.model, usage.team_id, usage.channel_id) == ("team-utility", team.pk, channel.pk)


def test_without_its_own_assignment_a_team_channel_uses_the_sites(utility_model, llm_server, team, user):
    _team_model(llm_server, team, ModelRole.Role.CHAT, "team-chat")  # another role: the utility stays the site's
    channel = ChannelFactory(owner=user, team=team)
    converse(channel, 10)
    llm_server.script(Reply(content="## Goal\n- The site's summary."))
    channel_compact(channel=channel, actor=user, keep_recent=2)
    assert [r["model"] for r in llm_server.requests] == ["loopback-utility"]
    assert UsageEntry.objects.get().team_id == team.pk


def test_a_channel_outside_the_team_keeps_the_sites_model(utility_model, llm_server, team, user):
    _team_model(llm_server, team, ModelRole.Role.UTILITY, "team-utility")
    channel = ChannelFactory(owner=user)
    converse(channel, 10)
    channel_compact(channel=channel, actor=user, keep_recent=2)
    assert [r["model"] for r in llm_server.requests] == ["loopback-utility"]
    assert UsageEntry.objects.get().team_id is None


def test_the_teams_fallback_answers_when_its_primary_fails(utility_model, llm_server, team, user):
    fallback = LLMModelFactory(name="team-fallback", base_url=llm_server.url)
    _team_model(llm_server, team, ModelRole.Role.UTILITY, "team-utility", fallback=fallback)
    channel = ChannelFactory(owner=user, team=team)
    converse(channel, 10)
    llm_server.script(Reply(status=503), Reply(content="## Goal\n- From the team's fallback."))
    result = channel_compact(channel=channel, actor=user, keep_recent=2)
    assert [r["model"] for r in llm_server.requests] == ["team-utility", "team-fallback"]
    assert (result.model, result.used_fallback) == ("team-fallback", True)


def test_a_team_channels_reply_calls_the_teams_chat_model(chat_model, llm_server, team, user, api):
    _team_model(llm_server, team, ModelRole.Role.CHAT, "team-chat")
    channel = ChannelFactory(owner=user, team=team)
    reply = replies.reply_generate(channel=channel, user=user, content="Hello")
    assert reply.metadata["model"] == "team-chat"
    events = post_stream(api, channel, {"content": "Again", "stream": True})
    assert events[-1][0] == "done" and events[-1][1]["message"]["metadata"]["model"] == "team-chat"
    assert [r["model"] for r in llm_server.requests] == ["team-chat", "team-chat"]
    assert set(UsageEntry.objects.values_list("model", "team_id")) == {("team-chat", team.pk)}


def test_the_context_budget_of_a_team_channel_follows_the_teams_utility_model(utility_model, llm_server, team, user):
    model = _team_model(llm_server, team, ModelRole.Role.UTILITY, "team-utility")
    model.context_window = 32_000
    model.save(update_fields=["context_window"])
    assert ChannelFactory(owner=user, team=team).context_budget == 32_000
    assert ChannelFactory(owner=user).context_budget == utility_model.context_window
