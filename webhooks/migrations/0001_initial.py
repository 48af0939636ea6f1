"""Takes over the callback tables created by ``orders`` (state only: the tables are kept)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

import common.ids

STATES = [
    ("Pending", "Waiting for (another) delivery attempt"),
    ("Delivered", "Accepted by the receiver (2xx)"),
    ("Failed", "Gave up after the retry schedule"),
    ("Stopped", "The URL answered 410 Gone; deliveries to it stopped"),
    ("NoDestination", "Neither the order nor the merchant has a callback URL"),
]


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("merchants", "0001_initial"),
        ("orders", "0005_callbacks_to_webhooks"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="CallbackEvent",
                    fields=[
                        (
                            "id",
                            models.BigIntegerField(
                                default=common.ids.new_id,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        (
                            "sequence",
                            models.PositiveIntegerField(help_text="1, 2, 3, ... within the order."),
                        ),
                        ("event_type", models.CharField(max_length=200)),
                        ("body", models.BinaryField()),
                        (
                            "target_url",
                            models.URLField(
                                blank=True,
                                help_text="Resolved when the event is written.",
                                max_length=2000,
                            ),
                        ),
                        (
                            "state",
                            models.CharField(choices=STATES, default="Pending", max_length=16),
                        ),
                        ("attempts", models.PositiveIntegerField(default=0)),
                        ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                        ("claimed_until", models.DateTimeField(blank=True, null=True)),
                        (
                            "swept_at",
                            models.DateTimeField(
                                blank=True,
                                help_text="When the sweeper last rang for the event.",
                                null=True,
                            ),
                        ),
                        ("delivered_at", models.DateTimeField(blank=True, null=True)),
                        ("created", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "environment",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="callback_events",
                                to="merchants.environment",
                            ),
                        ),
                        (
                            "order",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="callback_events",
                                to="orders.order",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "orders_callbackevent",
                        "ordering": ["-created"],
                        "indexes": [
                            models.Index(
                                condition=models.Q(("state", "Pending")),
                                fields=["next_attempt_at"],
                                name="callback_due",
                            ),
                            models.Index(
                                fields=["environment", "-created"], name="callback_env_created"
                            ),
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("order", "sequence"), name="callback_sequence_unique"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="CallbackAttempt",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("number", models.PositiveIntegerField()),
                        ("url", models.URLField(max_length=2000)),
                        ("started", models.DateTimeField(default=django.utils.timezone.now)),
                        ("duration_ms", models.PositiveIntegerField(default=0)),
                        ("status_code", models.PositiveSmallIntegerField(blank=True, null=True)),
                        ("outcome", models.CharField(max_length=20)),
                        ("response_excerpt", models.TextField(blank=True)),
                        ("error", models.TextField(blank=True)),
                        (
                            "event",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="attempt_log",
                                to="webhooks.callbackevent",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "orders_callbackattempt",
                        "ordering": ["event", "number"],
                    },
                ),
                migrations.CreateModel(
                    name="GoneCallbackUrl",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("url", models.URLField(max_length=2000)),
                        ("created", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "environment",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="gone_callback_urls",
                                to="merchants.environment",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "orders_gonecallbackurl",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("environment", "url"), name="gone_url_unique"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
