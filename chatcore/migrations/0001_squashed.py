"""chatcore's schema in one migration: the chain 0001_initial … 0006_llmmodel_endpoint_permission squashed.

`replaces` lets a database that applied the old chain take this one as applied (nothing runs there). Left out of
the old chain: 0002's chain-hash backfill (elidable: a fresh database has no messages) and 0004's copy of DRF's
plaintext `authtoken_token` rows (that table exists only in databases that ran the old chain). The search setup
(segments, full-text index and triggers, PostgreSQL- or SQLite-specific SQL) is chatcore.search.schema's, as before.
"""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from chatcore.search import schema


def search_install(apps, schema_editor):
    """Segments and the full-text index of messages, in the database's own dialect."""
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        schema.segments_backfill(cursor)
        language = getattr(settings, "CHATCORE_SEARCH_LANGUAGE", "english")
        for statement in schema.install_statements(connection.vendor, language):
            cursor.execute(statement)


def search_uninstall(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for statement in schema.uninstall_statements(schema_editor.connection.vendor):
            cursor.execute(statement)


class Migration(migrations.Migration):

    replaces = [("chatcore", "0001_initial"), ("chatcore", "0002_message_chain_hash_and_root"), ("chatcore", "0003_message_search"), ("chatcore", "0004_api_token"), ("chatcore", "0005_dashboard_indexes"), ("chatcore", "0006_llmmodel_endpoint_permission")]

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='LLMModel',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(help_text='The model name sent to the provider.', max_length=200, unique=True)),
                ('label', models.CharField(blank=True, max_length=200)),
                ('provider', models.CharField(choices=[('openai', 'OpenAI-compatible endpoint'), ('offline', 'Offline (no network, no key)')], default='openai', max_length=16)),
                ('base_url', models.URLField(blank=True, help_text="Empty: OPENAI_BASE_URL, else OpenAI's own.", max_length=500)),
                ('api_key_env', models.CharField(blank=True, default='OPENAI_API_KEY', help_text='Name of the environment variable that holds the key (never the key).', max_length=100)),
                ('context_window', models.PositiveIntegerField(default=128000)),
                ('max_output_tokens', models.PositiveIntegerField(default=4096)),
                ('price_in_per_million', models.DecimalField(decimal_places=4, default=0, max_digits=10)),
                ('price_out_per_million', models.DecimalField(decimal_places=4, default=0, max_digits=10)),
                ('is_active', models.BooleanField(default=True)),
            ],
            options={
                'verbose_name': 'LLM model',
                'ordering': ['name'],
                'permissions': [('change_llmmodel_endpoint', "Can change an LLM model's provider, base URL and key variable")],
            },
        ),
        migrations.CreateModel(
            name='Persona',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100)),
                ('slug', models.SlugField(max_length=100, unique=True)),
                ('system_prompt', models.TextField(blank=True)),
                ('symbol', models.CharField(blank=True, default='🤖', max_length=16)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='ApiToken',
            fields=[
                ('token_key', models.CharField(db_index=True, max_length=25)),
                ('created', models.DateTimeField(auto_now_add=True)),
                ('expiry', models.DateTimeField(blank=True, null=True)),
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('digest', models.CharField(max_length=128, unique=True)),
                ('name', models.CharField(max_length=100)),
                ('last_used_at', models.DateTimeField(blank=True, null=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='auth_token_set', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name': 'API token',
                'ordering': ['-created', '-id'],
            },
        ),
        migrations.CreateModel(
            name='AuditEntry',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('actor_label', models.CharField(help_text="'user:42' or 'system:compaction'.", max_length=100)),
                ('action', models.CharField(db_index=True, max_length=64)),
                ('resource', models.CharField(max_length=100)),
                ('details', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                ('actor', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name_plural': 'audit entries',
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='Channel',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('title', models.CharField(max_length=200)),
                ('type', models.CharField(choices=[('direct', 'Direct'), ('group', 'Group')], default='direct', max_length=8)),
                ('settings', models.JSONField(blank=True, default=dict)),
                ('archived', models.BooleanField(default=False)),
                ('ephemeral', models.BooleanField(default=False)),
                ('deleted_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('last_activity_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                ('context_tokens', models.PositiveBigIntegerField(default=0)),
                ('context_messages', models.PositiveIntegerField(default=0)),
                ('context_budget', models.PositiveIntegerField(default=0)),
                ('context_ratio', models.FloatField(default=0.0)),
                ('branched_from', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='branches', to='chatcore.channel')),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='channels', to=settings.AUTH_USER_MODEL)),
                ('model', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='channels', to='chatcore.llmmodel')),
                ('persona', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='channels', to='chatcore.persona')),
            ],
            options={
                'ordering': ['-last_activity_at'],
                'indexes': [models.Index(condition=models.Q(('archived', False), ('deleted_at__isnull', True), ('ephemeral', False), ('type', 'direct')), fields=['context_ratio'], name='channel_pressure_idx'), models.Index(fields=['owner', '-last_activity_at'], name='channel_owner_activity_idx')],
            },
        ),
        migrations.CreateModel(
            name='Message',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(choices=[('system', 'System'), ('user', 'User'), ('assistant', 'Assistant'), ('tool', 'Tool')], max_length=16)),
                ('content', models.TextField(blank=True)),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('deleted_at', models.DateTimeField(blank=True, null=True)),
                ('purged_at', models.DateTimeField(blank=True, null=True)),
                ('depth', models.PositiveIntegerField()),
                ('tokens', models.PositiveIntegerField()),
                ('chars', models.PositiveIntegerField()),
                ('path_tokens', models.PositiveBigIntegerField()),
                ('path_chars', models.PositiveBigIntegerField()),
                ('chain_hash', models.CharField(blank=True, default='', max_length=32)),
                ('segment', models.BigIntegerField(blank=True, editable=False, null=True)),
                ('author', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                ('channel', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='chatcore.channel')),
                ('parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='children', to='chatcore.message')),
                ('root', models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='chatcore.message')),
            ],
            options={
                'ordering': ['depth', 'id'],
                'indexes': [models.Index(fields=['channel', 'parent', 'id'], name='message_siblings_idx'), models.Index(fields=['chain_hash'], name='message_chain_idx'), models.Index(fields=['segment', 'depth'], name='message_segment_idx')],
            },
        ),
        migrations.CreateModel(
            name='ModelRole',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(choices=[('chat', 'Chat'), ('utility', 'Utility (summaries)')], max_length=16, unique=True)),
                ('fallback', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='chatcore.llmmodel')),
                ('primary', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='chatcore.llmmodel')),
            ],
        ),
        migrations.CreateModel(
            name='Summary',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('content', models.TextField()),
                ('tokens', models.PositiveIntegerField(default=0)),
                ('trigger', models.CharField(choices=[('manual', 'Manual'), ('auto', 'Automatic'), ('gateway', 'Gateway (inline, before a /v1 call)')], default='manual', max_length=8)),
                ('profile_slug', models.CharField(blank=True, max_length=100)),
                ('model', models.CharField(blank=True, max_length=200)),
                ('used_fallback', models.BooleanField(default=False)),
                ('input_tokens', models.PositiveIntegerField(default=0)),
                ('output_tokens', models.PositiveIntegerField(default=0)),
                ('tokens_before', models.PositiveIntegerField(default=0)),
                ('tokens_after', models.PositiveIntegerField(default=0)),
                ('messages_covered', models.PositiveIntegerField(default=0)),
                ('extracts', models.JSONField(blank=True, default=dict)),
                ('edited', models.BooleanField(default=False)),
                ('reverted_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('channel', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='summaries', to='chatcore.channel')),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                ('previous', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='chatcore.summary')),
                ('through_message', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='summaries', to='chatcore.message')),
            ],
            options={
                'verbose_name_plural': 'summaries',
                'ordering': ['-created_at', '-id'],
                'indexes': [models.Index(condition=models.Q(('reverted_at__isnull', True)), fields=['through_message'], name='summary_active_idx'), models.Index(fields=['created_at'], name='summary_created_idx')],
            },
        ),
        migrations.CreateModel(
            name='Cursor',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('channel', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='cursors', to='chatcore.channel')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='cursors', to=settings.AUTH_USER_MODEL)),
                ('leaf', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='chatcore.message')),
                ('summary', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='chatcore.summary')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('user', 'channel'), name='one_cursor_per_user_channel')],
            },
        ),
        migrations.AddField(
            model_name='channel',
            name='branched_from_summary',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='branches', to='chatcore.summary'),
        ),
        migrations.CreateModel(
            name='UsageEntry',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(max_length=16)),
                ('model', models.CharField(max_length=200)),
                ('input_tokens', models.PositiveIntegerField(default=0)),
                ('output_tokens', models.PositiveIntegerField(default=0)),
                ('cost', models.DecimalField(decimal_places=6, default=0, max_digits=12)),
                ('trigger', models.CharField(blank=True, max_length=16)),
                ('success', models.BooleanField(default=True)),
                ('error', models.TextField(blank=True)),
                ('duration_ms', models.PositiveIntegerField(default=0)),
                ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                ('channel', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to='chatcore.channel')),
                ('user', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name_plural': 'usage entries',
                'ordering': ['-created_at'],
                'indexes': [models.Index(fields=['role', 'created_at'], name='usage_role_created_idx')],
            },
        ),
        migrations.RunPython(search_install, search_uninstall, elidable=False),
    ]
