from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from merchants.versioning import create_sql, drop_sql


def create_triggers(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    for statement in create_sql(schema_editor.connection.vendor):
        schema_editor.execute(statement)
    apps.get_model("merchants", "AccountsVersion").objects.get_or_create(pk=1)


def drop_triggers(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    for statement in drop_sql(schema_editor.connection.vendor):
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("merchants", "0002_registration_dashboard_user_secret_rotation")]

    operations = [
        migrations.CreateModel(
            name="AccountsVersion",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("number", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
