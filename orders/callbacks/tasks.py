"""Callback tasks, on their own queue so deliveries never wait behind image work."""

from celery import shared_task
from django.utils import timezone

from orders.callbacks.dispatch import callback_deliver, due_callbacks
from orders.models import CallbackEvent, CallbackState

SWEEP_BATCH = 1000


@shared_task(name="orders.callbacks.deliver_callback", ignore_result=True)
def deliver_callback(event_id: int) -> None:
    event = callback_deliver(event_id=event_id)
    if event is None or event.state != CallbackState.PENDING or event.next_attempt_at is None:
        return
    delay = (event.next_attempt_at - timezone.now()).total_seconds()
    if delay <= 120:
        deliver_callback.apply_async((event_id,), countdown=max(0.0, delay))


@shared_task(name="orders.callbacks.sweep_due_callbacks", ignore_result=True)
def sweep_due_callbacks() -> int:
    """Ring for every due, unclaimed event: nothing is lost with a lost message.

    Once per event and reason, not at every sweep (see ``orders.tasks.sweep_unrung``).
    """
    from orders.tasks import rows_ring

    ids = rows_ring(CallbackEvent.objects.filter(due_callbacks()), "next_attempt_at", SWEEP_BATCH)
    for event_id in ids:
        deliver_callback.delay(event_id)
    return len(ids)
