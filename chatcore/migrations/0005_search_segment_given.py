"""The search index's insert triggers leave a segment the writer gave as it is (chatcore.search.schema):
the bulk import gives it, instead of two lookups per row into the table it is filling. The index's
data is not rebuilt; the language it was built with is kept."""

from django.conf import settings
from django.db import migrations

from chatcore.search import schema


def triggers_replace(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        default = getattr(settings, "CHATCORE_SEARCH_LANGUAGE", "english")
        language = schema.installed_language(cursor, connection.vendor, default)
        if connection.vendor == "postgresql" and schema.pg_document_generated(cursor):
            return  # installed after 0010 (a new database): the segment is the generated column's trigger's
        for statement in schema.segment_trigger_statements(connection.vendor, language):
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("chatcore", "0004_teams"),
    ]

    operations = [
        # Backwards, the new triggers do for the old code exactly what the old ones did (it never gives a segment).
        migrations.RunPython(triggers_replace, migrations.RunPython.noop, elidable=False),
    ]
