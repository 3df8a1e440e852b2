"""Reads (chatcore.selectors): a channel looked up for its owner by the statement built once is the row the
query set gives, and anything else is 'not found'."""

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteWrapper

from chatcore import selectors
from chatcore.errors import NotFound
from chatcore.models import Channel
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, PersonaFactory


def _fields(channel: Channel) -> dict:
    return {key: value for key, value in channel.__dict__.items() if key != "_state"}


def test_a_channel_comes_as_the_query_set_gives_it_with_its_persona_and_model(user, django_assert_num_queries):
    channel = ChannelFactory(owner=user, persona=PersonaFactory(), model=LLMModelFactory())
    expected = selectors.channel_list(user=user).get(pk=channel.pk)

    with django_assert_num_queries(1):
        found = selectors.channel_get(user=user, channel_id=channel.pk)
        assert (found.persona, found.model) == (channel.persona, channel.model)  # loaded with it

    assert found == expected
    assert _fields(found) == _fields(expected)
    assert _fields(found.persona) == _fields(expected.persona)
    assert _fields(found.model) == _fields(expected.model)
    assert selectors.channel_get(user=user, channel_id=str(channel.pk)) == channel  # a query parameter's text


@pytest.mark.parametrize("channel_id", ["x", None, "1.5", 2**63, -(2**63) - 1, 0])
def test_an_id_that_names_no_channel_is_not_found(user, channel_id):
    ChannelFactory(owner=user)

    with pytest.raises(NotFound):
        selectors.channel_get(user=user, channel_id=channel_id)


def test_another_user_s_deleted_or_an_anonymous_user_s_channel_is_not_found(user, other_user):
    mine = ChannelFactory(owner=user)
    gone = ChannelFactory(owner=user)
    Channel.objects.filter(pk=gone.pk).update(deleted_at=datetime(2026, 1, 1, tzinfo=UTC))

    for who, channel in ((other_user, mine), (user, gone), (AnonymousUser(), mine)):
        with pytest.raises(NotFound):
            selectors.channel_get(user=who, channel_id=channel.pk)


class _UtcConnection:
    """What SQLite's converter of dates reads of its connection: the zone (UTC, as the site's)."""

    timezone = UTC


@pytest.mark.parametrize(
    "stored",
    [
        ["2023-05-08 10:00:00", "2023-05-08 10:00:00.500000", "0001-01-01 00:00:00", "9999-12-31 23:59:59.999999"],
        ["2023-05-08 10:00:00", None, "2023-05-08 10:00:00.000001"],
        [None, None],
        ["2023-05-08 10:00:00", "2023-05-08 10:00:00+02:00"],
        ["2023-05-08 10:00:00", "2023-05-08T10:00:00Z"],
        ["2023-05-08 10:00:00", "2023-05-08"],
        ["20230508T100000", "2023-05-08 10:00"],
        [],
    ],
)
def test_sqlite_s_stored_dates_are_read_as_django_s_converter_reads_them(stored):
    """The shortcut (each date parsed with UTC's offset) gives what Django's converter gives, down to the tzinfo
    object; a column with a zone of its own, a bare date or another form is read Django's way."""
    db = _UtcConnection()
    convert = SQLiteWrapper.ops_class(db).convert_datetimefield_value
    expected = [convert(value, None, db) for value in stored]
    read = selectors._stored_dates(list(stored), convert, None, db)
    assert read == expected
    assert [getattr(date, "tzinfo", None) for date in read] == [getattr(date, "tzinfo", None) for date in expected]
    assert all(date is None or date.tzinfo is not None for date in read)


def test_dates_stored_as_django_writes_them_are_parsed_without_its_converter():
    db, calls = _UtcConnection(), []

    def convert(value, expression, connection):
        calls.append(value)
        return value

    read = selectors._stored_dates(["2023-05-08 10:00:00", "2023-05-08 10:00:00.500000"], convert, None, db)
    assert read == [datetime(2023, 5, 8, 10, tzinfo=UTC), datetime(2023, 5, 8, 10, 0, 0, 500000, tzinfo=UTC)]
    assert calls == []
