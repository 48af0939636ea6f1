"""``ShipmentResubmission`` joins ``orders`` from ``backoffice`` (whose migration renamed its
table): only the model's state is created here, and its content type (with its permissions)
follows it."""

from typing import Any

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


def content_type_moved(apps: Any, schema_editor: Any) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    if not content_type.objects.filter(app_label="orders", model="shipmentresubmission").exists():
        content_type.objects.filter(app_label="backoffice", model="shipmentresubmission").update(
            app_label="orders"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("orders", "0013_order_payments"),
        ("backoffice", "0004_shipmentresubmission_to_orders"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ShipmentResubmission",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "new_shipment_id",
                            models.BigIntegerField(help_text="The new shipment's id.", unique=True),
                        ),
                        ("lab_code", models.CharField(max_length=20)),
                        ("lab_country_code", models.CharField(max_length=2)),
                        ("shipping_method", models.CharField(max_length=16)),
                        ("carrier_name", models.CharField(blank=True, max_length=100)),
                        ("carrier_service", models.CharField(blank=True, max_length=100)),
                        (
                            "plan",
                            models.JSONField(
                                default=dict,
                                help_text="The new lab's prices: item lines, shipping, currency.",
                            ),
                        ),
                        ("created", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "submitted_at",
                            models.DateTimeField(
                                blank=True,
                                help_text="When the new lab order was recorded as accepted.",
                                null=True,
                            ),
                        ),
                        (
                            "original",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="resubmission",
                                to="orders.shipment",
                            ),
                        ),
                    ],
                ),
            ],
        ),
        migrations.RunPython(content_type_moved, migrations.RunPython.noop),
    ]
