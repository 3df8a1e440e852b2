"""python manage.py search_reindex

Rebuilds the full-text index of every message with the language in
CHATCORE_SEARCH_LANGUAGE (environment: SEARCH_LANGUAGE): the PostgreSQL
trigger and tsvector column, or SQLite's FTS5 table and its tokenizer. Run
it after changing the language; searches in between stem queries with the
new language against words indexed with the old one.
"""

from django.core.management.base import BaseCommand
from django.db import connection, transaction

from chatcore import conf
from chatcore.models import Message
from chatcore.search import schema


class Command(BaseCommand):
    help = "Rebuild the full-text index of messages with the configured search language."

    def handle(self, *args, **options):
        with transaction.atomic(), connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred checks pending on the table
            for statement in schema.reindex_statements(connection.vendor, conf.SEARCH_LANGUAGE):
                cursor.execute(statement)
        self.stdout.write(
            f"Indexed {Message.objects.count():,} messages ({connection.vendor}, language {conf.SEARCH_LANGUAGE})."
        )
