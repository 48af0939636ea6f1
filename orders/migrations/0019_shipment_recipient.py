from django.db import migrations, models


def recipients_from_addresses(apps, schema_editor):
    """A shipment that kept an address of its own keeps the whole recipient its lab holds: that
    address with the order's name, email and phone (the only ones a lab was ever sent)."""
    Shipment = apps.get_model("orders", "Shipment")
    kept = Shipment.objects.filter(address__isnull=False).select_related("order")
    for shipment in kept.iterator():
        order = shipment.order
        shipment.recipient = {
            "name": order.recipient_name,
            "email": order.recipient_email,
            "phoneNumber": order.recipient_phone,
            "address": shipment.address,
        }
        shipment.save(update_fields=["recipient"])


def addresses_from_recipients(apps, schema_editor):
    """Back to an address alone: the recipient's address (its name, email and phone are lost)."""
    Shipment = apps.get_model("orders", "Shipment")
    for shipment in Shipment.objects.filter(recipient__isnull=False).iterator():
        shipment.address = shipment.recipient["address"]
        shipment.save(update_fields=["address"])


class Migration(migrations.Migration):

    dependencies = [
        ('orders', '0018_order_claim_token'),
    ]

    operations = [
        migrations.AddField(
            model_name='shipment',
            name='recipient',
            field=models.JSONField(blank=True, help_text="The whole recipient its lab holds (name, email, phoneNumber, address, as an order's recipient) when it is not the order's: its lab refused an updateRecipient, or staff changed this lab order's address alone. Null: the order's.", null=True),
        ),
        migrations.RunPython(recipients_from_addresses, addresses_from_recipients),
        migrations.RemoveField(
            model_name='shipment',
            name='address',
        ),
    ]
