"""The record of a resubmitted shipment moves to ``orders`` (``orders.ShipmentResubmission``),
with the order work of a resubmission: its table is renamed and its rows kept. The link to
the sheet row that asked for it goes (the row keeps the new shipment's id itself)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("backoffice", "0003_bulk_jobs_wave3"),
    ]

    operations = [
        migrations.RemoveField(model_name="shipmentresubmission", name="row"),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.AlterModelTable(
                    name="shipmentresubmission", table="orders_shipmentresubmission"
                ),
            ],
            state_operations=[migrations.DeleteModel(name="ShipmentResubmission")],
        ),
    ]
