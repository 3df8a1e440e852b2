"""Channel row locks: one way to take them, in one order (chatcore.locks)."""

import ast
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from chatcore import selectors
from chatcore.locks import channel_lock, channel_lock_with_cursor, summaries_lock, summary_lock
from chatcore.models import Channel
from chatcore.services import cursor_move, message_append, summary_write
from tests.chatcore.concurrency import held_meanwhile
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, PersonaFactory, build_path

ROOT = Path(__file__).resolve().parents[2]
OTHER_LOCKS = {"ApiToken", "LLMModel", "CompactionSettings"}  # models whose rows others lock: not a channel's


def test_the_channel_comes_locked_with_what_writers_read(user, django_assert_num_queries):
    channel = ChannelFactory(owner=user, model=LLMModelFactory(context_window=9_000), persona=PersonaFactory())
    with django_assert_num_queries(1) as captured:
        locked = channel_lock(channel_id=channel.pk)
        assert (locked.pk, locked.model.context_window, locked.persona.pk) == (
            channel.pk,
            9_000,
            channel.persona.pk,
        )
    if connection.vendor == "postgresql":
        assert captured.captured_queries[0]["sql"].endswith('FOR UPDATE OF "chatcore_channel"')


def test_a_writer_has_the_channel_then_the_cursor_locked_in_one_statement(user, django_assert_num_queries):
    channel = ChannelFactory(owner=user, model=LLMModelFactory(context_window=9_000), persona=PersonaFactory())
    *_, last = build_path(channel, 3)
    with transaction.atomic(), django_assert_num_queries(1) as captured:
        locked, cursor = channel_lock_with_cursor(channel_id=channel.pk, user_id=user.pk)
        assert cursor is not None and cursor.channel is locked
        assert (locked.pk, locked.model.context_window, locked.persona.pk) == (
            channel.pk,
            9_000,
            channel.persona.pk,
        )
        assert (cursor.leaf, cursor.leaf.root_id, cursor.summary) == (last, last.root_id, None)
    if connection.vendor == "postgresql":
        assert captured.captured_queries[0]["sql"].endswith('FOR UPDATE OF "chatcore_channel", "chatcore_cursor"')


def test_without_a_cursor_the_channel_is_locked_alone(user, other_user):
    channel = ChannelFactory(owner=user)
    build_path(channel, 1)
    with transaction.atomic():
        locked, cursor = channel_lock_with_cursor(channel_id=channel.pk, user_id=other_user.pk)
    assert (locked.pk, cursor) == (channel.pk, None)


def test_the_summary_in_force_comes_with_the_locked_cursor(user, django_assert_num_queries):
    channel = ChannelFactory(owner=user)
    first, _ = build_path(channel, 2)
    summary = summary_write(channel=channel, through_message=first, content="Earlier: a question.", created_by=None)
    with transaction.atomic(), django_assert_num_queries(1):
        _, cursor = channel_lock_with_cursor(channel_id=channel.pk, user_id=user.pk)
        assert cursor is not None and cursor.summary == summary and cursor.summary.through_message == first


@pytest.mark.django_db(transaction=True)
def test_a_cursor_moved_while_the_lock_was_awaited_is_the_one_a_message_follows(user):
    """Another writer holds the channel and moves the cursor: the waiting writer appends under the moved
    cursor (PostgreSQL: the moved cursor no longer joins the leaf read before the wait, so it is read again)."""
    if connection.vendor != "postgresql":
        pytest.skip("an SQLite write transaction waits before it reads anything")
    channel = ChannelFactory(owner=user)
    first, _, _ = build_path(channel, 3)
    with held_meanwhile(lambda: cursor_move(channel=channel, user=user, message_id=first.pk, exact=True)):
        message = message_append(channel=channel, user=user, role="user", content="Back to the start.")
    assert message.parent_id == first.pk
    assert selectors.cursor_get(channel=channel, user=user).leaf_id == message.pk


PSYCOPG_CACHED_STATEMENT_CHARS = 4_096  # psycopg._queries.MAX_CACHED_STATEMENT_LENGTH


def test_the_lock_with_the_cursor_is_a_statement_the_driver_parses_once(user):
    """psycopg keeps its parse of a statement up to PSYCOPG_CACHED_STATEMENT_CHARS long; a longer one, sent for
    every message appended, would be parsed again each time."""
    if connection.vendor != "postgresql":
        pytest.skip("the parse kept is psycopg's")
    channel = ChannelFactory(owner=user)
    build_path(channel, 1)
    with CaptureQueriesContext(connection) as captured, transaction.atomic():
        channel_lock_with_cursor(channel_id=channel.pk, user_id=user.pk)
    (statement,) = [query["sql"] for query in captured.captured_queries if "FOR UPDATE" in query["sql"]]
    assert len(statement) <= PSYCOPG_CACHED_STATEMENT_CHARS


@pytest.mark.django_db(transaction=True)
def test_a_summary_written_while_the_lock_was_awaited_is_the_one_a_message_continues(user):
    """Another writer holds the channel and writes a summary (the cursor stays on its leaf): the waiting
    writer's message continues under that summary, and the pressure counts from it (PostgreSQL: the cursor's
    row changed while the lock was awaited, so it and the summary in force are read again)."""
    if connection.vendor != "postgresql":
        pytest.skip("an SQLite write transaction waits before it reads anything")
    channel = ChannelFactory(owner=user)
    first, _, _ = build_path(channel, 3)

    def summarize():
        return summary_write(channel=channel, through_message=first, content="Earlier.", created_by=None)

    with held_meanwhile(summarize) as written:
        message = message_append(channel=channel, user=user, role="user", content="And then?")
    cursor = selectors.cursor_get(channel=channel, user=user)
    assert (cursor.leaf_id, cursor.summary_id) == (message.pk, written[0].pk)
    channel.refresh_from_db()
    assert channel.context_tokens == message.path_tokens - first.path_tokens + written[0].tokens


def test_a_channel_that_is_gone_cannot_be_locked(db):
    with pytest.raises(Channel.DoesNotExist):
        channel_lock(channel_id=0)


def test_a_summary_is_locked_after_its_channel(user):
    channel = ChannelFactory(owner=user)
    (message,) = build_path(channel, 1)
    summary = summary_write(channel=channel, through_message=message, content="Earlier: a question.", created_by=None)
    with CaptureQueriesContext(connection) as captured, transaction.atomic():
        locked_channel, locked_summary = summary_lock(summary=summary)
    assert (locked_channel.pk, locked_summary.pk) == (channel.pk, summary.pk)
    tables = [
        query["sql"].split(" FROM ")[1].split()[0] for query in captured.captured_queries if " FROM " in query["sql"]
    ]
    assert tables == ['"chatcore_channel"', '"chatcore_summary"']


def test_a_channel_s_summaries_are_locked_in_id_order(user):
    channel = ChannelFactory(owner=user)
    first, second, third = build_path(channel, 3)
    newer = summary_write(channel=channel, through_message=second, content="Up to the second.", created_by=None)
    older = summary_write(channel=channel, through_message=first, content="Up to the first.", created_by=None)
    summary_write(channel=channel, through_message=third, content="Not asked for.", created_by=None)
    with transaction.atomic():
        locked = channel_lock(channel_id=channel.pk)
        summaries = summaries_lock(channel=locked, through_message_ids=[first.pk, second.pk])
    assert [summary.pk for summary in summaries] == sorted([newer.pk, older.pk])


def _row_locks(path: Path) -> list[str]:
    """ "path Root" for each `select_for_update` call in the file: Root is the name its queryset starts from
    (a model, or a variable that hides which one)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr != "select_for_update":
                continue
            receiver = node.func.value
            while isinstance(receiver, ast.Attribute | ast.Call):
                receiver = receiver.func if isinstance(receiver, ast.Call) else receiver.value
            name = receiver.id if isinstance(receiver, ast.Name) else type(receiver).__name__
            found.append(f"{path.relative_to(ROOT)} {name}")
    return found


def test_only_the_locks_module_locks_channels_and_summaries():
    """Any other row lock starts from its model's name, so that none hides a channel or summary behind a
    variable (a new one is added to OTHER_LOCKS)."""
    found = sorted(
        lock
        for package in ("chatcore", "compaction", "devtools")
        for path in sorted((ROOT / package).rglob("*.py"))
        for lock in _row_locks(path)
    )
    ours = [lock for lock in found if lock.startswith("chatcore/locks.py ")]
    assert ours == [
        "chatcore/locks.py Channel",
        "chatcore/locks.py Cursor",
        "chatcore/locks.py Summary",
        "chatcore/locks.py rows",
    ]
    others = [lock for lock in found if lock not in ours]
    assert others and all(lock.split()[-1] in OTHER_LOCKS for lock in others), others
