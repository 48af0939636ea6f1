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

from common.tasks import task_enqueue, task_enqueue_on_commit
from merchants.models import Environment
from webhooks.delivery import Outcome, deliver, retry_due_at, signed_headers
from webhooks.envelope import envelope_bytes
from webhooks.models import CallbackAttempt, CallbackEvent, CallbackState, GoneCallbackUrl
from webhooks.selectors import events_ready

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
    """One delivery attempt of an event that may be sent now; None when it is not due, another
    worker has it, or an earlier event of its subject is pending (``events_ready``).

    The claim is one conditional update whose condition is that readiness, so of one order's
    events only the earliest pending one is ever claimed, by one worker, however many worker
    threads and processes deliver; a refused event is queued again when the earlier one ends
    (``event_next_queue``) or, a message lost, by the sweeper. A claim lapses after the timeout
    and 30 s: a killed worker's event is then swept and sent again, so a killed worker delays
    its order's callbacks, never stalls them.
    """
    timeout = float(settings.CALLBACK_TIMEOUT_SECONDS)
    until = timezone.now() + timedelta(seconds=timeout + 30)
    if not CallbackEvent.objects.filter(events_ready(), id=event_id).update(claimed_until=until):
        return None
    event = CallbackEvent.objects.select_related("environment").get(id=event_id)
    if GoneCallbackUrl.objects.filter(environment=event.environment, url=event.target_url).exists():
        CallbackEvent.objects.filter(id=event.id).update(
            state=CallbackState.STOPPED, claimed_until=None
        )
        event_next_queue_on_commit(event)
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
        recorded = CallbackEvent.objects.filter(id=event.id, claimed_until=until).update(**fields)
        if recorded and fields.get("state", CallbackState.PENDING) != CallbackState.PENDING:
            event_next_queue_on_commit(event)
    event.refresh_from_db()
    return event


def event_next_queue_on_commit(event: CallbackEvent) -> None:
    """Once the end of ``event`` (no longer pending) commits, queue the next event of its
    subject if it may go now: the order's chain moves on at once, not at the next sweep.

    The next event is looked up after the commit: one written meanwhile and refused while
    ``event`` was still pending is found then, and one written later is ready when its own
    message comes."""
    subject, sequence = event.subject, event.sequence
    transaction.on_commit(lambda: event_next_queue(subject=subject, after=sequence), robust=True)


def event_next_queue(*, subject: str, after: int) -> int | None:
    """Queue the earliest event of ``subject`` after sequence ``after`` that may be sent now;
    its id, or None when there is none."""
    next_id = (
        CallbackEvent.objects.filter(events_ready(), subject=subject, sequence__gt=after)
        .order_by("sequence")
        .values_list("id", flat=True)
        .first()
    )
    if next_id is not None:
        task_enqueue(DELIVER_TASK, next_id)
    return next_id


@transaction.atomic
def event_replay(*, event: CallbackEvent) -> None:
    """Send an event again (same id, same bytes), whatever happened to it before, at once: it
    does not wait for an earlier pending event of its order (``replayed``); while pending it
    holds the order's later events as any other does."""
    CallbackEvent.objects.filter(id=event.id).update(
        state=CallbackState.PENDING,
        next_attempt_at=timezone.now(),
        claimed_until=None,
        replayed=True,
    )
    task_enqueue_on_commit(DELIVER_TASK, event.id)
