"""Profiles gain two options: the user's instructions kept word for word (on in Structured and Detailed as
shipped) and the first N messages protected from summarising (off)."""

import django.core.validators
from django.db import migrations, models

ON_AS_SHIPPED = ("structured", "detailed")


def builtins_on(apps, schema_editor):
    Profile = apps.get_model("compaction", "CompactionProfile")
    Profile.objects.using(schema_editor.connection.alias).filter(is_builtin=True, slug__in=ON_AS_SHIPPED).update(
        keep_instructions_verbatim=True
    )


class Migration(migrations.Migration):
    dependencies = [("compaction", "0005_usage_dashboard")]

    operations = [
        migrations.AddField(
            model_name="compactionprofile",
            name="keep_instructions_verbatim",
            field=models.BooleanField(
                default=False,
                help_text="Keep the user's instructions and constraints word for word in the summary (found by "
                "their wording: must, never, always, don't, please make sure …; newest first when they do not all "
                "fit). A model is handed them as a 'keep verbatim' block.",
            ),
        ),
        migrations.AddField(
            model_name="compactionprofile",
            name="protect_first_n",
            field=models.PositiveSmallIntegerField(
                default=0,
                help_text="The first N messages of a channel are never summarised: they stay in the model's "
                "context as they were, before the summary (the opening exchange often sets the task). 0: off.",
                validators=[django.core.validators.MaxValueValidator(50)],
            ),
        ),
        migrations.RunPython(builtins_on, migrations.RunPython.noop),
    ]
