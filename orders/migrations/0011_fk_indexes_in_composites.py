"""The foreign keys whose column leads a composite index or unique constraint lose their own
single-column index: the composite serves their lookups, and every insert and every update
that moves a row writes one index entry fewer.

Only the indexes are dropped (``DROP INDEX IF EXISTS``, the same name on PostgreSQL and
SQLite); the foreign key constraints stay as they are, so no table is scanned to validate
them again.
"""

import django.db.models.deletion
from django.db import migrations, models

# (index, table, column): undone by creating the index again.
DROPPED = [
    ("orders_asset_item_id_36f9feb3", "orders_asset", "item_id"),
    ("orders_order_environment_id_236ac6ec", "orders_order", "environment_id"),
    ("orders_orderfile_order_id_591c0f30", "orders_orderfile", "order_id"),
    ("orders_orderitem_order_id_fe61a34d", "orders_orderitem", "order_id"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("merchants", "0003_accountsversion"),
        ("orders", "0010_order_download_deferred_at"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{name}"',
                    reverse_sql=f'CREATE INDEX IF NOT EXISTS "{name}" ON "{table}" ("{column}")',
                )
                for name, table, column in DROPPED
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="asset",
                    name="item",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="assets",
                        to="orders.orderitem",
                    ),
                ),
                migrations.AlterField(
                    model_name="order",
                    name="environment",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="orders",
                        to="merchants.environment",
                    ),
                ),
                migrations.AlterField(
                    model_name="orderfile",
                    name="order",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="files",
                        to="orders.order",
                    ),
                ),
                migrations.AlterField(
                    model_name="orderitem",
                    name="order",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="items",
                        to="orders.order",
                    ),
                ),
            ],
        )
    ]
