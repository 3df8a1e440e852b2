"""A cursor whose statements PostgreSQL plans once per connection: for the reads a hot path repeats.

Django sends every statement with its values written into the text, so
PostgreSQL parses and plans it again each time. For a small read with
several joins or a recursive walk (a search's cursor and path segments,
its hits' neighbours) that planning costs several times what running it
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

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, connections
from django.db.backends.utils import CursorWrapper


def _prepares(db) -> bool:
    return db.vendor == "postgresql" and getattr(db.connection, "prepare_threshold", None) is not None


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
    from django.db.backends.postgresql.psycopg_any import register_tzloader

    db.validate_thread_sharing()
    with db.wrap_database_errors:
        raw: Any = psycopg.Cursor(db.connection)  # server-side binding: the values travel apart
        # As Django's own cursors: the connection's time zone, where the connection's loader has another one.
        timestamptz = psycopg.adapters.types["timestamptz"].oid
        loader = db.connection.adapters.get_loader(timestamptz, psycopg.pq.Format.TEXT)
        if db.timezone != getattr(loader, "timezone", None):
            register_tzloader(db.timezone, raw)
    wrapped = db.make_debug_cursor(raw) if db.queries_logged else db.make_cursor(raw)
    with wrapped as cursor:
        yield cursor
