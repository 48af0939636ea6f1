"""Claiming an order's current step, and moving it on, with conditional updates.

A worker owns an order while ``claimed_until`` is in the future; the value is also its claim
token. Moving on succeeds only for the claim holder and the expected step, so a step re-run by
a second worker (after a crash or a duplicated message) cannot move the order twice.
"""

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from merchants.models import Environment, Merchant
from orders.models import Order, PipelineStep
from orders.pipeline.fairness import download_claim
from orders.selectors import JoinedRead, TableColumns

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
    """The order, claimed for its current step (only if that is ``step``, when given), with
    its environment and merchant; or None if it is not due, owned elsewhere, or deferred
    because its merchant has its share of downloads running (``orders.pipeline.fairness``)."""
    if step is not None and step not in ACTIVE_STEPS:
        return None
    until = timezone.now() + timedelta(seconds=settings.PIPELINE_CLAIM_SECONDS)
    # A doorbell that names its step takes only that step's way to its claim.
    if step != PipelineStep.DOWNLOAD:
        steps = [step] if step else [s for s in ACTIVE_STEPS if s != PipelineStep.DOWNLOAD]
        order = _claimed(order_id=order_id, steps=steps, until=until)
        if order is not None or step is not None:
            return order
    due = Order.objects.filter(
        orders_due_unclaimed(), id=order_id, pipeline_step=PipelineStep.DOWNLOAD
    )
    return download_claim(
        due=due,
        claim=lambda: _claimed(
            order_id=order_id, steps=[PipelineStep.DOWNLOAD], until=until, undefer=True
        ),
    )


def _claimed(
    *, order_id: int, steps: Sequence[str], until: datetime, undefer: bool = False
) -> Order | None:
    """Claim the order until ``until`` if it is due, unclaimed and at one of ``steps``
    (``undefer``: no longer deferred by the download share); the order read as the claim left
    it, with its environment and merchant, or None.

    On PostgreSQL the claim and the read are one statement (an ``UPDATE ... RETURNING`` joined
    with the order's environment and merchant): every step of every order starts with it."""
    now = timezone.now()
    if connection.vendor != "postgresql":
        claimed = Order.objects.filter(
            orders_due_unclaimed(), id=order_id, pipeline_step__in=steps
        ).update(claimed_until=until, **({"download_deferred_at": None} if undefer else {}))
        if not claimed:
            return None
        return Order.objects.select_related("environment__merchant").get(id=order_id)
    with connection.cursor() as cursor:
        cursor.execute(_CLAIMS[undefer].sql(), [until, order_id, list(steps), now, now])
        rows = _CLAIMS[undefer].instances(cursor.fetchall())
    if not rows:
        return None
    order, environment, merchant = rows[0]
    environment._state.fields_cache["merchant"] = merchant  # as select_related gives them
    order._state.fields_cache["environment"] = environment
    return order  # type: ignore[no-any-return]


def _claim_statement(*, undefer: bool) -> JoinedRead:
    """The PostgreSQL claim: ``orders_due_unclaimed``'s conditional UPDATE for one order, its
    whole new row returned, joined with the environment and merchant."""
    return JoinedRead(
        "WITH c AS (UPDATE {order} SET claimed_until = %s"
        + (", download_deferred_at = NULL" if undefer else "")
        + " WHERE id = %s AND pipeline_step = ANY(%s) AND due_at <= %s "
        "AND (claimed_until IS NULL OR claimed_until < %s) RETURNING *) "
        "SELECT {columns} FROM c JOIN {environment} e ON e.id = c.environment_id "
        "JOIN {merchant} m ON m.id = e.merchant_id",
        TableColumns(Order, "c"),
        TableColumns(Environment, "e"),
        TableColumns(Merchant, "m"),
    )


_CLAIMS = {undefer: _claim_statement(undefer=undefer) for undefer in (False, True)}


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
