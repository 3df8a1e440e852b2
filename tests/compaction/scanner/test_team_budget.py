"""A team's own hourly budget of automatic compactions, beside the site's: counted from the team's automatic
summaries this hour, for the scanner's ticks and the compaction after a reply alike."""

import datetime

from django.utils import timezone

from chatcore import services as chat_services
from chatcore.models import Summary
from compaction.scanner.services import auto_compaction_reserve, scan_run
from tests.chatcore.factories import TeamFactory, TeamMembershipFactory, UserFactory
from tests.compaction.scanning import auto_settings, pressured_channel

NOW_PLUS = datetime.timedelta(seconds=1)


def _team_channel(team, **kwargs):
    owner = UserFactory()
    TeamMembershipFactory(team=team, user=owner)
    return pressured_channel(owner=owner, team=team, **kwargs)


def _auto_summary(channel) -> None:
    chat_services.summary_write(
        channel=channel,
        through_message=channel.messages.order_by("depth")[0],
        content="Summary.",
        created_by=None,
        trigger=Summary.Trigger.AUTO,
    )


def test_a_team_over_its_hourly_budget_waits_while_others_go_on(db, django_capture_on_commit_callbacks):
    auto_settings(hourly_budget=100)
    team, free_team = TeamFactory(hourly_compaction_budget=2), TeamFactory(hourly_compaction_budget=None)
    _auto_summary(_team_channel(team, messages=2))
    first, second = _team_channel(team, messages=14), _team_channel(team, messages=13)
    unlimited, outside = _team_channel(free_team, messages=12), pressured_channel(messages=12)

    with django_capture_on_commit_callbacks(execute=True):
        report = scan_run(now=timezone.now() + NOW_PLUS)

    by_channel = {d.channel_id: d for d in report.decisions}
    assert {pk: by_channel[pk].reason or by_channel[pk].action for pk in by_channel} == {
        first.pk: "enqueue",
        second.pk: "team budget",
        unlimited.pk: "enqueue",
        outside.pk: "enqueue",
    }
    assert by_channel[second.pk].detail == f"team budget, team {team.pk} has used its automatic compactions this hour"


def test_the_compaction_after_a_reply_keeps_the_teams_budget_too(db):
    auto_settings(hourly_budget=100)
    team = TeamFactory(hourly_compaction_budget=1)
    _auto_summary(_team_channel(team, messages=2))
    channel = _team_channel(team, messages=14)
    assert auto_compaction_reserve(channel_id=channel.pk).reason == "team budget"
    team.hourly_compaction_budget = 2
    team.save(update_fields=["hourly_compaction_budget"])
    assert auto_compaction_reserve(channel_id=channel.pk).action == "enqueue"
