"""The event's environment loses its single-column index: ``callback_env_created`` leads with
it. Only the index is dropped (as in ``orders`` 0011); the foreign key constraint stays."""

import django.db.models.deletion
from django.db import migrations, models

INDEX = "orders_callbackevent_environment_id_4eb21baa"


class Migration(migrations.Migration):
    dependencies = [
        ("merchants", "0003_accountsversion"),
        ("webhooks", "0002_event_subject"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{INDEX}"',
                    reverse_sql=(
                        f'CREATE INDEX IF NOT EXISTS "{INDEX}" '
                        'ON "orders_callbackevent" ("environment_id")'
                    ),
                )
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="callbackevent",
                    name="environment",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="callback_events",
                        to="merchants.environment",
                    ),
                )
            ],
        )
    ]
