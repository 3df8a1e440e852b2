"""Path segments and the full-text index of messages (see chatcore.search.schema)."""

from django.conf import settings
from django.db import migrations, models

from chatcore.search import schema


def install(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        schema.segments_backfill(cursor)
        language = getattr(settings, "CHATCORE_SEARCH_LANGUAGE", "english")
        for statement in schema.install_statements(connection.vendor, language):
            cursor.execute(statement)


def uninstall(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for statement in schema.uninstall_statements(schema_editor.connection.vendor):
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("chatcore", "0002_message_chain_hash_and_root")]

    operations = [
        migrations.AddField(
            model_name="message",
            name="segment",
            field=models.BigIntegerField(blank=True, editable=False, null=True),
        ),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(fields=["segment", "depth"], name="message_segment_idx"),
        ),
        migrations.RunPython(install, uninstall, elidable=False),
    ]
