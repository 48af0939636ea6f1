"""An event sent again by hand is marked ``replayed``: it goes at once, whatever earlier event
of its order is pending (one order's events otherwise go one at a time in sequence order)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0003_fk_indexes_in_composites"),
    ]

    operations = [
        migrations.AddField(
            model_name="callbackevent",
            name="replayed",
            field=models.BooleanField(
                default=False,
                help_text="Sent again by hand: goes at once, whatever earlier event of its "
                "subject is pending (while pending it still holds the later ones).",
            ),
        ),
    ]
