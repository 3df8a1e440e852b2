"""`manage.py compact`: the same service, statistics printed."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from chatcore.models import Summary
from tests.chatcore.factories import ChannelFactory
from tests.compaction.factories import converse


def test_compact_prints_the_statistics(db):
    channel = ChannelFactory()
    converse(channel, 30)
    out = StringIO()
    call_command("compact", str(channel.pk), "--profile", "brief", "--focus", "the deploy", stdout=out)
    summary = Summary.objects.get()
    lines = out.getvalue().splitlines()
    assert lines[0] == f"messages 30 → 5, tokens {summary.tokens_before:,} → {summary.tokens_after:,}"
    assert lines[1] == (
        f"summary #{summary.pk}: 26 messages summarized with profile brief by offline; "
        f"through message {summary.through_message_id}"
    )
    assert (summary.profile_slug, summary.created_by) == ("brief", None)


def test_compact_dry_run_prints_the_draft_and_writes_nothing(db):
    channel = ChannelFactory()
    converse(channel, 12)
    out = StringIO()
    call_command("compact", str(channel.pk), "--dry-run", stdout=out)
    text = out.getvalue()
    assert "draft (dry run, nothing written)" in text and "messages 12 → 7, tokens " in text
    assert Summary.objects.count() == 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["999999"], "No channel 999999."),
        (["{channel}", "--profile", "nope"], "No profile 'nope' is available for this channel"),
        (["{channel}"], "Nothing to compact: 3 message(s) since the start"),
    ],
)
def test_compact_errors_are_command_errors(db, args, message):
    channel = ChannelFactory()
    converse(channel, 3)
    with pytest.raises(CommandError) as caught:
        call_command("compact", *[a.format(channel=channel.pk) for a in args], stdout=StringIO())
    assert message in str(caught.value)
