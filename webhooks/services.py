"""The callback outbox: write an event with the change it reports, deliver it, replay it.

``event_create`` is the app's entry point for other apps: they give the event's environment,
subject, type, source, data and target URL; this app never looks at what the subject is.
"""

import datetime as dt
import random
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from common.tasks import task_enqueue_on_commit
from merchants.models import Environment
from webhooks.delivery import Outcome, deliver, retry_due_at, signed_headers
from webhooks.envelope import envelope_bytes
from webhooks.models import CallbackAttempt, CallbackEvent, CallbackState, GoneCallbackUrl
from webhooks.selectors import events_due

DELIVER_TASK = "webhooks.tasks.event_deliver_task"
# What an attempt row keeps of its result; ``retry_after`` only schedules the next attempt.
ATTEMPT_RECORDS = ("duration_ms", "status_code", "outcome", "response_excerpt", "error")

# Prefork children would inherit one random.Random() state and jitter in step; this reads the OS.
_rng = random.SystemRandom()


def event_create(
    *,
    environment: Environment,
    subject: str,
    sequence: int,
    event_type: str,
    source: str,
    data: Mapping[str, Any],
    target_url: str,
    time: dt.datetime | None = None,
) -> CallbackEvent:
    """Write the event with its exact bytes; deliver it once the surrounding change commits.

    Call it inside the transaction of the change it reports, so the event exists exactly when
    the change does. A blank ``target_url`` is recorded as having no destination; a URL that
    answered 410 for this environment is recorded as stopped.
    """
    assert transaction.get_connection().in_atomic_block, (
        "record events inside the change's transaction"
    )
    event = CallbackEvent(
        environment=environment,
        subject=subject,
        sequence=sequence,
        event_type=event_type,
        created=time or timezone.now(),
        target_url=target_url,
    )
    event.body = envelope_bytes(
        event_id=event.id,
        event_type=event.event_type,
        source=source,
        subject=event.subject,
        data=data,
        sequence=event.sequence,
        time=event.created,
    )
    if not target_url:
        event.state = CallbackState.NO_DESTINATION
    elif GoneCallbackUrl.objects.filter(environment=environment, url=target_url).exists():
        event.state = CallbackState.STOPPED
    else:
        event.next_attempt_at = event.created
    event.save()
    if event.state == CallbackState.PENDING:
        task_enqueue_on_commit(DELIVER_TASK, event.id)
    return event


def event_deliver(*, event_id: int) -> CallbackEvent | None:
    """One delivery attempt of a due event; None when it is not due or another worker has it."""
    timeout = float(settings.CALLBACK_TIMEOUT_SECONDS)
    until = timezone.now() + timedelta(seconds=timeout + 30)
    if not CallbackEvent.objects.filter(events_due(), id=event_id).update(claimed_until=until):
        return None
    event = CallbackEvent.objects.select_related("environment").get(id=event_id)
    if GoneCallbackUrl.objects.filter(environment=event.environment, url=event.target_url).exists():
        CallbackEvent.objects.filter(id=event.id).update(
            state=CallbackState.STOPPED, claimed_until=None
        )
        return event
    body = bytes(event.body)
    started = timezone.now()
    secret, *previous = event.environment.signing_secrets()
    headers = signed_headers(
        msg_id=event.public_id,
        secret=secret,
        also=previous,
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
            **{name: getattr(result, name) for name in ATTEMPT_RECORDS},
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
def event_replay(*, event: CallbackEvent) -> None:
    """Send an event again (same id, same bytes), whatever happened to it before."""
    CallbackEvent.objects.filter(id=event.id).update(
        state=CallbackState.PENDING, next_attempt_at=timezone.now(), claimed_until=None
    )
    task_enqueue_on_commit(DELIVER_TASK, event.id)
