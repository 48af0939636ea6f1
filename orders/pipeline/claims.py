"""Claiming an order's current step, and moving it on, with conditional updates.

A worker owns an order while ``claimed_until`` is in the future; the value is also its claim
token. Moving on succeeds only for the claim holder and the expected step, so a step re-run by
a second worker (after a crash or a duplicated message) cannot move the order twice.
"""

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from orders.models import Order, PipelineStep
from orders.pipeline.fairness import download_claim

ACTIVE_STEPS = (
    PipelineStep.HELD,
    PipelineStep.AWAITING_PAYMENT,
    PipelineStep.DOWNLOAD,
    PipelineStep.ALLOCATE,
    PipelineStep.PREPARE,
    PipelineStep.SUBMIT,
    PipelineStep.PRODUCTION,
)


class ClaimLost(Exception):
    """Another worker took the order over (our claim expired); our changes must roll back."""


def orders_due_unclaimed() -> Q:
    now = timezone.now()
    return Q(pipeline_step__in=ACTIVE_STEPS, due_at__lte=now) & (
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )


def order_claim(*, order_id: int, step: str | None = None) -> Order | None:
    """The order, claimed for its current step (only if that is ``step``, when given), or None
    if it is not due, owned elsewhere, or deferred because its merchant has its share of
    downloads running (``orders.pipeline.fairness``)."""
    until = timezone.now() + timedelta(seconds=settings.PIPELINE_CLAIM_SECONDS)
    due = Order.objects.filter(orders_due_unclaimed(), id=order_id)
    if step is not None:
        due = due.filter(pipeline_step=step)
    # A doorbell that names its step takes only that step's way to its claim.
    claimed = step != PipelineStep.DOWNLOAD and bool(
        due.exclude(pipeline_step=PipelineStep.DOWNLOAD).update(claimed_until=until)
    )
    if not claimed and step in (None, PipelineStep.DOWNLOAD):
        claimed = download_claim(due=due.filter(pipeline_step=PipelineStep.DOWNLOAD), until=until)
    if not claimed:
        return None
    return Order.objects.select_related("environment__merchant").get(id=order_id)


def order_move_on(*, order: Order, step: str, due_at: datetime | None, **fields: Any) -> None:
    """Record the next step (or the same one, due later) and release the claim.

    Raises ``ClaimLost`` when the order is no longer ours, so the caller's transaction rolls back.
    """
    now = timezone.now()
    changed = Order.objects.filter(
        id=order.id, pipeline_step=order.pipeline_step, claimed_until=order.claimed_until
    ).update(pipeline_step=step, due_at=due_at, claimed_until=None, last_updated=now, **fields)
    if not changed:
        raise ClaimLost(f"{order.public_id}: claim on step {order.pipeline_step} lost")
    order.pipeline_step = step
    order.due_at = due_at
    order.claimed_until = None
    order.last_updated = now
    for name, value in fields.items():
        setattr(order, name, value)


def order_claim_renew(*, order: Order) -> None:
    """Extend our claim between the units of a long step (each download, each rendering), or
    raise ``ClaimLost``: a step outlasting the claim must not be run by two workers at once.

    Inside a transaction the update also locks the order row until it commits, as the actions
    do, so a cancel either waits for the write or has already happened.
    """
    until = timezone.now() + timedelta(seconds=settings.PIPELINE_CLAIM_SECONDS)
    renewed = Order.objects.filter(
        id=order.id, pipeline_step=order.pipeline_step, claimed_until=order.claimed_until
    ).update(claimed_until=until)
    if not renewed:
        raise ClaimLost(f"{order.public_id}: claim on step {order.pipeline_step} lost")
    order.claimed_until = until
