"""SQLite: the view through which a message, its usage row, the cursor that moves onto it and the channel's
pressure are written in one statement (chatcore.statements.sqlite_append_and_place), as PostgreSQL writes them
in one data-modifying WITH. No table changes and no row is rewritten; on PostgreSQL nothing is made."""

from django.db import migrations

from chatcore import statements


def placement_install(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "sqlite":
        return
    for statement in statements.sqlite_placement_statements(
        quote=connection.ops.quote_name,
        message_model=apps.get_model("chatcore", "Message"),
        usage_model=apps.get_model("chatcore", "UsageEntry"),
        cursor_table=apps.get_model("chatcore", "Cursor")._meta.db_table,
        channel_table=apps.get_model("chatcore", "Channel")._meta.db_table,
    ):
        schema_editor.execute(statement)


def placement_uninstall(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "sqlite":
        return
    for statement in statements.sqlite_placement_uninstall_statements(quote=connection.ops.quote_name):
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("chatcore", "0007_search_trigger_always"),
    ]

    operations = [
        migrations.RunPython(placement_install, placement_uninstall, elidable=False),
    ]
