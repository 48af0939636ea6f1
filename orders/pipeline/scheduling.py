"""Handing orders to the pipeline, and the queue each step runs on.

Every doorbell names the order and the step it rings for. ``pipeline_task_route`` (a Celery
router, listed in ``CELERY_TASK_ROUTES``) sends it to that step's queue, whoever rings: the web
process after a commit, a step's follow-up, the sweeper, the admin. The step decides the queue
here and nowhere else, and the claim runs only that step (``order_claim``), so a worker of one
queue never runs another queue's step, even for a stale or duplicated doorbell.
"""

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from common.tasks import task_enqueue, task_enqueue_on_commit

ADVANCE_TASK = "orders.tasks.order_advance_task"
DOWNLOADS_QUEUE = "downloads"
IMAGES_QUEUE = "images"
# A next step due this soon is queued directly with a countdown; later ones wait for the sweeper.
DIRECT_FOLLOW_UP = timedelta(seconds=120)


def pipeline_queue(step: str) -> str:
    """Downloads wait on merchants' hosts, so they run on many threads; every other step
    (allocation, print-ready rendering, lab submission and tracking, the hold and payment
    waits) uses the CPU and runs in the process-per-CPU pool."""
    from orders.models import PipelineStep  # not at import: Celery loads routers early

    return DOWNLOADS_QUEUE if step == PipelineStep.DOWNLOAD else IMAGES_QUEUE


def pipeline_task_route(
    name: str,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    options: Mapping[str, Any],
    task: object = None,
    **extra: Any,
) -> dict[str, str] | None:
    """The Celery router of order doorbells: the queue of the step the doorbell rings for.

    A doorbell without a step (queued by an earlier release) goes to the default queue.
    """
    if name != ADVANCE_TASK:
        return None
    step = kwargs.get("step") or (args[1] if len(args) > 1 else None)
    return {"queue": pipeline_queue(step)} if step else None


def order_enqueue_on_commit(*, order_id: int, step: str) -> None:
    """Ring for the order's ``step`` once the transaction that made it due commits."""
    task_enqueue_on_commit(ADVANCE_TASK, order_id, step)


def order_enqueue(*, order_id: int, step: str, countdown: float = 0.0) -> None:
    """Ring for the order's ``step`` now (its changes have committed): the sweeper, a wake-up."""
    task_enqueue(ADVANCE_TASK, order_id, step, countdown=countdown)


def order_follow_up(*, order_id: int, step: str, due_at: datetime) -> None:
    """After a step: ring for the next one if it is due soon; a later one waits for the sweeper
    (a countdown held by a worker for hours would be lost with it anyway)."""
    delay = (due_at - timezone.now()).total_seconds()
    if delay <= DIRECT_FOLLOW_UP.total_seconds():
        order_enqueue(order_id=order_id, step=step, countdown=max(0.0, delay))
