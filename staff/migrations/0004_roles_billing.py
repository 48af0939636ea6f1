"""Operators see billing's Stripe events and invoices (read-only): the roles' groups are made
again as ``staff.roles`` says."""

from typing import Any

from django.db import migrations


def roles_sync(apps: Any, schema_editor: Any) -> None:
    from staff.services import staff_roles_migrate

    staff_roles_migrate(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("staff", "0003_roles_resubmissions"),
        ("billing", "0001_initial"),
    ]

    operations = [migrations.RunPython(roles_sync, migrations.RunPython.noop)]
