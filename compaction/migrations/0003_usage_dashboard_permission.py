"""The usage dashboard opens with a permission of its own, `view_usage_dashboard`, instead of to every staff
member: it shows every person's usage and channel titles. The proxy model's default add/change/delete/view
permissions meant nothing (a page, not rows) and go, so the admin's permission picker offers only the one that
counts."""

from django.db import migrations

STALE = ["add_usagedashboard", "change_usagedashboard", "delete_usagedashboard", "view_usagedashboard"]


def stale_permissions_delete(apps, schema_editor):
    permission = apps.get_model("auth", "Permission")
    permission.objects.using(schema_editor.connection.alias).filter(
        content_type__app_label="compaction", content_type__model="usagedashboard", codename__in=STALE
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("compaction", "0002_conversation_imports"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="usagedashboard",
            options={
                "default_permissions": (),
                "permissions": [("view_usage_dashboard", "Can view the usage dashboard and download its CSV")],
                "verbose_name": "usage dashboard",
                "verbose_name_plural": "usage dashboard",
            },
        ),
        migrations.RunPython(stale_permissions_delete, migrations.RunPython.noop),
    ]
