"""PostgreSQL's search trigger fires whatever the session's replication role (chatcore.search.schema):
a large import skips the foreign keys' per-row triggers that way (chatcore.bulk) and the index must still
be kept. Nothing to do on SQLite, nor where the index is not installed."""

from django.db import migrations

from chatcore.search import schema

_INSTALLED = "SELECT 1 FROM pg_trigger WHERE tgrelid = %s::regclass AND tgname = %s"


def _trigger_installed(cursor) -> bool:
    cursor.execute(_INSTALLED, [schema.TABLE, schema.PG_FUNCTION])
    return cursor.fetchone() is not None


def trigger_always(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        if _trigger_installed(cursor):
            cursor.execute(schema.PG_TRIGGER_ALWAYS)


def trigger_origin(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        if _trigger_installed(cursor):
            cursor.execute(f"ALTER TABLE {schema.TABLE} ENABLE TRIGGER {schema.PG_FUNCTION}")


class Migration(migrations.Migration):
    dependencies = [
        ("chatcore", "0006_api_tokens_of_the_apps"),
    ]

    operations = [
        migrations.RunPython(trigger_always, trigger_origin, elidable=False),
    ]
