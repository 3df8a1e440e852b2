"""The chat role read with a reply's channel: the version of its rows comes with the channel's read (on
PostgreSQL), and the role read under a version is taken again without a statement while it holds. Any
change to the role or its models, however written, is what the next reply gets."""

import pytest
from django.db import connection

from chatcore import selectors
from chatcore.llm_attempt import role_models
from chatcore.models import Channel, LLMModel, ModelRole, TeamModelRole
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, ModelRoleFactory, TeamFactory

pytestmark = pytest.mark.django_db
POSTGRES = connection.vendor == "postgresql"


@pytest.fixture
def primary():
    return LLMModelFactory(name="primary-model")


@pytest.fixture
def channel(user, primary):
    ModelRoleFactory(role=ModelRole.Role.CHAT, primary=primary)
    return ChannelFactory(owner=user)


def reply_models(user, channel: Channel) -> list[LLMModel]:
    """What a reply reads: its channel, then the models to try."""
    read = selectors.channel_get(user=user, channel_id=channel.pk, for_reply=True)
    return role_models(role="chat", override=read.model, channel=read)


def test_the_role_read_before_costs_no_statement_while_its_rows_are_unchanged(user, channel, django_assert_num_queries):
    assert [m.name for m in reply_models(user, channel)] == ["primary-model"]
    with django_assert_num_queries(1 if POSTGRES else 2):  # the channel (and on SQLite the role)
        assert [m.name for m in reply_models(user, channel)] == ["primary-model"]


def test_a_role_changed_by_an_update_is_read_again(user, channel):
    reply_models(user, channel)
    other = LLMModelFactory(name="other-model")
    ModelRole.objects.filter(role=ModelRole.Role.CHAT).update(primary=other)
    assert [m.name for m in reply_models(user, channel)] == ["other-model"]


def test_a_fallback_added_and_removed_is_seen_at_once(user, channel):
    reply_models(user, channel)
    fallback = LLMModelFactory(name="fallback-model")
    role = ModelRole.objects.get(role=ModelRole.Role.CHAT)
    role.fallback = fallback
    role.save()
    assert [m.name for m in reply_models(user, channel)] == ["primary-model", "fallback-model"]
    ModelRole.objects.filter(pk=role.pk).update(fallback=None)
    assert [m.name for m in reply_models(user, channel)] == ["primary-model"]


def test_a_model_edited_in_place_is_read_again(user, channel, primary):
    reply_models(user, channel)
    LLMModel.objects.filter(pk=primary.pk).update(base_url="http://127.0.0.1:10/v1", context_window=1234)
    (model,) = reply_models(user, channel)
    assert (model.base_url, model.context_window) == ("http://127.0.0.1:10/v1", 1234)


def test_a_deleted_role_leaves_the_offline_provider(user, channel):
    reply_models(user, channel)
    ModelRole.objects.filter(role=ModelRole.Role.CHAT).delete()
    assert [m.provider for m in reply_models(user, channel)] == [LLMModel.Provider.OFFLINE]


def test_each_reply_gets_instances_of_its_own(user, channel):
    first = reply_models(user, channel)
    first[0].base_url = "http://changed"
    (again,) = reply_models(user, channel)
    assert again is not first[0] and again.base_url == "http://127.0.0.1:9/v1"


def test_a_team_channel_reads_its_team_role_each_time(user, channel, primary):
    team = TeamFactory()
    team_channel = ChannelFactory(owner=user)
    Channel.objects.filter(pk=team_channel.pk).update(team=team)
    assert [m.name for m in reply_models(user, team_channel)] == ["primary-model"]
    TeamModelRole.objects.create(team=team, role=ModelRole.Role.CHAT, primary=LLMModelFactory(name="team-model"))
    assert [m.name for m in reply_models(user, team_channel)] == ["team-model"]
