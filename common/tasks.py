"""Queueing Celery tasks by name, so a service never imports the task module that calls it."""

from typing import Any

from celery import signature
from django.db import transaction


def task_enqueue_on_commit(name: str, *args: object) -> None:
    """Queue the task registered as ``name`` once the current transaction commits.

    By name: a process that never imported the task's module (a web process, a script) sends
    it all the same, routed to its queue by ``CELERY_TASK_ROUTES``. ``robust``: with the broker
    down the change has committed all the same; the error is logged, not raised to the caller,
    and the sweeper queues the work once the broker is back.
    """
    transaction.on_commit(lambda: _send(name, args), robust=True)


def task_enqueue(name: str, *args: object, countdown: float = 0.0) -> None:
    """Queue the task registered as ``name`` now (``countdown`` seconds from now), routed by
    ``CELERY_TASK_ROUTES``: for tasks that queue more work (a follow-up, a sweep), whose
    changes have committed already."""
    _send(name, args, countdown=countdown if countdown > 0 else None)


def _send(name: str, args: tuple[Any, ...], countdown: float | None = None) -> None:
    # Two options Celery documents, a quarter of a message's CPU: the arguments' repr given
    # (else Celery's saferepr, its limits looked up in the settings for each message), and no
    # queue declared with the message (else the queue copied and bound to the channel for
    # each one): a message goes to its queue by name (the default exchange), which Redis and
    # the filesystem transport keep whether or not it was declared; the workers declare the
    # queues they consume.
    signature(name, args=args).apply_async(
        countdown=countdown, argsrepr=repr(args), kwargsrepr="{}", declare=[]
    )
