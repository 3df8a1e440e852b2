"""Changes made by someone else while the model is thinking: nothing is written.

The loopback server's responder runs in the server's own thread with its own
database connection, so these tests commit for real (transactional; pytest-django
runs them after the others, and the service falls back to the shipped default
profile once a flush has emptied the table).
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from chatcore import services as chat_services
from chatcore.errors import Conflict
from chatcore.models import Channel, Cursor, Summary
from compaction.models import CompactionLease
from compaction.services import channel_compact
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, UserFactory
from tests.compaction.factories import converse

pytestmark = pytest.mark.django_db(transaction=True)


def _during_the_call(llm_server, change):
    def responder(request):
        try:
            change()
        finally:
            connection.close()
        return Reply(content="## Goal\n- Written while the channel changed.")

    llm_server.responder = responder


def _owner_writes(channel, content, parent=None):
    """The channel's owner writes `content`: on the active branch, or under `parent` (a new branch)."""
    chat_services.message_append(
        channel=channel, user=channel.owner, role="user", content=content, parent_id=parent.pk if parent else None
    )


def test_another_summary_written_meanwhile(utility_model, llm_server):
    channel = ChannelFactory()
    messages = converse(channel, 12)
    _during_the_call(
        llm_server,
        lambda: chat_services.summary_write(
            channel=channel, through_message=messages[3], content="A concurrent summary.", created_by=channel.owner
        ),
    )
    with pytest.raises(Conflict) as caught:
        channel_compact(channel=channel, actor=channel.owner, keep_recent=2)
    assert caught.value.code == "channel_changed"
    assert list(Summary.objects.values_list("content", flat=True)) == ["A concurrent summary."]
    lease = CompactionLease.objects.get(channel=channel)
    assert (lease.holder, lease.last_outcome, lease.failure_count) == ("", "failed", 1)
    assert "summary in force" in lease.last_error


def test_the_owner_switched_to_a_branch_without_the_summarised_messages(utility_model, llm_server):
    channel = ChannelFactory()
    messages = converse(channel, 12)
    _during_the_call(llm_server, lambda: _owner_writes(channel, "Another way.", parent=messages[4]))
    with pytest.raises(Conflict) as caught:
        channel_compact(channel=channel, actor=channel.owner, keep_recent=2)
    assert caught.value.code == "channel_changed"
    assert Summary.objects.count() == 0
    assert Cursor.objects.get(channel=channel).summary_id is None


def test_a_new_message_on_the_same_branch_is_fine(utility_model, llm_server):
    channel = ChannelFactory()
    messages = converse(channel, 12)
    _during_the_call(llm_server, lambda: _owner_writes(channel, "One more thing."))
    result = channel_compact(channel=channel, actor=channel.owner, keep_recent=2)
    assert result.summary.through_message_id == messages[9].pk
    channel.refresh_from_db()
    assert channel.context_messages == 3


def test_a_lease_taken_over_after_expiry_writes_nothing(utility_model, llm_server):
    channel = ChannelFactory()
    converse(channel, 12)
    _during_the_call(
        llm_server,
        lambda: CompactionLease.objects.filter(channel=channel).update(
            holder="second-worker:9:abcd", expires_at=timezone.now() + timedelta(minutes=5)
        ),
    )
    with pytest.raises(Conflict) as caught:
        channel_compact(channel=channel, actor=channel.owner, keep_recent=2)
    assert caught.value.code == "lease_lost"
    assert Summary.objects.count() == 0
    assert CompactionLease.objects.get(channel=channel).holder == "second-worker:9:abcd"


def test_the_channel_handed_to_someone_else_meanwhile(utility_model, llm_server):
    """The check under the lock reads the cursor of whoever owns the channel then: the new owner has none on
    this path, so nothing is written."""
    channel = ChannelFactory()
    converse(channel, 12)
    other = UserFactory()
    _during_the_call(llm_server, lambda: Channel.objects.filter(pk=channel.pk).update(owner=other))
    with pytest.raises(Conflict) as caught:
        channel_compact(channel=channel, actor=channel.owner, keep_recent=2)
    assert caught.value.code == "channel_changed"
    assert not Summary.objects.filter(channel=channel).exists()
