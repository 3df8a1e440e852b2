"""Writes from rows seen (chatcore.locks.RowsSeen): a reply's channel read brings the owner's cursor with both
rows' versions, and the user's turn and the reply take the channel's lock in their own write statement, on
condition that neither row changed since; otherwise they write nothing and append under the lock as before."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatcore import data_control, selectors, services
from chatcore.locks import rows_seen_usable
from chatcore.models import Channel, Cursor, Message
from chatcore.services import cursor_move, message_append, message_append_at, summary_write
from tests.chatcore.concurrency import held_meanwhile
from tests.chatcore.factories import ChannelFactory, build_path

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="row versions are PostgreSQL's")


def _seen(user, channel):
    read = selectors.channel_get(user=user, channel_id=channel.pk, for_reply=True)
    seen = selectors.channel_rows_seen(read)
    assert seen is not None
    return read, seen


def _statements(captured) -> list[str]:
    return [query["sql"] or "" for query in captured.captured_queries if "SAVEPOINT" not in (query["sql"] or "")]


def test_the_reply_read_brings_the_cursor_and_the_versions(user, django_assert_num_queries):
    channel = ChannelFactory(owner=user)
    *_, last = build_path(channel, 3)
    with django_assert_num_queries(1):
        read, seen = _seen(user, channel)
        assert (seen.channel, seen.cursor.leaf, seen.cursor.leaf.root_id, seen.cursor.summary) == (
            read,
            last,
            last.root_id,
            None,
        )
        assert seen.cursor.channel is read
    assert rows_seen_usable(channel_version=seen.channel_version, cursor_version=seen.cursor_version)


def test_a_channel_without_the_owner_s_cursor_is_read_in_one_statement_too(user, django_assert_num_queries):
    channel = ChannelFactory(owner=user)
    with django_assert_num_queries(1):
        read = selectors.channel_get(user=user, channel_id=channel.pk, for_reply=True)
    assert read.pk == channel.pk and selectors.channel_rows_seen(read) is None


def test_frozen_or_unknown_versions_are_not_gone_by():
    assert not rows_seen_usable(channel_version="2/(0,1)", cursor_version="951/(0,3)")
    assert not rows_seen_usable(channel_version="951/(0,1)", cursor_version="1/(0,3)")
    assert not rows_seen_usable(channel_version=None, cursor_version="951/(0,3)")
    assert rows_seen_usable(channel_version="951/(0,1)", cursor_version="951/(0,3)")


def test_an_append_from_unchanged_rows_is_one_statement_that_locks(user):
    channel = ChannelFactory(owner=user)
    *_, last = build_path(channel, 3)
    read, seen = _seen(user, channel)
    activity = read.last_activity_at
    with CaptureQueriesContext(connection) as captured:
        appended = message_append_at(
            channel=read, user=user, role="user", content="And then?", read_path=True, seen=seen
        )
    (statement,) = _statements(captured)
    assert "FOR UPDATE OF" in statement and "INSERT INTO" in statement
    message = appended.message
    assert message.parent_id == last.pk and [m.pk for m in appended.path][-2:] == [last.pk, message.pk]
    cursor = Cursor.objects.get(channel=channel, user=user)
    assert (cursor.leaf_id, cursor.summary_id) == (message.pk, None)
    channel.refresh_from_db()
    assert (channel.context_tokens, channel.context_messages) == (message.path_tokens, 4)
    # The caller's channel stays as it read it; what the append placed carries the versions it left.
    assert (read.context_messages, read.last_activity_at) == (3, activity)
    assert appended.placed is not None and appended.placed.cursor.leaf_id == message.pk
    assert appended.placed.channel_version != seen.channel_version


def test_a_second_write_goes_by_what_the_first_placed(user):
    channel = ChannelFactory(owner=user)
    build_path(channel, 2)
    read, seen = _seen(user, channel)
    first = message_append_at(channel=read, user=user, role="user", content="Why?", read_path=True, seen=seen)
    with CaptureQueriesContext(connection) as captured:
        reply = message_append(
            channel=read,
            user=user,
            role="assistant",
            content="Because.",
            parent_id=first.message.pk,
            parent=first.message,
            seen=first.placed,
        )
    assert len(_statements(captured)) == 1
    assert Cursor.objects.get(channel=channel, user=user).leaf_id == reply.pk
    assert reply.parent_id == first.message.pk and reply.depth == first.message.depth + 1


def test_a_cursor_moved_since_the_read_is_the_one_the_message_follows(user):
    """Moved in the same transaction, the cursor's row keeps its xmin but not its place: the versions differ."""
    channel = ChannelFactory(owner=user)
    first, _, _ = build_path(channel, 3)
    read, seen = _seen(user, channel)
    cursor_move(channel=channel, user=user, message_id=first.pk, exact=True)
    message = message_append_at(channel=read, user=user, role="user", content="Back.", seen=seen).message
    assert message.parent_id == first.pk
    assert Cursor.objects.get(channel=channel, user=user).leaf_id == message.pk
    assert Message.objects.filter(channel=channel, content="Back.").count() == 1


def test_a_summary_written_since_the_read_is_the_one_the_message_continues(user):
    channel = ChannelFactory(owner=user)
    first, _, _ = build_path(channel, 3)
    read, seen = _seen(user, channel)
    summary = summary_write(channel=channel, through_message=first, content="Earlier.", created_by=None)
    message = message_append_at(channel=read, user=user, role="user", content="And then?", seen=seen).message
    cursor = Cursor.objects.get(channel=channel, user=user)
    assert (cursor.leaf_id, cursor.summary_id) == (message.pk, summary.pk)
    channel.refresh_from_db()
    assert channel.context_tokens == message.path_tokens - first.path_tokens + summary.tokens


def test_a_purge_since_the_read_sends_the_append_under_the_lock(user):
    """A purge blanks messages the reply's path may hold; its transaction changes the cursors' rows even when no
    quote went, so a reply that read the channel before it does not write from that read."""
    channel = ChannelFactory(owner=user)
    first, second, last = build_path(channel, 3)
    summary = summary_write(channel=channel, through_message=second, content="Earlier.", created_by=None)
    read, seen = _seen(user, channel)
    data_control.summary_purge(summary=summary, actor=user, confirm=True)
    with CaptureQueriesContext(connection) as captured:
        appended = message_append_at(
            channel=read, user=user, role="user", content="And then?", read_path=True, seen=seen
        )
    assert any("FOR UPDATE" in statement and "INSERT" not in statement for statement in _statements(captured))
    assert Message.objects.get(pk=first.pk).content == ""
    assert appended.message.parent_id == last.pk
    assert Message.objects.filter(channel=channel, content="And then?").count() == 1


def test_another_parent_than_the_cursor_s_leaf_is_appended_under_the_lock(user):
    channel = ChannelFactory(owner=user)
    first, _, _ = build_path(channel, 3)
    read, seen = _seen(user, channel)
    with CaptureQueriesContext(connection) as captured:
        message = message_append(
            channel=read, user=user, role="user", content="Instead.", parent_id=first.pk, seen=seen
        )
    assert message.parent_id == first.pk
    assert any("FOR UPDATE" in statement and "INSERT" not in statement for statement in _statements(captured))


@pytest.mark.django_db(transaction=True)
def test_rows_changed_while_the_statement_waited_for_the_lock_are_not_written_over(user):
    """Another writer holds the channel and moves the cursor: the statement that went by the rows seen waits for
    the lock, finds them changed, writes nothing, and the append goes on under the lock, under the moved cursor."""
    channel = ChannelFactory(owner=user)
    first, _, last = build_path(channel, 3)
    read, seen = _seen(user, channel)
    with held_meanwhile(lambda: cursor_move(channel=channel, user=user, message_id=first.pk, exact=True)):
        message = message_append_at(channel=read, user=user, role="user", content="Back.", seen=seen).message
    assert message.parent_id == first.pk
    assert Cursor.objects.get(channel=channel, user=user).leaf_id == message.pk
    assert not Message.objects.filter(parent=last).exists()


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_write_is_its_own(user):
    """In production a reply's writes run outside any transaction: the statement commits by itself."""
    channel = ChannelFactory(owner=user)
    build_path(channel, 2)
    read, seen = _seen(user, channel)
    assert not connection.in_atomic_block
    message = message_append_at(channel=read, user=user, role="user", content="Now?", seen=seen).message
    assert not connection.in_atomic_block
    assert Cursor.objects.get(channel=channel, user=user).leaf_id == message.pk
    assert Channel.objects.get(pk=channel.pk).context_messages == 3
    assert services.message_size(content="Now?", metadata=None)[0] == message.tokens
