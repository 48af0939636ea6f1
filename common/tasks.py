"""Queueing Celery tasks by name, so a service never imports the task module that calls it."""

from celery import signature
from django.db import transaction


def task_enqueue_on_commit(name: str, *args: object) -> None:
    """Queue the task registered as ``name`` once the current transaction commits.

    By name: a process that never imported the task's module (a web process, a script) sends
    it all the same, routed to its queue by ``CELERY_TASK_ROUTES``. ``robust``: with the broker
    down the change has committed all the same; the error is logged, not raised to the caller,
    and the sweeper queues the work once the broker is back.
    """
    transaction.on_commit(lambda: signature(name, args=args).delay(), robust=True)


def task_enqueue(name: str, *args: object, countdown: float = 0.0) -> None:
    """Queue the task registered as ``name`` now (``countdown`` seconds from now), routed by
    ``CELERY_TASK_ROUTES``: for tasks that queue more work (a follow-up, a sweep), whose
    changes have committed already."""
    signature(name, args=args).apply_async(countdown=countdown if countdown > 0 else None)
