"""Celery tasks: doorbells that carry ids; the state lives in the rows."""

from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from common.sweeping import sweep_batch_mark
from orders.models import Order
from orders.pipeline.claims import orders_due_unclaimed
from orders.pipeline.retention import images_purge_expired
from orders.pipeline.state_machine import order_advance

SWEEP_BATCH = 500
# A follow-up due this soon is queued directly; later ones wait for the sweeper.
DIRECT_FOLLOW_UP = timedelta(seconds=120)


@shared_task(name="orders.tasks.order_advance_task", ignore_result=True)
def order_advance_task(order_id: int) -> None:
    """Run the order's due step and queue again for a follow-up due soon.

    No Celery retries: a step that fails leaves the order due later in its row (and a failure
    here, say the database being away, leaves it due as it was), and the sweeper queues it.
    """
    due_at = order_advance(order_id=order_id)
    if due_at is None:
        return
    delay = (due_at - timezone.now()).total_seconds()
    if delay <= DIRECT_FOLLOW_UP.total_seconds():
        order_advance_task.apply_async((order_id,), countdown=max(0.0, delay))


@shared_task(name="orders.tasks.orders_sweep_task", ignore_result=True)
def orders_sweep_task() -> int:
    """Queue every order that is due and unclaimed (or whose claim expired).

    This is what makes a lost message, a killed worker or a restarted broker harmless.
    """
    ids = sweep_batch_mark(
        Order.objects.filter(orders_due_unclaimed()), due_field="due_at", batch=SWEEP_BATCH
    )
    for order_id in ids:
        order_advance_task.delay(order_id)
    return len(ids)


@shared_task(name="orders.tasks.images_purge_expired_task", ignore_result=True)
def images_purge_expired_task() -> int:
    return images_purge_expired()
