"""The Operators and Administrators groups with their permissions (``staff.roles``); every
staff user already there becomes an operator."""

from typing import Any

from django.db import migrations


def roles_create(apps: Any, schema_editor: Any) -> None:
    from staff.services import staff_roles_migrate

    groups = staff_roles_migrate(apps, schema_editor)
    user_model = apps.get_model("auth", "User")
    groups["Operators"].user_set.add(*user_model.objects.filter(is_staff=True))


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("staff", "0001_initial"),
        ("orders", "0012_roles_permissions"),
        ("backoffice", "0002_roles_permissions"),
        ("merchants", "0003_accountsversion"),
        ("labs", "0004_catalogue_version_triggers"),
        ("webhooks", "0003_fk_indexes_in_composites"),
    ]

    operations = [migrations.RunPython(roles_create, migrations.RunPython.noop)]
