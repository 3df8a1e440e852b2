"""Two indexes less to keep for every inserted message: the channel's own index goes (the channel is the first
column of message_siblings_idx, which serves the same lookups) and the author's covers only the messages that
have one (a model's and a tool's have none; a lookup by author names one). The indexes are dropped by name
rather than through an altered field: SQLite would rebuild the message table for that, and with it drop the
search index's triggers."""

from django.conf import settings
from django.db import migrations, models
from django.db.models import Q

TABLE = "chatcore_message"
CHANNEL_INDEX = "chatcore_message_channel_id_7b7d50be"
AUTHOR_INDEX = "chatcore_message_author_id_37a177cd"


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("chatcore", "0011_search_document_generated"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="message",
                    name="channel",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="messages",
                        to="chatcore.channel",
                    ),
                ),
                migrations.AlterField(
                    model_name="message",
                    name="author",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=models.deletion.SET_NULL,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f"DROP INDEX IF EXISTS {CHANNEL_INDEX}",
                    f"CREATE INDEX IF NOT EXISTS {CHANNEL_INDEX} ON {TABLE} (channel_id)",
                ),
                migrations.RunSQL(
                    f"DROP INDEX IF EXISTS {AUTHOR_INDEX}",
                    f"CREATE INDEX IF NOT EXISTS {AUTHOR_INDEX} ON {TABLE} (author_id)",
                ),
            ],
        ),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(condition=Q(author__isnull=False), fields=["author"], name="message_author_idx"),
        ),
    ]
