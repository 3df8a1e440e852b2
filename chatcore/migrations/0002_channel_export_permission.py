"""Exporting any person's channel (every message of every branch) is a permission of its own,
`chatcore.export_channel`, rather than something every staff member may do."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("chatcore", "0001_squashed"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="channel",
            options={
                "ordering": ["-last_activity_at"],
                "permissions": [("export_channel", "Can export any person's channel with every message")],
            },
        ),
    ]
