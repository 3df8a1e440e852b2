"""The chain-hash lookup reads the chain hash index, whatever else the user has stored (invariant 12)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatcore import services
from chatcore.bulk import NewMessage, messages_bulk_import
from chatcore.models import Message
from compaction.gateway.lookup import deepest_match
from tests.chatcore.factories import ChannelFactory

pytestmark = pytest.mark.django_db


def conversation(user, turns: int, topic: str = "plans"):
    channel = ChannelFactory(owner=user)
    items = [NewMessage(role="user" if i % 2 else "system", content=f"{topic} {i}") for i in range(turns)]
    for index, item in enumerate(items[1:], start=1):
        item.parent = index - 1
    return channel, messages_bulk_import(channel=channel, user=user, items=items)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the planner without statistics is SQLite's")
@pytest.mark.parametrize("pinned", [False, True])
def test_sqlite_finds_the_match_by_the_chain_hash_index_not_by_the_user_s_channels(user, pinned):
    channel, messages = conversation(user, 40)
    conversation(user, 40, topic="another talk")
    hashes = [m.chain_hash for m in messages[-8:]]
    with CaptureQueriesContext(connection) as queries:
        found = deepest_match(user=user, hashes=hashes, channel_id=channel.pk if pinned else None)
    assert found == messages[-1] and len(queries) == 1
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + queries[0]["sql"])
        plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
    assert "chatcore_message USING INDEX message_chain_idx" in plan, plan
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
