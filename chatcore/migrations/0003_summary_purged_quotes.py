"""A summary remembers where its text still quotes purged messages (`purged_quotes`) and when those passages
were blanked at its owner's request (`quotes_purged_at`): a purge says what the summary keeps of its originals."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("chatcore", "0002_channel_export_permission"),
    ]

    operations = [
        migrations.AddField(
            model_name="summary",
            name="purged_quotes",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="summary",
            name="quotes_purged_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
