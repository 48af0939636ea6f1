"""Figures of the pipeline read at each scrape (``common.metrics``): orders per pipeline step,
messages waiting per queue, failed callback deliveries and lab submission failures. Read from
the database and the broker, so every web process answers the same whatever runs where."""

from collections.abc import Iterable

from celery import current_app
from django.conf import settings
from django.db.models import Count
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from orders.issues import SUBMISSION_FAILED
from orders.models import Order, OrderIssue, PipelineStep
from webhooks.models import CallbackAttempt

# Steps an order waits in or moves through; the ended ones (Done, Failed, Cancelled) only grow.
IN_FLIGHT = [
    PipelineStep.HELD,
    PipelineStep.AWAITING_PAYMENT,
    PipelineStep.DOWNLOAD,
    PipelineStep.ALLOCATE,
    PipelineStep.PREPARE,
    PipelineStep.SUBMIT,
    PipelineStep.PRODUCTION,
]
FAILED_CALLBACK_OUTCOMES = ["Retry", "RetryAfter", "Refused", "Gone"]


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
        "printapi_orders_in_step", "Orders now at each pipeline step (in flight).", labels=["step"]
    )
    counted = dict(
        Order.objects.filter(pipeline_step__in=IN_FLIGHT)
        .values_list("pipeline_step")
        .annotate(n=Count("id"))
        .values_list("pipeline_step", "n")
    )
    for step in IN_FLIGHT:
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
    failed = dict(
        CallbackAttempt.objects.filter(outcome__in=FAILED_CALLBACK_OUTCOMES)
        .values_list("outcome")
        .annotate(n=Count("id"))
        .values_list("outcome", "n")
    )
    for outcome in FAILED_CALLBACK_OUTCOMES:
        callbacks.add_metric([outcome], failed.get(outcome, 0))
    yield callbacks

    yield CounterMetricFamily(
        "printapi_lab_submission_failures",
        "Shipments a lab refused or that could not be submitted (SubmissionFailed issues).",
        value=OrderIssue.objects.filter(error_code=SUBMISSION_FAILED).count(),
    )
