"""Handing orders to the pipeline: a task message per order and step, on the step's queue
(``orders.pipeline.routing``), only once the change that made the step due has committed."""

from datetime import datetime, timedelta

from django.utils import timezone

from common.tasks import task_enqueue, task_enqueue_on_commit
from orders.models import Order
from orders.pipeline.routing import ADVANCE_TASK

# A next step due this soon is queued directly with a countdown; later ones wait for the sweeper.
DIRECT_FOLLOW_UP = timedelta(seconds=120)


def order_enqueue_on_commit(*, order_id: int, step: str) -> None:
    """Queue the order's ``step`` once the transaction that made it due commits."""
    task_enqueue_on_commit(ADVANCE_TASK, order_id, step)


def order_enqueue(*, order_id: int, step: str, countdown: float = 0.0) -> None:
    """Queue the order's ``step`` now (its changes have committed): the sweeper, a wake-up."""
    task_enqueue(ADVANCE_TASK, order_id, step, countdown=countdown)


def order_follow_up(*, order_id: int, step: str, due_at: datetime) -> None:
    """After a step: queue the next one if it is due soon; a later one waits for the sweeper
    (a countdown held by a worker for hours would be lost with it anyway).

    The row is marked as queued for this due time, as the sweeper marks what it queues: behind
    a backlog the sweeper would otherwise queue every waiting step a second time. It is queued
    again once a claim period has passed without the step being run (the message was lost).
    """
    delay = (due_at - timezone.now()).total_seconds()
    if delay <= DIRECT_FOLLOW_UP.total_seconds():
        order_enqueue(order_id=order_id, step=step, countdown=max(0.0, delay))
        # Marked once sent: a task message the broker refused leaves the row to the sweeper.
        Order.objects.filter(id=order_id, pipeline_step=step, due_at=due_at).update(
            swept_at=max(due_at, timezone.now())
        )
