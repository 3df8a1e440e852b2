"""PostgreSQL: the message's search document becomes a stored generated column and the index's row trigger
only works out the segment of a row that arrives without one (chatcore.search.schema): a row trigger that ran
for every row forced a COPY to insert row by row and ran its function for each, a share of a bulk import's
server time. The documents are the same, byte for byte; adding the column rewrites the table once and
computes them again, in the language the installed index was built with. Backwards, the plain column and the
trigger that kept it come back, the documents computed again. Nothing changes on SQLite, nor where the index
is not installed."""

from django.conf import settings
from django.db import migrations

from chatcore.search import schema

_INSTALLED = "SELECT 1 FROM pg_proc WHERE proname = %s"


def _installed_language(cursor) -> str | None:
    """The installed index's language; None when the index is not installed."""
    cursor.execute(_INSTALLED, [schema.PG_FUNCTION])
    if cursor.fetchone() is None:
        return None
    default = getattr(settings, "CHATCORE_SEARCH_LANGUAGE", "english")
    return schema.installed_language(cursor, "postgresql", default)


def document_generated(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        language = _installed_language(cursor)
        if language is None or schema.pg_document_generated(cursor):
            return
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred checks pending on the table it alters
        for statement in schema.install_statements("postgresql", language):
            cursor.execute(statement)


def document_kept_by_trigger(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        language = _installed_language(cursor)
        if language is None or not schema.pg_document_generated(cursor):
            return
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for statement in schema.postgresql_before_generated_statements(language):
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("chatcore", "0010_search_speaker_when_named"),
    ]

    operations = [
        migrations.RunPython(document_generated, document_kept_by_trigger, elidable=False),
    ]
