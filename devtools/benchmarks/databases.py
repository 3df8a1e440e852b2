"""Throwaway databases for the benchmarks, beside the default one and never it.

PostgreSQL: a database of the given name on the same server; SQLite: a file in
VAR_DIR. Each is migrated by `manage.py migrate` in a child process where it is
the default database, so data migrations land in it, not in the project's.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

from django.conf import settings as django_settings
from django.db import connections

from devtools.processes import database_url

ROOT = Path(__file__).resolve().parents[2]


# PostgreSQL's longest identifier.
NAME_MAX = 63


def server_name(alias: str) -> str:
    """The throwaway database's name on a shared server: the alias followed by the default database's name,
    so that runs against different databases (a checkout's, a test run's) never drop one another's."""
    default = re.sub(r"[^a-z0-9_]", "_", str(connections.databases["default"]["NAME"]).lower())
    return f"{alias}_{default}"[:NAME_MAX]


def database_open(alias: str) -> dict:
    """Create an empty database beside the default one, register it as `alias`,
    migrate it in a child process (where it is the default), return its config."""
    config = dict(connections.databases["default"])
    if connections["default"].vendor == "postgresql":
        name = server_name(alias)
        with connections["default"]._nodb_cursor() as cursor:
            # Another run of the scenario against the same default database (another checkout with the same
            # DATABASE_URL, an old and a new tree run side by side) is using it: dropping it WITH (FORCE)
            # would cut that run's server off its database mid-run. That run goes on; this one says why not.
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [name])
            if cursor.fetchone()[0]:
                raise RuntimeError(
                    f"The benchmark database {name} is in use by another run against the same default database; "
                    "wait for it to end, or run with another DATABASE_URL."
                )
            cursor.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            cursor.execute(f"CREATE DATABASE {name}")
        config["NAME"] = name
    else:
        path = Path(django_settings.VAR_DIR) / f"{alias}.sqlite3"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        config["NAME"] = str(path)
    for command in (["migrate", "--noinput", "-v0"], ["createcachetable"]):
        subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            check=True,
            env={**os.environ, "DATABASE_URL": database_url(config)},
        )
    connections.databases[alias] = config
    return config


def database_close(alias: str, config: dict) -> None:
    if alias in connections.databases:
        connections[alias].close()
        del connections.databases[alias]
        try:
            delattr(connections._connections, alias)
        except AttributeError:
            pass
    if config["ENGINE"].endswith("sqlite3"):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{config['NAME']}{suffix}").unlink(missing_ok=True)
    else:
        with connections["default"]._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {config['NAME']} WITH (FORCE)")
