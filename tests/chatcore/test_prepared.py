"""chatcore.prepared: statements prepared once per connection where the site allows it, else the ordinary cursor."""

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatcore.prepared import prepared_cursor, timestamps_parsed_natively

postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
MARK = "/* chatcore prepared test */"


def _prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


def _run(times: int) -> list:
    answers = []
    for value in range(times):
        with prepared_cursor() as cursor:
            cursor.execute(f"SELECT %s + 1 {MARK}", [value])
            answers.append(cursor.fetchone()[0])
    return answers


@postgresql_only
def test_a_statement_sent_often_is_prepared_on_the_connection(db):
    threshold = connection.connection.prepare_threshold
    assert threshold is not None  # the site turns it on (project.settings)
    assert _run(threshold + 2) == list(range(1, threshold + 3))
    assert any(MARK in statement for statement in _prepared_statements())


@postgresql_only
def test_without_a_threshold_nothing_is_prepared(db, monkeypatch):
    connection.ensure_connection()
    monkeypatch.setattr(connection.connection, "prepare_threshold", None)
    assert _run(8) == list(range(1, 9))
    assert not any(MARK in statement for statement in _prepared_statements())


def test_its_statements_are_counted_and_converted_as_the_ordinary_cursors(db):
    with CaptureQueriesContext(connection) as captured:
        for _ in range(7):
            with prepared_cursor() as cursor:
                cursor.execute("SELECT %s, CURRENT_TIMESTAMP", [3])
                number, moment = cursor.fetchone()
    assert len(captured.captured_queries) == 7
    with connection.cursor() as cursor:
        cursor.execute("SELECT CURRENT_TIMESTAMP")
        (ordinary,) = cursor.fetchone()
    assert number == 3
    assert type(moment) is type(ordinary)
    if isinstance(moment, dt.datetime):
        assert moment.tzinfo == ordinary.tzinfo


@postgresql_only
def test_its_datetimes_are_those_of_the_ordinary_cursors(db):
    """The same values as Django's loader gives, down to the tzinfo object (psycopg's own parser, Django's zone),
    for instants written in other zones, with and without microseconds, at the ends of the range, and NULL."""
    sql = (
        "SELECT '2023-05-08 10:00:00.5+02'::timestamptz, '2023-05-08 23:59:59-07:30'::timestamptz, "
        "'0001-01-01 00:00:00+00'::timestamptz, '9999-12-31 23:59:59.999999+00'::timestamptz, NULL::timestamptz, "
        "CURRENT_TIMESTAMP"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        ordinary = cursor.fetchone()
    for _ in range(7):  # prepared from the 5th run on: its rows come as the others
        with prepared_cursor() as cursor:
            cursor.execute(sql)
            read = cursor.fetchone()
        assert read == ordinary
        assert [repr(value) for value in read] == [repr(value) for value in ordinary]
        assert all(value.tzinfo is connection.timezone for value in read if value is not None)


def test_a_cursor_made_to_parse_dates_natively_reads_the_ordinary_values(db):
    """`timestamps_parsed_natively` (a compaction's path): the values, their repr and tzinfo of Django's loader."""
    sql = (
        "SELECT '2023-05-08 10:00:00.5+02'::timestamptz, '0001-01-01 00:00:00+00'::timestamptz, "
        "'9999-12-31 23:59:59.999999+00'::timestamptz, NULL::timestamptz, CURRENT_TIMESTAMP"
    )
    if connection.vendor != "postgresql":  # SQLite's dates are text to Django: the same statement without casts
        sql = "SELECT '2023-05-08 10:00:00.5', NULL"
    with connection.cursor() as cursor:
        cursor.execute(sql)
        ordinary = cursor.fetchone()
    with connection.cursor() as cursor:
        timestamps_parsed_natively(cursor=cursor, db=connection)
        cursor.execute(sql)
        read = cursor.fetchone()
    assert read == ordinary
    assert [repr(value) for value in read] == [repr(value) for value in ordinary]
