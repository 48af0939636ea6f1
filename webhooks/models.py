"""The callback outbox: events written with the change they report, their delivery attempts.

The tables were created by the ``orders`` app and keep their names; an event names what it is
about by its ``subject`` (an order's public id), not by a foreign key, so nothing here knows
what an order is.
"""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from common.models import PublicIdModel
from merchants.models import Environment


class CallbackState(models.TextChoices):
    PENDING = "Pending", "Waiting for (another) delivery attempt"
    DELIVERED = "Delivered", "Accepted by the receiver (2xx)"
    FAILED = "Failed", "Gave up after the retry schedule"
    STOPPED = "Stopped", "The URL answered 410 Gone; deliveries to it stopped"
    NO_DESTINATION = "NoDestination", "Neither the order nor the merchant has a callback URL"


class CallbackEvent(PublicIdModel):
    """One CloudEvent; ``body`` is built once, with the change it reports, and re-sent as is.

    The events of one subject are delivered one at a time in ``sequence`` order: one is not sent
    while an earlier one of its subject is pending (being delivered or waiting for a retry),
    unless it was ``replayed``. The unique index on (subject, sequence) answers that question.
    """

    id_kind = "event"

    # No index of its own: ``callback_env_created`` leads with it.
    environment = models.ForeignKey(
        Environment, on_delete=models.CASCADE, related_name="callback_events", db_index=False
    )
    subject = models.CharField(
        max_length=40, help_text="What the event is about: the public id of an order."
    )
    sequence = models.PositiveIntegerField(help_text="1, 2, 3, ... within the subject.")
    event_type = models.CharField(max_length=200)
    body = models.BinaryField()
    target_url = models.URLField(
        max_length=2000, blank=True, help_text="Resolved when the event is written."
    )
    state = models.CharField(
        max_length=16, choices=CallbackState.choices, default=CallbackState.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    swept_at = models.DateTimeField(
        null=True, blank=True, help_text="When the sweeper last queued the event."
    )
    delivered_at = models.DateTimeField(null=True, blank=True)
    replayed = models.BooleanField(
        default=False,
        help_text="Sent again by hand: goes at once, whatever earlier event of its subject is "
        "pending (while pending it still holds the later ones).",
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "orders_callbackevent"
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(
                fields=["subject", "sequence"], name="callback_subject_sequence_unique"
            )
        ]
        indexes = [
            models.Index(
                fields=["next_attempt_at"], name="callback_due", condition=Q(state="Pending")
            ),
            models.Index(fields=["environment", "-created"], name="callback_env_created"),
        ]

    def __str__(self) -> str:
        return f"{self.public_id} {self.event_type}"


class CallbackAttempt(models.Model):
    event = models.ForeignKey(CallbackEvent, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    url = models.URLField(max_length=2000)
    started = models.DateTimeField(default=timezone.now)
    duration_ms = models.PositiveIntegerField(default=0)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    outcome = models.CharField(max_length=20)
    response_excerpt = models.TextField(blank=True)
    error = models.TextField(blank=True)

    class Meta:
        db_table = "orders_callbackattempt"
        ordering = ["event", "number"]

    def __str__(self) -> str:
        return f"{self.event_id} #{self.number} {self.outcome}"


class GoneCallbackUrl(models.Model):
    """A URL that answered 410 Gone: no more deliveries to it for this environment."""

    environment = models.ForeignKey(
        Environment, on_delete=models.CASCADE, related_name="gone_callback_urls"
    )
    url = models.URLField(max_length=2000)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "orders_gonecallbackurl"
        constraints = [
            models.UniqueConstraint(fields=["environment", "url"], name="gone_url_unique")
        ]

    def __str__(self) -> str:
        return self.url
