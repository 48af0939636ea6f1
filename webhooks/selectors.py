"""Reads of the callback outbox."""

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from webhooks.models import CallbackEvent, CallbackState


def events_due() -> Q:
    """Pending events whose next attempt is due and that no worker holds."""
    now = timezone.now()
    return Q(state=CallbackState.PENDING, next_attempt_at__lte=now) & (
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )


def earlier_pending() -> Exists:
    """An earlier event of the same subject is pending: being delivered or waiting for a retry
    (a probe of the unique index on subject and sequence)."""
    return Exists(
        CallbackEvent.objects.filter(
            subject=OuterRef("subject"),
            sequence__lt=OuterRef("sequence"),
            state=CallbackState.PENDING,
        )
    )


def events_ready() -> Q:
    """Due events that may be sent now: each subject's earliest pending one (its callbacks go
    one at a time in ``sequence`` order), and replayed ones, which go at once."""
    return events_due() & (Q(replayed=True) | Q(~earlier_pending()))
