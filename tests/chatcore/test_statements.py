"""A message appended in one statement (chatcore.statements: a data-modifying WITH on PostgreSQL, the placement
view's trigger on SQLite) writes exactly the rows that the writes one by one would."""

import datetime

import pytest
from django.apps import apps
from django.db import connection
from django.db.models.signals import post_migrate, pre_migrate
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext

from chatcore import services, statements
from chatcore.models import Channel, Cursor, Message, UsageEntry
from chatcore.signals import ReadAlong
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, UserFactory, build_path

WHEN = datetime.datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=datetime.UTC)
# What differs between two channels built the same way: their own rows' ids and the times of the writes.
UNCOMPARED = {"id", "channel", "parent", "root", "segment", "leaf", "summary", "through_message", "title", "model"}
UNCOMPARED_TIMES = {"updated_at", "last_activity_at", "created_at"}


def _built(owner) -> tuple[Channel, list[Message]]:
    channel = ChannelFactory(owner=owner, model=LLMModelFactory(context_window=3_000))
    messages = build_path(channel, 6)
    services.summary_write(channel=channel, through_message=messages[2], content="Early on.", created_by=None)
    return channel, messages


def _appended(channel: Channel, messages: list[Message], *, user, parent_index: int) -> dict:
    usage = UsageEntry(user=user, channel=channel, role="chat", model="m", input_tokens=7, output_tokens=3, cost=1)
    message = services.message_append(
        channel=channel,
        user=user,
        role="assistant",
        content="An answer.",
        parent_id=messages[parent_index].pk,
        metadata={"model": "m"},
        created_at=WHEN,
        companions=(usage,),
    )
    stored = Message.objects.get(pk=message.pk)
    cursor = Cursor.objects.get(channel=channel, user=user)
    channel = Channel.objects.get(pk=channel.pk)
    return {
        "message": {k: v for k, v in model_to_dict(stored).items() if k not in UNCOMPARED},
        "segment_is_own": stored.segment == stored.pk,
        "segment_is_parent_s": stored.segment == Message.objects.get(pk=messages[parent_index].pk).segment,
        "cursor_on_it": cursor.leaf_id == message.pk,
        "boundary": cursor.summary.through_message.depth if cursor.summary else None,
        "channel": {k: v for k, v in model_to_dict(channel).items() if k not in UNCOMPARED | UNCOMPARED_TIMES},
        "usage": [
            {k: v for k, v in model_to_dict(row).items() if k not in UNCOMPARED | UNCOMPARED_TIMES | {"user"}}
            for row in UsageEntry.objects.filter(channel=channel)
        ],
    }


@pytest.mark.parametrize(("guest", "parent_index"), [(False, 5), (False, 1), (True, 5)])
def test_one_statement_writes_what_the_rows_one_by_one_write(db, monkeypatch, guest, parent_index):
    """The owner on the active path (the summary in force kept, the pressure saved), the owner on a branch that
    left before the summary, a guest (the owner's pressure untouched); each with the model call's usage row."""
    owner = UserFactory()
    at_once, at_once_messages = _built(owner)
    one_by_one, one_by_one_messages = _built(owner)
    user = UserFactory() if guest else owner
    if guest:
        for channel, messages in ((at_once, at_once_messages), (one_by_one, one_by_one_messages)):
            services.cursor_move(channel=channel, user=user, message_id=messages[parent_index].pk, exact=True)
    written_at_once = _appended(at_once, at_once_messages, user=user, parent_index=parent_index)
    monkeypatch.setattr(statements, "placeable_in_one", lambda *, message, companions: False)
    written_one_by_one = _appended(one_by_one, one_by_one_messages, user=user, parent_index=parent_index)
    for key, value in written_at_once.items():
        assert (key, value) == (key, written_one_by_one[key])
    assert written_at_once["cursor_on_it"] and len(written_at_once["usage"]) == 1
    assert written_at_once["segment_is_own"] is (parent_index != 5)
    assert written_at_once["segment_is_parent_s"] is (parent_index == 5)


def test_a_reply_s_writes_are_one_statement(db, django_assert_num_queries):
    """After the channel's lock (one statement), the usage row, the message, the cursor and the pressure."""
    channel = ChannelFactory()
    build_path(channel, 2)
    usage = UsageEntry(user=channel.owner, channel=channel, role="chat", model="m")
    # The lock and the write, with the service's savepoint and its release inside the test's transaction.
    with django_assert_num_queries(4):
        services.message_append(
            channel=channel, user=channel.owner, role="assistant", content="Yes.", companions=(usage,)
        )


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the placement view is SQLite's")
def test_the_placement_view_has_a_column_for_every_field(db):
    """A field added to the message or the usage row needs the view made again by a migration
    (statements.sqlite_placement_statements): this names the column it lacks."""
    with connection.cursor() as cursor:
        cursor.execute(f"PRAGMA table_info({statements.SQLITE_PLACEMENT_VIEW})")
        columns = [row[1] for row in cursor.fetchall()]
    assert sorted(columns) == sorted(statements._placement_columns(Message, UsageEntry))


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the placement view is SQLite's")
def test_a_migration_that_rebuilds_a_table_the_trigger_names_still_runs(transactional_db):
    """SQLite rebuilds a table it alters and renames the copy, which fails while a trigger names the dropped
    table: `migrate` drops the view first and makes it again after (chatcore.apps), and appends go on."""
    app = apps.get_app_config("chatcore")
    signal = {"app_config": app, "verbosity": 0, "interactive": False, "using": connection.alias}
    pre_migrate.send(sender=app, **signal)
    with connection.schema_editor() as editor:
        editor._remake_table(Channel)
    post_migrate.send(sender=app, **signal)
    channel = ChannelFactory()
    build_path(channel, 1)  # the first message makes the cursor
    with CaptureQueriesContext(connection) as queries:
        message = services.message_append(channel=channel, user=channel.owner, role="user", content="Still here.")
    assert Cursor.objects.get(channel=channel).leaf_id == message.pk
    assert any(statements.SQLITE_PLACEMENT_VIEW in query["sql"] for query in queries.captured_queries)


def test_rows_read_along_come_with_the_write_as_django_loads_them(db, django_assert_num_queries):
    """A row read along (chatcore.signals.ReadAlong) comes from the write's own statement: its fields converted as
    a query set's, the others deferred, the same instance a query would give; a missing row is None."""
    channel = ChannelFactory()
    build_path(channel, 2)
    model = LLMModelFactory(context_window=3_000, is_active=False)
    read = statements.RowsAlong(
        wanted={
            "model": ReadAlong(model=type(model), pk=model.pk, fields=("name", "context_window", "is_active")),
            "gone": ReadAlong(model=type(model), pk=model.pk + 1_000, fields=("name",)),
        }
    )
    with django_assert_num_queries(4):  # the lock and the write, with the savepoint and its release
        services.message_append(channel=channel, user=channel.owner, role="assistant", content="Yes.", read_along=read)
    row = read.rows["model"]
    assert isinstance(row, type(model)) and read.rows["gone"] is None
    assert (row.pk, row.name, row.context_window, row.is_active) == (model.pk, model.name, 3_000, False)
    assert row.get_deferred_fields() == {field.attname for field in type(model)._meta.concrete_fields} - {
        "id",
        "name",
        "context_window",
        "is_active",
    }
    assert row._state.adding is False and row._state.db == connection.alias


def test_nothing_is_read_along_when_the_writes_go_one_by_one(db, monkeypatch):
    channel = ChannelFactory()
    build_path(channel, 2)
    model = LLMModelFactory()
    read = statements.RowsAlong(wanted={"model": ReadAlong(model=type(model), pk=model.pk, fields=("name",))})
    monkeypatch.setattr(statements, "placeable_in_one", lambda *, message, companions: False)
    services.message_append(channel=channel, user=channel.owner, role="assistant", content="Yes.", read_along=read)
    assert read.rows == {}
