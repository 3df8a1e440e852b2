"""The host's database options (project.settings) as a connection sees them."""

import pytest
from django.conf import settings
from django.db import connection


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's connection options")
def test_sqlite_reads_its_file_through_a_memory_map_in_wal_mode(db):
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA mmap_size")
        assert cursor.fetchone()[0] == settings.SQLITE_MMAP_BYTES > 0
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's connection options")
def test_sqlite_checkpoints_a_larger_wal_and_caches_a_large_write_until_its_commit(db):
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        assert cursor.fetchone()[0] == settings.SQLITE_WAL_AUTOCHECKPOINT_PAGES > 1_000  # above SQLite's default
        cursor.execute("PRAGMA cache_size")
        assert cursor.fetchone()[0] == -settings.SQLITE_CACHE_KIB
        assert settings.SQLITE_CACHE_KIB > 2_000  # above SQLite's default
