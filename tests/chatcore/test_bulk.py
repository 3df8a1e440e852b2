"""chatcore.bulk on PostgreSQL: a large import skips the foreign keys' per-row triggers and checks the keys
itself, in one query, with the same outcome as the constraints."""

import math

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction

from chatcore.bulk import (
    PG_FIRST_PIECE_ROWS,
    PG_PIECE_GROWTH,
    PG_PIECE_ROWS,
    PG_UNCHECKED_FROM_ROWS,
    NewMessage,
    messages_bulk_import,
)
from chatcore.models import Channel, Message
from chatcore.search.schema import PG_FUNCTION, TABLE
from tests.chatcore.factories import ChannelFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("the replication role and the foreign keys' triggers: PostgreSQL only")


def chain(count: int, *, author: User | None = None) -> list[NewMessage]:
    return [
        NewMessage(role="user", content=f"Line {i} about the walrus.", parent=i - 1 if i else None, author=author)
        for i in range(count)
    ]


def replication_role() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('session_replication_role')")
        return cursor.fetchone()[0]


def deferred_trigger_events(action) -> int:
    """How many foreign-key checks `action` leaves for commit: with them all run at once (SET CONSTRAINTS ALL
    IMMEDIATE), the pending events show as the queries their triggers run, counted by pg_stat_xact."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(seq_scan + idx_scan), 0) FROM pg_stat_xact_user_tables WHERE relname = %s",
            ["chatcore_channel"],
        )
        before = cursor.fetchone()[0]
        action()
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        cursor.execute(
            "SELECT coalesce(sum(seq_scan + idx_scan), 0) FROM pg_stat_xact_user_tables WHERE relname = %s",
            ["chatcore_channel"],
        )
        return cursor.fetchone()[0] - before


def test_the_search_trigger_fires_in_any_replication_role():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgenabled FROM pg_trigger WHERE tgrelid = %s::regclass AND tgname = %s", [TABLE, PG_FUNCTION]
        )
        assert cursor.fetchone()[0] == "A"


def test_a_large_import_checks_the_keys_once_and_leaves_the_role_as_it_was():
    channel = ChannelFactory()
    count = PG_UNCHECKED_FROM_ROWS + 3
    built = []
    events = deferred_trigger_events(
        lambda: built.extend(
            messages_bulk_import(channel=channel, user=channel.owner, items=chain(count, author=channel.owner))
        )
    )
    assert events < 10  # the import's own statements on the channel, not a check per row
    assert replication_role() == "origin"
    stored = Message.objects.filter(channel=channel)
    assert stored.count() == count
    assert stored.filter(author=channel.owner).count() == count
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {TABLE} WHERE channel_id = %s AND search_vector @@ 'walrus'::tsquery", [channel.pk]
        )
        assert cursor.fetchone()[0] == count


def test_a_small_import_leaves_the_checks_to_the_constraints():
    channel = ChannelFactory()
    count = PG_UNCHECKED_FROM_ROWS - 1
    events = deferred_trigger_events(
        lambda: messages_bulk_import(channel=channel, user=channel.owner, items=chain(count))
    )
    assert events >= count


@pytest.mark.parametrize("broken", ["channel", "author"])
def test_a_large_import_that_refers_to_a_missing_row_writes_nothing(broken):
    channel = ChannelFactory()
    author = UserFactory()
    target = Channel.objects.get(pk=channel.pk)
    if broken == "channel":
        target.pk += 1_000_000
    else:
        author.pk += 1_000_000
    before = Message.objects.count()
    with pytest.raises(IntegrityError, match=broken), transaction.atomic():
        messages_bulk_import(
            channel=target, user=channel.owner, items=chain(PG_UNCHECKED_FROM_ROWS, author=author), move_cursor=False
        )
    assert Message.objects.count() == before
    assert replication_role() == "origin"


def test_a_large_import_with_an_invalid_item_writes_nothing_and_leaves_the_role_as_it_was():
    channel = ChannelFactory()
    items = chain(PG_UNCHECKED_FROM_ROWS + 50)
    items[-1].role = "narrator"
    with pytest.raises(ValidationError), transaction.atomic():
        messages_bulk_import(channel=channel, user=channel.owner, items=items)
    assert not Message.objects.filter(channel=channel).exists()
    assert replication_role() == "origin"


# What COPY's text format escapes or treats apart: tab, newlines, backslash, its NULL and end markers, quotes.
AWKWARD = ["tab\there", "line\nbreak\r\n", "back\\slash \\N", "\\.", "quote ' and \" é ✓ 😀", ""]


def test_an_import_sent_in_pieces_stores_every_row_once_in_order_as_given():
    channel = ChannelFactory()
    first = messages_bulk_import(channel=channel, user=channel.owner, items=chain(3))[-1]
    growing, size = 0, PG_FIRST_PIECE_ROWS
    while size < PG_PIECE_ROWS:  # the pieces that grow from the small first one
        growing, size = growing + size, min(PG_PIECE_ROWS, math.ceil(size * PG_PIECE_GROWTH))
    count = growing + 2 * PG_PIECE_ROWS + 3  # the growing pieces, two full ones, a short last one
    items = [
        NewMessage(
            role="assistant" if i % 2 else "user",
            content=f"{i} {AWKWARD[i % len(AWKWARD)]}",
            parent=i - 1 if i else None,
            metadata={"speaker": f'Ann\\{i}\t"x"'} if i % 5 == 0 else {},
        )
        for i in range(count)
    ]
    built = messages_bulk_import(channel=channel, user=channel.owner, items=items, under=first)
    rows = list(
        Message.objects.filter(channel=channel, depth__gte=3)
        .order_by("depth")
        .values_list("id", "content", "metadata", "parent_id", "segment", "path_chars")
    )
    assert [row[0] for row in rows] == [message.pk for message in built] == sorted(m.pk for m in built)
    assert [(row[1], row[2]) for row in rows] == [(item.content, item.metadata) for item in items]
    assert [row[3] for row in rows] == [first.pk] + [message.pk for message in built[:-1]]
    assert {row[4] for row in rows} == {first.segment}  # a chain under the last message continues its segment
    assert rows[-1][5] == first.path_chars + sum(len(item.content) for item in items)
    with connection.cursor() as cursor:  # the search trigger indexed each row, the speakers' names included
        cursor.execute(
            f"SELECT count(*) FROM {TABLE} WHERE channel_id = %s AND search_vector @@ to_tsquery('simple', 'ann')",
            [channel.pk],
        )
        assert cursor.fetchone()[0] == len([i for i in range(count) if i % 5 == 0])
