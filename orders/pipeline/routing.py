"""The queue each step of an order runs on, decided here and nowhere else.

Every task message (``orders.tasks.order_advance_task``) names the order and the step it runs
for. ``pipeline_task_route``, a Celery router listed in ``CELERY_TASK_ROUTES``, sends it to
that step's queue whoever queues it: the web process after a commit, a step's follow-up, the
sweeper, the admin. The claim then runs only that step (``order_claim``), so a worker of one
queue never runs another queue's step, even for a stale or duplicated task message. A run goes
on to the order's next steps itself only while they are due at once on the same queue
(``orders.pipeline.state_machine.order_advance``).

Celery loads routers before Django's apps are ready: this module imports no model.
"""

from collections.abc import Mapping, Sequence
from typing import Any

ADVANCE_TASK = "orders.tasks.order_advance_task"
DOWNLOADS_QUEUE = "downloads"
IMAGES_QUEUE = "images"
LABS_QUEUE = "labs"


def pipeline_queue(step: str) -> str:
    """Downloads wait on merchants' hosts, so they run on many threads; lab submission and
    the following of production wait on the labs' sites, so they run on threads of their own
    (a site that hangs holds none of the renders); every other step (allocation, print-ready
    rendering, the hold and payment waits) uses the CPU and runs in the process-per-CPU
    pool."""
    from orders.models import PipelineStep

    if step == PipelineStep.DOWNLOAD:
        return DOWNLOADS_QUEUE
    if step in (PipelineStep.SUBMIT, PipelineStep.PRODUCTION):
        return LABS_QUEUE
    return IMAGES_QUEUE


def pipeline_task_route(
    name: str,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    options: Mapping[str, Any],
    task: object = None,
    **extra: Any,
) -> dict[str, str] | None:
    """The Celery router of order task messages: the queue of the step it names.

    A task message without a step (queued by an earlier release) goes to the default queue.
    """
    if name != ADVANCE_TASK:
        return None
    step = (kwargs or {}).get("step") or (args[1] if len(args) > 1 else None)
    return {"queue": pipeline_queue(step)} if step else None
