"""The callback outbox moves to the ``webhooks`` app: its models leave this app's state while
their tables stay as they are (``webhooks.0001_initial`` takes them over)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("orders", "0004_swept_at"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="CallbackAttempt"),
                migrations.DeleteModel(name="CallbackEvent"),
                migrations.DeleteModel(name="GoneCallbackUrl"),
            ],
            database_operations=[],
        ),
    ]
