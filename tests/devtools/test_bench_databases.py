"""The benchmarks' throwaway databases: a run never drops the one another run is using."""

import psycopg
import pytest
from django.db import connection, connections

from devtools.benchmarks.databases import database_open, server_name
from devtools.processes import database_url

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="databases on a shared server")

ALIAS = "bench_in_use"


def test_a_run_refuses_a_database_another_run_is_using(db):
    """Two runs against the same default database name the same throwaway database: the second must not
    drop it WITH (FORCE) under the first run's server (which then fails every call); it stops, saying why."""
    name = server_name(ALIAS)
    with connections["default"]._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        cursor.execute(f"CREATE DATABASE {name}")
    other_run = psycopg.connect(database_url({**connection.settings_dict, "NAME": name}))
    try:
        with pytest.raises(RuntimeError, match="in use by another run"):
            database_open(ALIAS)
        assert other_run.execute("SELECT 1").fetchone() == (1,)  # the other run's connection was not cut
    finally:
        other_run.close()
        with connections["default"]._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    assert ALIAS not in connections.databases
