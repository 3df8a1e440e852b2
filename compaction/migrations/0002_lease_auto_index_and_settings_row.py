from django.db import migrations, models


def settings_row_create(apps, schema_editor):
    """The single settings row, with auto-compaction off: operators opt in."""
    settings = apps.get_model("compaction", "CompactionSettings")
    settings.objects.using(schema_editor.connection.alias).get_or_create(pk=1)


class Migration(migrations.Migration):

    dependencies = [
        ('compaction', '0001_initial'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='compactionlease',
            index=models.Index(fields=['last_auto_at'], name='lease_last_auto_idx'),
        ),
        migrations.RunPython(settings_row_create, migrations.RunPython.noop),
    ]
