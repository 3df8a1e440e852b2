"""PostgreSQL: the search trigger computes the speaker's part of a message's document only when its metadata
names a speaker (chatcore.search.schema); for every other message that part was empty and the document is the
same, byte for byte, so the index's data is not rebuilt and the language it was built with is kept. Backwards
nothing is needed: the old function made the same documents. On SQLite nothing changes."""

from django.conf import settings
from django.db import migrations

from chatcore.search import schema

_INSTALLED = "SELECT 1 FROM pg_proc WHERE proname = %s"


def function_replace(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(_INSTALLED, [schema.PG_FUNCTION])
        if cursor.fetchone() is None or schema.pg_document_generated(cursor):
            return  # not installed, or installed with the generated column (a new database: 0011's form)
        default = getattr(settings, "CHATCORE_SEARCH_LANGUAGE", "english")
        language = schema.installed_language(cursor, connection.vendor, default)
        for statement in schema.segment_trigger_statements(connection.vendor, language):
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("chatcore", "0009_sqlite_search_index_deferred"),
    ]

    operations = [
        migrations.RunPython(function_replace, migrations.RunPython.noop, elidable=False),
    ]
