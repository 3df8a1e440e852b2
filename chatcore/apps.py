from django.apps import AppConfig
from django.db.models.signals import post_migrate, pre_migrate

# The migration that makes SQLite's placement view (chatcore.statements.SQLITE_PLACEMENT_VIEW).
PLACEMENT_MIGRATION = "0008_sqlite_message_placed"


def _placement_drop(sender: object, using: str = "default", **kwargs: object) -> None:
    """Before migrations run: SQLite rebuilds a table it alters (a new table, the rows copied, the old one
    dropped and the new one renamed), and the rename fails while a trigger names the dropped table. The
    placement view's trigger names four tables, so it is dropped for the run and made again after it."""
    from django.db import connections

    from chatcore import statements

    connection = connections[using]
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            for statement in statements.sqlite_placement_uninstall_statements(quote=connection.ops.quote_name):
                cursor.execute(statement)


def _placement_make(sender: object, using: str = "default", **kwargs: object) -> None:
    """After migrations run (and after a flush): the placement view as the models are now, when its migration
    is applied (not when the database was migrated back before it)."""
    from django.db import connections
    from django.db.migrations.recorder import MigrationRecorder

    from chatcore import statements
    from chatcore.models import Channel, Cursor, Message, UsageEntry

    connection = connections[using]
    if connection.vendor != "sqlite":
        return
    applied = MigrationRecorder(connection).applied_migrations()
    if ("chatcore", PLACEMENT_MIGRATION) not in applied:
        return
    with connection.cursor() as cursor:
        for statement in statements.sqlite_placement_statements(
            quote=connection.ops.quote_name,
            message_model=Message,
            usage_model=UsageEntry,
            cursor_table=Cursor._meta.db_table,
            channel_table=Channel._meta.db_table,
        ):
            cursor.execute(statement)


class ChatcoreConfig(AppConfig):
    name = "chatcore"
    verbose_name = "Conversations"

    def ready(self) -> None:
        from chatcore import checks  # noqa: F401  (registers the host contract's checks)

        pre_migrate.connect(_placement_drop, sender=self, dispatch_uid="chatcore_placement_drop")
        post_migrate.connect(_placement_make, sender=self, dispatch_uid="chatcore_placement_make")
