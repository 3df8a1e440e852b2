"""Ships the built-in compaction profiles (Structured is the global default)."""

from django.db import migrations


def create_builtins(apps, schema_editor):
    from compaction.builtins import BUILTIN_PROFILES

    Profile = apps.get_model("compaction", "CompactionProfile")
    profiles = Profile.objects.using(schema_editor.connection.alias)
    has_default = profiles.filter(persona__isnull=True, is_default=True).exists()
    known = {field.name for field in Profile._meta.get_fields()}
    for item in BUILTIN_PROFILES:
        # Only the fields this migration's model has: later options are set by later migrations.
        fields = {k: v for k, v in item.items() if k != "slug" and k in known}
        fields["is_builtin"] = True
        fields["is_default"] = item["is_default"] and not has_default
        profiles.update_or_create(slug=item["slug"], defaults=fields)


def remove_builtins(apps, schema_editor):
    Profile = apps.get_model("compaction", "CompactionProfile")
    Profile.objects.using(schema_editor.connection.alias).filter(is_builtin=True).delete()


class Migration(migrations.Migration):
    dependencies = [("compaction", "0002_lease_auto_index_and_settings_row")]

    operations = [migrations.RunPython(create_builtins, remove_builtins)]
