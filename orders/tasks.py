"""Celery tasks: doorbells that carry ids; the state lives in the rows."""

from datetime import timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db.models import F, Q, QuerySet
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


def sweep_unrung(due_field: str) -> Q:
    """What a sweeper rings for, beside the due-and-unclaimed test: rows it has not rung for
    since they became due (or since their claim was taken), and rows it rang for longer than a
    claim period ago that are still waiting (their message is presumed lost).

    Without this, every sweep would ring again for rows whose message is still waiting in the
    queue, piling up duplicate doorbells behind a backlog. Each row gets at most one sweeper
    doorbell per reason (a new due time, an expired claim) and one per PIPELINE_CLAIM_SECONDS
    after that: a lost message delays the row, it never strands it.
    """
    presumed_lost = timezone.now() - timedelta(seconds=float(settings.PIPELINE_CLAIM_SECONDS))
    return (
        Q(swept_at__isnull=True)
        | Q(swept_at__lt=F(due_field))
        | Q(swept_at__lt=F("claimed_until"))
        | Q(swept_at__lt=presumed_lost)
    )


def rows_ring(queryset: QuerySet[Any], due_field: str, batch: int) -> list[int]:
    """The ids of up to ``batch`` rows to ring for, marked as rung (one statement each)."""
    ids = list(
        queryset.filter(sweep_unrung(due_field))
        .order_by(due_field)
        .values_list("id", flat=True)[:batch]
    )
    if ids:
        queryset.model.objects.filter(id__in=ids).update(swept_at=timezone.now())
    return ids


@shared_task(name="orders.tasks.sweep_due_orders", ignore_result=True)
def sweep_due_orders() -> int:
    """Ring for every order that is due and unclaimed (or whose claim expired).

    This is what makes a lost message, a killed worker or a restarted broker harmless.
    """
    ids = rows_ring(Order.objects.filter(claimable()), "due_at", SWEEP_BATCH)
    for order_id in ids:
        advance_order.delay(order_id)
    return len(ids)


@shared_task(name="orders.tasks.purge_expired_images", ignore_result=True)
def purge_expired_images() -> int:
    return images_purge_expired()
