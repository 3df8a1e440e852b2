"""A cursor whose statements PostgreSQL plans once per connection: for the statements a hot path repeats.

Django sends every statement with its values written into the text, so
PostgreSQL parses and plans it again each time. For a small read with
several joins or a recursive walk (a search's cursor and path segments,
its hits' neighbours), or a reply's writes in one data-modifying WITH
(chatcore.statements), that parsing and planning costs more than running it
does. `prepared_cursor` sends the statement and its values apart (psycopg's
server-side binding), so that psycopg prepares a statement it has sent
`prepare_threshold` times on a connection and PostgreSQL keeps its plan.

Only where the site turned prepared statements on: the database's
`OPTIONS["prepare_threshold"]` (Django leaves it off so that a connection
pooler in transaction mode, which can send a connection's next statement to
another server process, keeps working). Everywhere else, and on SQLite
(whose driver keeps each statement text compiled already), it is the
ordinary cursor. Only statements whose plan does not hang on their values
belong here: after a few runs PostgreSQL may keep one plan for all values.
Statements go through Django's cursor wrapper, so they are counted and
logged like any other.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, connections
from django.db.backends.utils import CursorWrapper


def _prepares(db) -> bool:
    return db.vendor == "postgresql" and getattr(db.connection, "prepare_threshold", None) is not None


@functools.cache
def _timestamptz_loader(timezone) -> type:
    """The loader of a timestamptz that gives what Django's gives (the value in the connection's time zone,
    with `timezone` as its tzinfo; None: naive), parsed by psycopg's own loader: its C one where psycopg's C
    implementation is installed. Django's is a Python subclass of psycopg's Python loader, which parses each
    value in Python: most of what reading a search's hits cost the client (a C class cannot be subclassed,
    so this one holds an instance of it)."""
    import psycopg
    from psycopg.adapt import Loader

    parser: Any = psycopg.adapters.get_loader(psycopg.adapters.types["timestamptz"].oid, psycopg.pq.Format.TEXT)

    class TimestamptzLoader(Loader):
        def __init__(self, oid: int, context: Any = None) -> None:
            super().__init__(oid, context)
            self._parse = parser(oid, context).load

        def load(self, data: Any) -> Any:
            # psycopg gives the session's zone, which Django sets to the connection's: most dates have their
            # tzinfo already, and a `replace` (a new date) would cost about as much as the parsing.
            value = self._parse(data)
            return value if value.tzinfo is timezone else value.replace(tzinfo=timezone)

    return TimestamptzLoader


def timestamps_parsed_natively(*, cursor: CursorWrapper, db: Any) -> None:
    """Make `cursor` (on `db`) read a timestamptz with psycopg's own parser (`_timestamptz_loader`): the same
    values as Django's loader gives. For a statement that reads thousands of rows (a compaction's path), where
    Django's loader, parsing each date in Python, cost more than the rest of a row's conversion. Nothing on SQLite."""
    if db.vendor == "postgresql":
        cursor.cursor.adapters.register_loader("timestamptz", _timestamptz_loader(db.timezone))


@contextmanager
def prepared_cursor() -> Iterator[CursorWrapper]:
    """A cursor (as `connection.cursor()`) whose statements are prepared where the site allows it."""
    db = connections[connection.alias]  # the connection itself, looked up once (the proxy does it per use)
    db.close_if_health_check_failed()
    db.ensure_connection()
    if not _prepares(db):
        with db.cursor() as cursor:
            yield cursor
        return
    import psycopg

    db.validate_thread_sharing()
    with db.wrap_database_errors:
        raw: Any = psycopg.Cursor(db.connection)  # server-side binding: the values travel apart
        # As Django's own cursors: datetimes in the connection's time zone (_timestamptz_loader).
        raw.adapters.register_loader("timestamptz", _timestamptz_loader(db.timezone))
    wrapped = db.make_debug_cursor(raw) if db.queries_logged else db.make_cursor(raw)
    with wrapped as cursor:
        yield cursor
