"""Delivering outbox events: claim, post the stored bytes, record the attempt, plan the next."""

import random
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from orders.callbacks.delivery import Outcome, deliver, retry_due_at, signed_headers
from orders.models import CallbackAttempt, CallbackEvent, CallbackState, GoneCallbackUrl

# Prefork children would inherit one random.Random() state and jitter in step; this reads the OS.
_rng = random.SystemRandom()


def due_callbacks() -> Q:
    now = timezone.now()
    return Q(state=CallbackState.PENDING, next_attempt_at__lte=now) & (
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )


def callback_deliver(*, event_id: int) -> CallbackEvent | None:
    """One delivery attempt of a due event; None when it is not due or another worker has it."""
    timeout = float(settings.CALLBACK_TIMEOUT_SECONDS)
    until = timezone.now() + timedelta(seconds=timeout + 30)
    if not CallbackEvent.objects.filter(due_callbacks(), id=event_id).update(claimed_until=until):
        return None
    event = CallbackEvent.objects.select_related("environment").get(id=event_id)
    if GoneCallbackUrl.objects.filter(environment=event.environment, url=event.target_url).exists():
        CallbackEvent.objects.filter(id=event.id).update(
            state=CallbackState.STOPPED, claimed_until=None
        )
        return event
    body = bytes(event.body)
    started = timezone.now()
    headers = signed_headers(
        msg_id=event.public_id,
        secret=event.environment.callback_signing_secret,
        body=body,
        timestamp=int(started.timestamp()),
    )
    result = deliver(event.target_url, body, headers, timeout)
    number = event.attempts + 1
    with transaction.atomic():
        CallbackAttempt.objects.create(
            event=event,
            number=number,
            url=event.target_url,
            started=started,
            duration_ms=result.duration_ms,
            status_code=result.status_code,
            outcome=result.outcome,
            response_excerpt=result.response_excerpt,
            error=result.error,
        )
        fields: dict[str, object] = {"attempts": number, "claimed_until": None}
        if result.outcome == Outcome.DELIVERED:
            fields.update(
                state=CallbackState.DELIVERED, delivered_at=timezone.now(), next_attempt_at=None
            )
        elif result.outcome == Outcome.GONE:
            GoneCallbackUrl.objects.get_or_create(
                environment=event.environment, url=event.target_url
            )
            fields.update(state=CallbackState.STOPPED, next_attempt_at=None)
            CallbackEvent.objects.filter(
                environment=event.environment,
                target_url=event.target_url,
                state=CallbackState.PENDING,
            ).exclude(id=event.id).update(state=CallbackState.STOPPED, next_attempt_at=None)
        else:
            due = retry_due_at(result, number, timezone.now(), _rng)
            if due is None:
                fields.update(state=CallbackState.FAILED, next_attempt_at=None)
            else:
                fields.update(next_attempt_at=due)
        CallbackEvent.objects.filter(id=event.id, claimed_until=until).update(**fields)
    event.refresh_from_db()
    return event


@transaction.atomic
def callback_replay(*, event: CallbackEvent) -> None:
    """Send an event again (same id, same bytes), whatever happened to it before."""
    from orders.callbacks.tasks import deliver_callback

    CallbackEvent.objects.filter(id=event.id).update(
        state=CallbackState.PENDING, next_attempt_at=timezone.now(), claimed_until=None
    )
    # robust: with the broker down the change has committed all the same; the error is
    # logged, not raised to the caller, and the sweeper sends the event once it is back.
    transaction.on_commit(lambda: deliver_callback.delay(event.id), robust=True)
