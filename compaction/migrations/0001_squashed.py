"""compaction's schema in one migration: the chain 0001_initial … 0009_recall_tool_help_us_spelling squashed.

`replaces` lets a database that applied the old chain take this one as applied (nothing runs there). Its data
steps, run after the tables exist: the settings row (auto-compaction off) and the built-in profiles (Structured
the global default; old 0006's "instructions verbatim" switch is part of compaction.builtins' rows already).
"""

import django.core.validators
import django.db.models.deletion
from django.db import migrations, models


def settings_row_create(apps, schema_editor):
    """The single settings row, with auto-compaction off: operators opt in."""
    settings = apps.get_model("compaction", "CompactionSettings")
    settings.objects.using(schema_editor.connection.alias).get_or_create(pk=1)


def builtins_create(apps, schema_editor):
    """The built-in profiles as shipped; a global default already there keeps its place."""
    from compaction.builtins import BUILTIN_PROFILES

    Profile = apps.get_model("compaction", "CompactionProfile")
    profiles = Profile.objects.using(schema_editor.connection.alias)
    has_default = profiles.filter(persona__isnull=True, is_default=True).exists()
    for item in BUILTIN_PROFILES:
        fields = {k: v for k, v in item.items() if k != "slug"}
        fields["is_builtin"] = True
        fields["is_default"] = item["is_default"] and not has_default
        profiles.update_or_create(slug=item["slug"], defaults=fields)


def builtins_remove(apps, schema_editor):
    Profile = apps.get_model("compaction", "CompactionProfile")
    Profile.objects.using(schema_editor.connection.alias).filter(is_builtin=True).delete()


class Migration(migrations.Migration):

    replaces = [("compaction", "0001_initial"), ("compaction", "0002_lease_auto_index_and_settings_row"), ("compaction", "0003_builtin_profiles"), ("compaction", "0004_lease_outcome_choices"), ("compaction", "0005_usage_dashboard"), ("compaction", "0006_profile_verbatim_instructions_protect_first_n"), ("compaction", "0007_recall_tool_setting"), ("compaction", "0008_protect_first_n_help_us_spelling"), ("compaction", "0009_recall_tool_help_us_spelling")]

    initial = True

    dependencies = [
        ('chatcore', '0001_squashed'),
    ]

    operations = [
        migrations.CreateModel(
            name='CompactionSettings',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('enabled', models.BooleanField(default=False, help_text='Kill switch. Ships off.')),
                ('recall_tool', models.BooleanField(default=True, help_text="Offer the chat model recall_history (a search of the summarized messages) in replies of channels with a summary in force. A channel's own setting can turn it off there.")),
                ('threshold', models.FloatField(default=0.7, help_text='Share of the context window that triggers a compaction.', validators=[django.core.validators.MinValueValidator(0.05), django.core.validators.MaxValueValidator(0.99)])),
                ('interval_minutes', models.PositiveIntegerField(default=5, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(1440)])),
                ('concurrency', models.PositiveIntegerField(default=2, help_text='Compactions in flight across the whole deployment.', validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(64)])),
                ('cooldown_minutes', models.PositiveIntegerField(default=30, validators=[django.core.validators.MaxValueValidator(10080)])),
                ('min_messages', models.PositiveIntegerField(default=10, validators=[django.core.validators.MinValueValidator(2), django.core.validators.MaxValueValidator(100000)])),
                ('min_new_messages', models.PositiveIntegerField(default=8, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(100000)])),
                ('idle_minutes', models.PositiveIntegerField(default=2, validators=[django.core.validators.MaxValueValidator(1440)])),
                ('active_within_days', models.PositiveIntegerField(default=7, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(3650)])),
                ('batch_size', models.PositiveIntegerField(default=50, validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(10000)])),
                ('hourly_budget', models.PositiveIntegerField(default=100, help_text='Automatic compactions allowed per hour (0: none).', validators=[django.core.validators.MaxValueValidator(1000000)])),
                ('default_context_budget', models.PositiveIntegerField(default=128000, validators=[django.core.validators.MinValueValidator(1000), django.core.validators.MaxValueValidator(10000000)])),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'verbose_name': 'Auto-compaction settings',
                'verbose_name_plural': 'Auto-compaction settings',
            },
        ),
        migrations.CreateModel(
            name='UsageDashboard',
            fields=[
            ],
            options={
                'verbose_name': 'usage dashboard',
                'verbose_name_plural': 'usage dashboard',
                'proxy': True,
                'indexes': [],
                'constraints': [],
            },
            bases=('chatcore.usageentry',),
        ),
        migrations.CreateModel(
            name='CompactionLease',
            fields=[
                ('channel', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='compaction_lease', serialize=False, to='chatcore.channel')),
                ('holder', models.CharField(blank=True, max_length=100)),
                ('expires_at', models.DateTimeField(blank=True, db_index=True, null=True)),
                ('last_started_at', models.DateTimeField(blank=True, null=True)),
                ('last_finished_at', models.DateTimeField(blank=True, null=True)),
                ('last_auto_at', models.DateTimeField(blank=True, null=True)),
                ('last_outcome', models.CharField(blank=True, choices=[('done', 'Done'), ('ineffective', 'Done, still over the threshold'), ('failed', 'Failed'), ('nothing', 'Nothing to compact'), ('busy', 'Busy'), ('abandoned', 'Abandoned'), ('skipped', 'Skipped'), ('stale', 'Stale')], max_length=32)),
                ('last_error', models.TextField(blank=True)),
                ('failure_count', models.PositiveIntegerField(default=0)),
                ('attempt_leaf_id', models.BigIntegerField(blank=True, help_text='Active leaf at the last automatic attempt (no-loop rule).', null=True)),
            ],
            options={
                'indexes': [models.Index(fields=['last_auto_at'], name='lease_last_auto_idx')],
            },
        ),
        migrations.CreateModel(
            name='CompactionProfile',
            options={
                'ordering': ['persona_id', 'name'],
                'constraints': [models.UniqueConstraint(condition=models.Q(('is_default', True), ('persona__isnull', False)), fields=('persona',), name='one_default_profile_per_persona'), models.UniqueConstraint(condition=models.Q(('is_default', True), ('persona__isnull', True)), fields=('is_default',), name='one_global_default_profile')],
            },
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100)),
                ('slug', models.SlugField(max_length=100, unique=True)),
                ('description', models.CharField(blank=True, max_length=300)),
                ('symbol', models.CharField(blank=True, default='📝', max_length=16)),
                ('system_prompt', models.TextField()),
                ('instructions', models.TextField(help_text='Template of the request. Placeholders: {transcript} (required), {previous_summary}, {focus}, {persona}. Write {{ and }} for literal braces.')),
                ('keep_recent', models.PositiveIntegerField(default=6, validators=[django.core.validators.MaxValueValidator(1000)])),
                ('max_summary_tokens', models.PositiveIntegerField(default=1500, validators=[django.core.validators.MinValueValidator(50), django.core.validators.MaxValueValidator(32000)])),
                ('temperature', models.FloatField(default=0.2, validators=[django.core.validators.MinValueValidator(0.0), django.core.validators.MaxValueValidator(2.0)])),
                ('keep_instructions_verbatim', models.BooleanField(default=False, help_text="Keep the user's instructions and constraints word for word in the summary (found by their wording: must, never, always, don't, please make sure …; newest first when they do not all fit). A model is handed them as a 'keep verbatim' block.")),
                ('protect_first_n', models.PositiveSmallIntegerField(default=0, help_text="The first N messages of a channel are never summarized: they stay in the model's context as they were, before the summary (the opening exchange often sets the task). 0: off.", validators=[django.core.validators.MaxValueValidator(50)])),
                ('is_builtin', models.BooleanField(default=False, editable=False)),
                ('is_default', models.BooleanField(default=False, help_text='The default of its scope (global or the persona).')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('model', models.ForeignKey(blank=True, help_text="Empty: the utility role's model.", null=True, on_delete=django.db.models.deletion.SET_NULL, to='chatcore.llmmodel')),
                ('persona', models.ForeignKey(blank=True, help_text='Empty: a global profile.', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='compaction_profiles', to='chatcore.persona')),
            ],
        ),
        migrations.RunPython(settings_row_create, migrations.RunPython.noop),
        migrations.RunPython(builtins_create, builtins_remove),
    ]
