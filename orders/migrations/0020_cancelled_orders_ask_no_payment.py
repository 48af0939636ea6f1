"""A cancelled order asks for no payment: the RequiresPaymentAuthorisation issue that cancels
before this release left on their orders goes (new cancels remove it themselves:
orders.payment_balance.order_cancelled_settle)."""

from django.db import migrations


def payment_issues_of_cancelled_orders_delete(apps, schema_editor):
    OrderIssue = apps.get_model("orders", "OrderIssue")
    OrderIssue.objects.filter(
        error_code="RequiresPaymentAuthorisation", order__stage="Cancelled"
    ).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("orders", "0019_shipment_recipient"),
    ]

    operations = [
        migrations.RunPython(
            payment_issues_of_cancelled_orders_delete, migrations.RunPython.noop, elidable=True
        ),
    ]
