"""Celery tasks: doorbells that carry ids; the state lives in the rows."""

from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from orders.callbacks.tasks import deliver_callback, sweep_due_callbacks
from orders.models import Order
from orders.pipeline.claims import claimable
from orders.pipeline.retention import images_purge_expired
from orders.pipeline.runner import order_advance

# The callback tasks live beside their delivery code; importing them here registers them.
__all__ = [
    "advance_order",
    "deliver_callback",
    "purge_expired_images",
    "sweep_due_callbacks",
    "sweep_due_orders",
]

SWEEP_BATCH = 500
# A follow-up due this soon is rung directly; later ones wait for the sweeper.
DIRECT_FOLLOW_UP = timedelta(seconds=120)


@shared_task(name="orders.tasks.advance_order", ignore_result=True)
def advance_order(order_id: int) -> None:
    """Run the order's due step and ring again for a follow-up due soon.

    No Celery retries: a step that fails leaves the order due later in its row (and a failure
    here, say the database being away, leaves it due as it was), and the sweeper rings for it.
    """
    due_at = order_advance(order_id=order_id)
    if due_at is None:
        return
    delay = (due_at - timezone.now()).total_seconds()
    if delay <= DIRECT_FOLLOW_UP.total_seconds():
        advance_order.apply_async((order_id,), countdown=max(0.0, delay))


@shared_task(name="orders.tasks.sweep_due_orders", ignore_result=True)
def sweep_due_orders() -> int:
    """Ring for every order that is due and unclaimed (or whose claim expired).

    This is what makes a lost message, a killed worker or a restarted broker harmless.
    """
    ids = list(
        Order.objects.filter(claimable())
        .order_by("due_at")
        .values_list("id", flat=True)[:SWEEP_BATCH]
    )
    for order_id in ids:
        advance_order.delay(order_id)
    return len(ids)


@shared_task(name="orders.tasks.purge_expired_images", ignore_result=True)
def purge_expired_images() -> int:
    return images_purge_expired()
