"""Figures of the pipeline read at each scrape (``common.metrics``): orders per pipeline step,
messages waiting per queue, failed callback deliveries and lab submission failures. Read from
the database and the broker, so every web process answers the same whatever runs where."""

from collections.abc import Iterable
from typing import Any

from celery import current_app
from django.conf import settings
from django.db.models import Count, QuerySet
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from orders.issues import SUBMISSION_FAILED
from orders.models import Order, OrderIssue
from orders.pipeline.claims import ACTIVE_STEPS
from webhooks.models import CallbackAttempt

FAILED_CALLBACK_OUTCOMES = ["Retry", "RetryAfter", "Refused", "Gone"]


def _counts(rows: QuerySet[Any], field: str) -> dict[str, int]:
    """How many of ``rows`` have each value of ``field`` (one GROUP BY)."""
    grouped = rows.values_list(field).annotate(n=Count("id")).values_list(field, "n")
    return {value: n for value, n in grouped}


def queue_depths() -> dict[str, int]:
    """Messages waiting in each of the service's queues (not those a worker holds)."""
    depths = {}
    with current_app.connection_for_read() as connection:
        channel = connection.default_channel
        for queue in settings.CELERY_TASK_QUEUES:
            declared = channel.queue_declare(queue=queue.name)
            depths[queue.name] = int(declared.message_count)
    return depths


def pipeline_figures() -> Iterable[Metric]:
    steps = GaugeMetricFamily(
        "printapi_orders_in_step",
        "Orders now at each pipeline step not yet ended (Held to Production).",
        labels=["step"],
    )
    counted = _counts(Order.objects.filter(pipeline_step__in=ACTIVE_STEPS), "pipeline_step")
    for step in ACTIVE_STEPS:
        steps.add_metric([step.value], counted.get(step, 0))
    yield steps

    queues = GaugeMetricFamily(
        "printapi_queue_messages", "Messages waiting in each Celery queue.", labels=["queue"]
    )
    for name, depth in queue_depths().items():
        queues.add_metric([name], depth)
    yield queues

    callbacks = CounterMetricFamily(
        "printapi_callback_delivery_failures",
        "Callback delivery attempts that did not deliver, by outcome.",
        labels=["outcome"],
    )
    failed = _counts(
        CallbackAttempt.objects.filter(outcome__in=FAILED_CALLBACK_OUTCOMES), "outcome"
    )
    for outcome in FAILED_CALLBACK_OUTCOMES:
        callbacks.add_metric([outcome], failed.get(outcome, 0))
    yield callbacks

    yield CounterMetricFamily(
        "printapi_lab_submission_failures",
        "Shipments a lab refused or that could not be submitted (SubmissionFailed issues).",
        value=OrderIssue.objects.filter(error_code=SUBMISSION_FAILED).count(),
    )
