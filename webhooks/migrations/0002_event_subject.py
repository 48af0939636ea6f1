"""An event names its subject (the order's public id) instead of holding a foreign key to an
order, so the outbox depends on no other app; existing rows get ``ord_<order id>``."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="callbackevent",
            name="subject",
            field=models.CharField(
                default="",
                help_text="What the event is about: the public id of an order.",
                max_length=40,
            ),
            preserve_default=False,
        ),
        migrations.RunSQL(
            "UPDATE orders_callbackevent SET subject = 'ord_' || order_id",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.RemoveConstraint(
            model_name="callbackevent",
            name="callback_sequence_unique",
        ),
        migrations.RemoveField(
            model_name="callbackevent",
            name="order",
        ),
        migrations.AddConstraint(
            model_name="callbackevent",
            constraint=models.UniqueConstraint(
                fields=("subject", "sequence"), name="callback_subject_sequence_unique"
            ),
        ),
        migrations.AlterField(
            model_name="callbackevent",
            name="sequence",
            field=models.PositiveIntegerField(help_text="1, 2, 3, ... within the subject."),
        ),
        migrations.AlterField(
            model_name="callbackevent",
            name="swept_at",
            field=models.DateTimeField(
                blank=True, help_text="When the sweeper last queued the event.", null=True
            ),
        ),
    ]
