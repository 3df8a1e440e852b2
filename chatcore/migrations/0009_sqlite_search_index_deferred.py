"""SQLite: the full-text index's triggers note a message's id as pending instead of indexing its words in the
statement that wrote it, and the next search indexes the pending messages together (chatcore.search.schema).
The index's data is kept as it is: every existing message stays indexed and none is pending. Backwards, the
pending messages are indexed and the triggers of before (which index at once) are made again. On PostgreSQL
nothing changes."""

from django.db import migrations

from chatcore.search import schema

_INSTALLED = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s"
_SPEAKER = "coalesce(json_extract(NEW.metadata, '$.speaker'), '')"
_SEGMENT_CASE = f"""CASE WHEN NEW.parent_id IS NULL OR EXISTS (
            SELECT 1 FROM {schema.TABLE} c WHERE c.parent_id = NEW.parent_id AND c.id < NEW.id)
        THEN NEW.id ELSE (SELECT p.segment FROM {schema.TABLE} p WHERE p.id = NEW.parent_id) END"""
# The triggers as they were before this migration, word for word.
_IMMEDIATE_TRIGGERS = [
    f"""CREATE TRIGGER {schema.FTS_TABLE}_insert AFTER INSERT ON {schema.TABLE} BEGIN
            UPDATE {schema.TABLE} SET segment = {_SEGMENT_CASE} WHERE id = NEW.id AND NEW.segment IS NULL;
            INSERT INTO {schema.FTS_TABLE}(rowid, content, speaker) VALUES (NEW.id, NEW.content, {_SPEAKER});
        END""",
    f"""CREATE TRIGGER {schema.FTS_TABLE}_update AFTER UPDATE OF content, metadata ON {schema.TABLE} BEGIN
            DELETE FROM {schema.FTS_TABLE} WHERE rowid = OLD.id;
            INSERT INTO {schema.FTS_TABLE}(rowid, content, speaker) VALUES (NEW.id, NEW.content, {_SPEAKER});
        END""",
    f"""CREATE TRIGGER {schema.FTS_TABLE}_delete AFTER DELETE ON {schema.TABLE} BEGIN
            DELETE FROM {schema.FTS_TABLE} WHERE rowid = OLD.id;
        END""",
]


def _index_installed(cursor) -> bool:
    cursor.execute(_INSTALLED, [schema.FTS_TABLE])
    return cursor.fetchone() is not None


def triggers_deferred(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        if _index_installed(cursor):
            for statement in schema.sqlite_trigger_statements():
                cursor.execute(statement)


def triggers_immediate(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        if not _index_installed(cursor):
            return
        cursor.execute(_INSTALLED, [schema.PENDING_TABLE])
        if cursor.fetchone() is not None:
            for statement in schema.SQLITE_INDEX_PENDING:
                cursor.execute(statement)
        for suffix in ("insert", "update", "delete"):
            cursor.execute(f"DROP TRIGGER IF EXISTS {schema.FTS_TABLE}_{suffix}")
        for statement in _IMMEDIATE_TRIGGERS:
            cursor.execute(statement)
        cursor.execute(f"DROP TABLE IF EXISTS {schema.PENDING_TABLE}")


class Migration(migrations.Migration):
    dependencies = [
        ("chatcore", "0008_sqlite_message_placed"),
    ]

    operations = [
        migrations.RunPython(triggers_deferred, triggers_immediate, elidable=False),
    ]
