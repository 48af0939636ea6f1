"""Administrators add and change labs, lab products, shipping zones and rates, exchange rates
and merchants; Operators also see exchange rates: the roles' groups are made again as
``staff.roles`` says."""

from typing import Any

from django.db import migrations


def roles_sync(apps: Any, schema_editor: Any) -> None:
    from staff.services import staff_roles_migrate

    staff_roles_migrate(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("staff", "0004_roles_billing"),
        ("labs", "0006_labproduct_variant_codes"),
        ("merchants", "0004_merchant_owner_never_staff_keys_issued_by_staff"),
    ]

    operations = [migrations.RunPython(roles_sync, migrations.RunPython.noop)]
