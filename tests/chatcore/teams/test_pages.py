"""Teams in the chat pages: a channel is created in one of the person's teams, under its model access."""

import pytest
from django.urls import reverse

from chatcore.models import Channel, LLMModel, Team
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, TeamFactory, TeamMembershipFactory


def test_the_new_channel_form_offers_only_the_persons_teams(db, user, client_user):
    assert 'name="team"' not in client_user.get(reverse("chat:channels")).content.decode()
    mine, _theirs = TeamFactory(name="Mine"), TeamFactory(name="Theirs")
    TeamMembershipFactory(team=mine, user=user)
    body = client_user.get(reverse("chat:channels")).content.decode()
    assert f'<option value="{mine.pk}">Mine</option>' in body and "Theirs" not in body


def test_a_channel_created_in_a_team_is_in_it(db, user, client_user):
    team = TeamFactory()
    TeamMembershipFactory(team=team, user=user)
    response = client_user.post(reverse("chat:channels"), {"title": "Plans", "team": team.pk})
    channel = Channel.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("chat:channel", args=[channel.pk])
    assert (channel.owner, channel.team) == (user, team)


def test_a_model_the_team_does_not_allow_is_refused_on_the_form(db, user, client_user):
    team = TeamFactory(name="Research")
    TeamMembershipFactory(team=team, user=user)
    allowed, other = LLMModelFactory(name="allowed-model"), LLMModelFactory(name="other-model")
    team.allowed_models.set([allowed])
    response = client_user.post(reverse("chat:channels"), {"title": "Plans", "team": team.pk, "model": other.pk})
    assert response.status_code == 400
    assert "The team Research allows only these models: allowed-model" in response.content.decode()
    assert not Channel.objects.exists()


def test_another_teams_id_is_not_a_choice(db, user, client_user):
    TeamMembershipFactory(user=user)
    response = client_user.post(reverse("chat:channels"), {"title": "Plans", "team": TeamFactory().pk})
    assert response.status_code == 400 and not Channel.objects.exists()


def test_the_owner_moves_a_channel_between_their_teams_on_its_settings_page(db, user, client_user):
    first, second, foreign = TeamFactory(name="First"), TeamFactory(name="Second"), TeamFactory(name="Foreign")
    for team in (first, second):
        TeamMembershipFactory(team=team, user=user)
    channel = ChannelFactory(owner=user, team=first)
    url = reverse("compaction:settings", args=[channel.pk])
    page = client_user.get(url).content.decode()
    assert f'<option value="{first.pk}" selected>First</option>' in page and "Foreign" not in page

    moved = client_user.post(url, {"auto_compaction": "", "threshold_percent": "", "team": second.pk})
    channel.refresh_from_db()
    assert moved.status_code == 302 and channel.team == second
    refused = client_user.post(url, {"auto_compaction": "", "threshold_percent": "", "team": foreign.pk})
    channel.refresh_from_db()
    assert refused.status_code == 400 and channel.team == second
    left = client_user.post(url, {"auto_compaction": "", "threshold_percent": "", "team": ""})
    channel.refresh_from_db()
    assert left.status_code == 302 and channel.team is None


def model_select(body: str) -> list[str]:
    """The new-channel form's model select, whole, a line per tag, as the page sends it."""
    select = body.split('<select name="model"', 1)[1].split("</select>", 1)[0]
    return ['<select name="model"' + select.splitlines()[0]] + [
        line.strip() for line in select.splitlines()[1:] if line.strip()
    ]


@pytest.fixture
def alpha_beta(db) -> tuple[LLMModel, LLMModel]:
    LLMModel.objects.all().delete()
    return LLMModelFactory(name="alpha"), LLMModelFactory(name="beta")


@pytest.fixture
def narrow(user, alpha_beta) -> Team:
    """A team of the user's that allows alpha alone."""
    team = TeamFactory(name="Narrow")
    team.allowed_models.set([alpha_beta[0]])
    TeamMembershipFactory(team=team, user=user)
    return team


def test_each_model_option_names_the_persons_teams_that_allow_it(user, client_user, alpha_beta, narrow):
    alpha, beta = alpha_beta
    open_team = TeamFactory(name="Open")
    TeamMembershipFactory(team=open_team, user=user)
    assert model_select(client_user.get(reverse("chat:channels")).content.decode()) == [
        '<select name="model" data-team-field="team" id="id_model">',
        '<option value="" selected>Default chat model</option>',
        f'<option value="{alpha.pk}" data-teams="{narrow.pk} {open_team.pk}">alpha</option>',
        f'<option value="{beta.pk}" data-teams="{open_team.pk}">beta</option>',
    ]


def test_someone_in_no_team_is_offered_every_model_unmarked(user, client_user, alpha_beta):
    alpha, beta = alpha_beta
    TeamFactory().allowed_models.set([alpha])
    assert model_select(client_user.get(reverse("chat:channels")).content.decode()) == [
        '<select name="model" id="id_model">',
        '<option value="" selected>Default chat model</option>',
        f'<option value="{alpha.pk}">alpha</option>',
        f'<option value="{beta.pk}">beta</option>',
    ]


def settings_model_select(client, channel: Channel) -> list[str]:
    return model_select(client.get(reverse("compaction:settings", args=[channel.pk])).content.decode())


def test_the_settings_page_offers_a_team_channel_its_teams_models_only(user, client_user, alpha_beta, narrow):
    alpha, beta = alpha_beta
    assert settings_model_select(client_user, ChannelFactory(owner=user, team=narrow, model=alpha)) == [
        '<select name="model" data-team-field="team" id="id_model">',
        '<option value="">Default chat model</option>',
        f'<option value="{alpha.pk}" selected data-teams="{narrow.pk}">alpha</option>',
    ]
    assert settings_model_select(client_user, ChannelFactory(owner=user, team=None)) == [
        '<select name="model" data-team-field="team" id="id_model">',
        '<option value="" selected>Default chat model</option>',
        f'<option value="{alpha.pk}" data-teams="{narrow.pk}">alpha</option>',
        f'<option value="{beta.pk}" data-teams="">beta</option>',
    ]


def test_the_settings_page_refuses_a_model_the_channels_team_does_not_allow(user, client_user, alpha_beta, narrow):
    alpha, beta = alpha_beta
    team = narrow
    channel = ChannelFactory(owner=user, team=team, model=None)
    url = reverse("compaction:settings", args=[channel.pk])
    fields = {"auto_compaction": "", "threshold_percent": "", "team": team.pk}
    refused = client_user.post(url, {**fields, "model": beta.pk})
    channel.refresh_from_db()
    assert refused.status_code == 400 and channel.model is None
    assert "Select a valid choice" in refused.content.decode()
    chosen = client_user.post(url, {**fields, "model": alpha.pk})
    channel.refresh_from_db()
    assert chosen.status_code == 302 and channel.model == alpha
    kept = client_user.post(url, fields)
    channel.refresh_from_db()
    assert kept.status_code == 302 and channel.model == alpha


def test_moving_a_channel_into_a_team_that_does_not_allow_its_model_is_refused(user, client_user, alpha_beta, narrow):
    alpha, beta = alpha_beta
    team = narrow
    channel = ChannelFactory(owner=user, team=None, model=beta)
    url = reverse("compaction:settings", args=[channel.pk])
    refused = client_user.post(url, {"auto_compaction": "", "threshold_percent": "", "team": team.pk, "model": beta.pk})
    channel.refresh_from_db()
    assert refused.status_code == 400 and (channel.team, channel.model) == (None, beta)
    assert "The team Narrow allows only these models: alpha; &#x27;beta&#x27; is not one." in refused.content.decode()
