"""The Celery application. Tasks carry ids only; durable state lives in the database."""

import os
from typing import Any

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_ready.connect
@signals.worker_process_init.connect
def _long_lived_objects_frozen(**_kwargs: object) -> None:
    """A worker's main process once it is ready (a thread pool's tasks run there) and each
    prefork child once started: what is loaded by then is kept out of the garbage collector's
    full collections (``common.memory``)."""
    from common.memory import long_lived_objects_frozen

    long_lived_objects_frozen()


@signals.worker_process_init.connect
def _rendering_threads_set(**_kwargs: object) -> None:
    """A prefork child renders print files one at a time beside its siblings, one process per
    CPU and one more: its renderings get ``RENDER_THREADS`` libvips threads each (one by
    default), not one per CPU, which would only contend with the siblings and the steps."""
    from orders.artwork.printready import render_threads_set

    render_threads_set()


@signals.task_prerun.connect
@signals.task_postrun.connect
def _database_connections_checked(task: Any = None, **_kwargs: object) -> None:
    """Around every task, as Django does around a request: a connection that broke or outlived
    ``CONN_MAX_AGE`` or that the server dropped is closed (``common.db``), the next use opens
    a new one.

    Celery's Django fix-up would instead close every connection before and after each task,
    so each task started (and PostgreSQL forked) a new connection; ``CELERY_DB_REUSE_MAX``
    makes it close them only every thousand tasks. A task run eagerly, inside the caller's
    process and transaction, leaves the caller's connection alone."""
    from django.db import close_old_connections

    from common.db import dropped_connections_closed

    if task is not None and getattr(task.request, "is_eager", False):
        return
    close_old_connections()
    dropped_connections_closed()


@signals.task_prerun.connect
def _task_timer_started(task: Any = None, **_kwargs: object) -> None:
    import time

    if task is not None:
        task.request.metrics_started = time.perf_counter()


@signals.task_postrun.connect
def _task_measured(task: Any = None, state: str | None = None, **_kwargs: object) -> None:
    """Each run's duration and outcome (Prometheus, ``common.metrics``)."""
    import time

    from common.metrics import TASK_DURATION, TASK_RUNS

    started = getattr(task.request, "metrics_started", None) if task is not None else None
    if started is None:
        return
    outcome = {"SUCCESS": "succeeded", "RETRY": "retried"}.get(state or "", "failed")
    TASK_DURATION.labels(task.name).observe(time.perf_counter() - started)
    TASK_RUNS.labels(task.name, outcome).inc()
