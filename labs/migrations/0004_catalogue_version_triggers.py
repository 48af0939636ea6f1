from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from products.versioning import create_sql, drop_sql

TABLES = [
    "labs_lab",
    "labs_labproduct",
    "labs_shippingzone",
    "labs_shippingrate",
    "labs_exchangerate",
    "labs_taxrule",
]


def create_triggers(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    for statement in create_sql(schema_editor.connection.vendor, TABLES):
        schema_editor.execute(statement)


def drop_triggers(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    for statement in drop_sql(schema_editor.connection.vendor, TABLES):
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("labs", "0003_siteflow_settings"),
        ("products", "0002_catalogueversion"),
    ]

    operations = [migrations.RunPython(create_triggers, drop_triggers)]
