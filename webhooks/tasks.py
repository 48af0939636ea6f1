"""Callback tasks, on their own queue so deliveries never wait behind image work."""

from celery import shared_task
from django.utils import timezone

from common.sweeping import sweep_batch_mark
from webhooks.models import CallbackEvent, CallbackState
from webhooks.selectors import events_ready
from webhooks.services import event_deliver

SWEEP_BATCH = 1000
# A retry due this soon is queued directly with a countdown; later ones wait for the sweeper.
DIRECT_RETRY_SECONDS = 120


@shared_task(name="webhooks.tasks.event_deliver_task", ignore_result=True)
def event_deliver_task(event_id: int) -> None:
    event = event_deliver(event_id=event_id)
    if event is None or event.state != CallbackState.PENDING or event.next_attempt_at is None:
        return
    delay = (event.next_attempt_at - timezone.now()).total_seconds()
    if delay <= DIRECT_RETRY_SECONDS:
        event_deliver_task.apply_async((event_id,), countdown=max(0.0, delay))


@shared_task(name="webhooks.tasks.events_sweep_task", ignore_result=True)
def events_sweep_task() -> int:
    """Queue every due, unclaimed event that may be sent now, once per event and reason
    (``common.sweeping``): nothing is lost with a lost message. An event behind an earlier
    pending one of its order is left for the end of that one to queue (or a later sweep)."""
    ids = sweep_batch_mark(
        CallbackEvent.objects.filter(events_ready()),
        swept_field="swept_at",
        due_field="next_attempt_at",
        claim_field="claimed_until",
        batch=SWEEP_BATCH,
    )
    for event_id in ids:
        event_deliver_task.delay(event_id)
    return len(ids)
