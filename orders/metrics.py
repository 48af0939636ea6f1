"""Figures of the pipeline read at each scrape (``common.metrics``): orders per pipeline step
and per stage, orders needing attention by cause, orders ended in the last hour, callbacks
failing by merchant, each lab's time from submission to shipment, messages waiting per queue,
failed callback deliveries and lab submission failures. Read from the database and the broker
(``orders.figures``, as the admin's overview reads them), so every web process answers the
same whatever runs where. ``deploy/grafana-dashboard.json`` draws them."""

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.db.models import Count, QuerySet
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from orders.figures import (
    ATTENTION_CAUSES,
    callbacks_failing,
    lab_shipping_times,
    orders_by_stage_and_step,
    orders_ended_since,
    orders_needing_attention,
    queue_depths,
)
from orders.issues import SUBMISSION_FAILED
from orders.models import OrderIssue, Stage
from orders.pipeline.claims import ACTIVE_STEPS
from webhooks.models import CallbackAttempt

FAILED_CALLBACK_OUTCOMES = ["Retry", "RetryAfter", "Refused", "Gone"]


def _counts(rows: QuerySet[Any], field: str) -> dict[str, int]:
    """How many of ``rows`` have each value of ``field`` (one GROUP BY)."""
    grouped = rows.values_list(field).annotate(n=Count("id")).values_list(field, "n")
    return {value: n for value, n in grouped}


def pipeline_figures() -> Iterable[Metric]:
    steps = GaugeMetricFamily(
        "printapi_orders_in_step",
        "Orders now at each pipeline step not yet ended (Held to Production).",
        labels=["step"],
    )
    stages = GaugeMetricFamily(
        "printapi_orders_in_stage", "Orders now at each stage.", labels=["stage"]
    )
    now = timezone.now()
    by_step: dict[str, int] = {}
    by_stage: dict[str, int] = dict.fromkeys(Stage.values, 0)
    for (stage, step), n in orders_by_stage_and_step().items():
        by_step[step] = by_step.get(step, 0) + n
        by_stage[stage] = by_stage.get(stage, 0) + n
    for step in ACTIVE_STEPS:
        steps.add_metric([step.value], by_step.get(step, 0))
    yield steps
    for stage, n in by_stage.items():
        stages.add_metric([stage], n)
    yield stages

    attention = GaugeMetricFamily(
        "printapi_orders_needing_attention",
        "Orders needing attention now, by cause (the order list's needs-attention filter; "
        "cause any: any of the others, cancelled orders aside).",
        labels=["cause"],
    )
    needing = orders_needing_attention(now=now)
    for cause, _ in ATTENTION_CAUSES:
        attention.add_metric([cause], needing[cause])
    yield attention

    ended = GaugeMetricFamily(
        "printapi_orders_ended_last_hour",
        "Orders that completed or stopped at Failed in the last hour, by outcome.",
        labels=["outcome"],
    )
    for outcome, n in orders_ended_since(now - timedelta(hours=1)).items():
        ended.add_metric([outcome], n)
    yield ended

    failing = GaugeMetricFamily(
        "printapi_callbacks_failing",
        "Callback events waiting for a retry after an attempt that did not deliver, by "
        "merchant and environment.",
        labels=["merchant", "environment"],
    )
    for found in callbacks_failing():
        failing.add_metric([found.merchant, found.environment], found.events)
    yield failing

    lab_times = GaugeMetricFamily(
        "printapi_lab_shipment_seconds",
        "Each lab's time from a shipment's submission to its dispatch over the shipments it "
        "shipped in the last 7 days: median (quantile 0.5) and 90th percentile (0.9).",
        labels=["lab", "quantile"],
    )
    for lab in lab_shipping_times(now=now):
        lab_times.add_metric([lab.lab_code, "0.5"], lab.median_seconds)
        lab_times.add_metric([lab.lab_code, "0.9"], lab.p90_seconds)
    yield lab_times

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
