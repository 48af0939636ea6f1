"""Reads of the callback outbox."""

from django.db.models import Q
from django.utils import timezone

from webhooks.models import CallbackState


def events_due() -> Q:
    """Pending events whose next attempt is due and that no worker holds."""
    now = timezone.now()
    return Q(state=CallbackState.PENDING, next_attempt_at__lte=now) & (
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )
