"""The chain-hash lookup reads the chain hash index, whatever else the user has stored (invariant 12)."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from chatcore import services
from chatcore.bulk import NewMessage, messages_bulk_import
from chatcore.chain import KEY_CHARS
from chatcore.locks import channel_lock
from chatcore.models import Cursor, Message
from compaction.gateway.lookup import deepest_channel, deepest_channel_locked, deepest_in_locked, deepest_match
from tests.chatcore.factories import ChannelFactory

pytestmark = pytest.mark.django_db


def conversation(user, turns: int, topic: str = "plans"):
    channel = ChannelFactory(owner=user)
    items = [NewMessage(role="user" if i % 2 else "system", content=f"{topic} {i}") for i in range(turns)]
    for index, item in enumerate(items[1:], start=1):
        item.parent = index - 1
    return channel, messages_bulk_import(channel=channel, user=user, items=items)


def lookups(user, channel, hashes, how):
    """The deepest match as each lookup gives it: the message, or the channel's id for `deepest_channel`."""
    if how == "channel":
        return deepest_channel(user=user, hashes=hashes)
    if how == "locked":
        return deepest_in_locked(user=user, channel=channel, hashes=hashes)
    return deepest_match(user=user, hashes=hashes, channel_id=channel.pk if how == "pinned" else None)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the planner without statistics is SQLite's")
@pytest.mark.parametrize("how", ["user", "pinned", "channel", "locked"])
def test_sqlite_finds_the_match_by_the_chain_hash_index_not_by_the_user_s_channels(user, how):
    channel, messages = conversation(user, 40)
    conversation(user, 40, topic="another talk")
    hashes = [m.chain_hash for m in messages[-8:]]
    with CaptureQueriesContext(connection) as queries:
        found = lookups(user, channel, hashes, how)
    assert found == (channel.pk if how == "channel" else messages[-1]) and len(queries) == 1
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + queries[0]["sql"])
        plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
    assert "chatcore_message USING INDEX message_chain_key_idx" in plan, plan
    assert "message_siblings_idx" not in plan and "chatcore_channel_owner" not in plan, plan


def test_deleted_others_and_unpinned_channels_are_not_matched(user, other_user):
    channel, messages = conversation(user, 6)
    hashes = [m.chain_hash for m in messages]
    assert deepest_match(user=other_user, hashes=hashes) is None
    assert deepest_match(user=user, hashes=hashes, channel_id=ChannelFactory(owner=user).pk) is None
    assert deepest_match(user=user, hashes=hashes[:3] + ["x" * 32] * 20) == messages[2]  # the fallback lookup
    services.channel_delete(channel=channel, actor=user)
    assert deepest_match(user=user, hashes=hashes) is None
    assert Message.objects.filter(channel=channel).count() == 6


def test_a_hash_that_shares_only_the_index_s_prefix_is_not_a_match(user):
    """The index holds each hash's prefix (chatcore.chain.ChainKey): a lookup holds what it finds to the whole hash."""
    channel, messages = conversation(user, 4)
    near = [m.chain_hash[:KEY_CHARS] + ("0" if m.chain_hash[KEY_CHARS] != "0" else "1") * 24 for m in messages]
    assert deepest_match(user=user, hashes=near) is None
    assert deepest_channel(user=user, hashes=near) is None
    assert deepest_match(user=user, hashes=[m.chain_hash for m in messages[:2]] + near[2:]) == messages[1]
    with transaction.atomic():
        assert deepest_in_locked(user=user, channel=channel_lock(channel_id=channel.pk), hashes=near) is None


def test_the_lookups_before_and_under_the_lock_agree_with_deepest_match(user, other_user, transactional_db):
    channel, messages = conversation(user, 6)
    newer, _ = conversation(user, 3)  # the same opening in a newer channel: it wins where they are equal
    hashes = [m.chain_hash for m in messages] + ["x" * 32]
    assert deepest_channel(user=user, hashes=hashes) == channel.pk
    assert deepest_channel(user=other_user, hashes=hashes) is None
    assert deepest_channel(user=user, hashes=hashes[:4] + ["x" * 32] * 20) == channel.pk  # the fallback lookup
    assert deepest_channel(user=user, hashes=hashes[:3] + ["x" * 32] * 20) == newer.pk
    with transaction.atomic():
        locked = channel_lock(channel_id=channel.pk)
        found = deepest_in_locked(user=user, channel=locked, hashes=hashes)
        assert (found, found.has_children, found.channel) == (messages[-1], False, locked)
        found = deepest_in_locked(user=user, channel=locked, hashes=hashes[:3] + ["x" * 32] * 20)
        assert (found, found.has_children) == (messages[2], True)
        assert deepest_in_locked(user=other_user, channel=locked, hashes=hashes) is None
    services.channel_delete(channel=channel, actor=user)
    assert deepest_channel(user=user, hashes=hashes) == newer.pk  # the deleted one is never matched
    with transaction.atomic():
        assert deepest_in_locked(user=user, channel=channel_lock(channel_id=channel.pk), hashes=hashes) is None


def test_the_usual_call_s_channel_is_found_and_locked_with_the_cursor_in_one_statement(user, other_user):
    channel, messages = conversation(user, 6)
    conversation(user, 6, topic="another talk")
    hashes = [m.chain_hash for m in messages] + ["x" * 32]  # the history resent with one new turn
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        locked, cursor = deepest_channel_locked(user=user, hashes=hashes)
    assert (locked.pk, cursor.user_id, cursor.leaf_id, len(queries)) == (channel.pk, user.pk, messages[-1].pk, 1)
    if connection.vendor == "postgresql":
        assert queries[0]["sql"].endswith('FOR UPDATE OF "chatcore_channel", "chatcore_cursor"')
    with transaction.atomic():
        assert deepest_channel_locked(user=other_user, hashes=hashes) is None  # not theirs
        assert deepest_channel_locked(user=user, hashes=hashes[:1] + ["y" * 32] * 9) is None  # the newest not stored
        Cursor.objects.filter(channel=channel, user=user).delete()
        assert deepest_channel_locked(user=user, hashes=hashes) is None  # no cursor of the user's there
