"""The service at a glance: the figures the admin's overview draws (``backoffice.overview``)
and the scrape exports (``orders.metrics``), read alike for both. Each is one aggregate query
whatever the number of orders (queue depths: the broker).

What "needing attention" means is the order list's filter's (``orders.admin.NeedsAttention``,
``?attention=<cause>``): the same causes and conditions, so a count links to its orders.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db.models import Count, Exists, OuterRef, Q
from django.db.models.functions import TruncHour

from common.db import durations_percentiles
from orders.issues import (
    ITEM_UNAVAILABLE,
    LAB_ANSWER_UNKNOWN,
    LAB_CANCELLED,
    LAB_ERROR,
    SUBMISSION_FAILED,
)
from orders.models import DetailState, Order, OrderIssue, PipelineStep, Shipment, ShipmentStatus
from orders.models import Stage as S
from webhooks.models import CallbackEvent, CallbackState

Step = PipelineStep

# Where an order can stand: each stage with its steps, in the order an order goes.
STAGE_STEPS: tuple[tuple[str, str], ...] = (
    (S.ON_HOLD, Step.HELD),
    (S.AWAITING_PAYMENT, Step.AWAITING_PAYMENT),
    (S.IN_PROGRESS, Step.DOWNLOAD),
    (S.IN_PROGRESS, Step.ALLOCATE),
    (S.IN_PROGRESS, Step.PREPARE),
    (S.IN_PROGRESS, Step.SUBMIT),
    (S.IN_PROGRESS, Step.PRODUCTION),
    (S.IN_PROGRESS, Step.FAILED),
    (S.COMPLETE, Step.DONE),
    (S.CANCELLED, Step.CANCELLED),
)
ENDED_STAGES = (S.COMPLETE, S.CANCELLED)

# orders.admin.NeedsAttention's causes (its ``attention`` values) and their words.
ATTENTION_CAUSES: tuple[tuple[str, str], ...] = (
    ("any", "Any of these"),
    ("issues", "Has an issue"),
    ("error", "A step in Error"),
    ("lab", "Lab cancelled, failed or refused"),
    ("allocation", "Waiting at allocation"),
)
LAB_SIDE_ISSUES = (LAB_CANCELLED, LAB_ERROR, SUBMISSION_FAILED, LAB_ANSWER_UNKNOWN)
DETAIL_FIELDS = (
    "download_assets",
    "allocate_production_location",
    "print_ready_assets_prepared",
    "in_production",
    "shipping",
)

# An order ended: Complete (the Done step) or stopped at Failed for staff.
ENDED_OUTCOMES = {"Complete": Step.DONE, "Failed": Step.FAILED}
LAB_TIMES_DAYS = 7


def orders_by_stage_and_step() -> dict[tuple[str, str], int]:
    """How many orders stand at each (stage, step) now: every pair of ``STAGE_STEPS`` (0 when
    none), and any other pair found. One GROUP BY."""
    counted = dict.fromkeys(STAGE_STEPS, 0)
    grouped = Order.objects.order_by().values_list("stage", "pipeline_step").annotate(n=Count("id"))
    for stage, step, n in grouped.values_list("stage", "pipeline_step", "n"):
        counted[(stage, step)] = n
    return counted


def attention_conditions(now: datetime) -> dict[str, Q]:
    """Each cause's condition on an order, as ``NeedsAttention`` filters by it: ``any`` is
    any of the others on an order not cancelled."""
    issues = OrderIssue.objects.filter(order=OuterRef("pk"))
    unavailable = Exists(issues.filter(error_code=ITEM_UNAVAILABLE))
    conditions = {
        "issues": Q(Exists(issues)),
        "error": Q(*(Q(**{field: DetailState.ERROR}) for field in DETAIL_FIELDS), _connector="OR"),
        "lab": Q(Exists(issues.filter(error_code__in=LAB_SIDE_ISSUES))),
        "allocation": Q(pipeline_step=Step.ALLOCATE) & (Q(due_at__gt=now) | Q(unavailable)),
    }
    anything = Q(*conditions.values(), _connector="OR") & ~Q(stage=S.CANCELLED)
    return {"any": anything, **conditions}


def orders_needing_attention(*, now: datetime) -> dict[str, int]:
    """How many orders each cause of ``ATTENTION_CAUSES`` finds now. One query."""
    counts = Order.objects.aggregate(
        **{
            cause: Count("id", filter=condition)
            for cause, condition in attention_conditions(now).items()
        }
    )
    return {cause: counts[cause] for cause, _ in ATTENTION_CAUSES}


@dataclass(frozen=True)
class EndedHour:
    hour: datetime  # its start, UTC
    complete: int
    failed: int


def orders_ended_by_hour(*, now: datetime, hours: int = 48) -> list[EndedHour]:
    """The last ``hours`` hours up to ``now``'s (UTC), oldest first, each with the orders that
    completed and that stopped at Failed in it, by the time of their last change (what
    ``last_updated`` holds: the move to Done or Failed, unless a later change to the order). One
    GROUP BY."""
    current = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    first = current - timedelta(hours=hours - 1)
    grouped = (
        Order.objects.order_by()
        .filter(pipeline_step__in=ENDED_OUTCOMES.values(), last_updated__gte=first)
        .annotate(hour=TruncHour("last_updated", tzinfo=UTC))
        .values_list("hour", "pipeline_step")
        .annotate(n=Count("id"))
        .values_list("hour", "pipeline_step", "n")
    )
    counted = {(hour, step): n for hour, step, n in grouped}
    starts = (first + timedelta(hours=n) for n in range(hours))
    return [
        EndedHour(
            start,
            counted.get((start, Step.DONE), 0),
            counted.get((start, Step.FAILED), 0),
        )
        for start in starts
    ]


def orders_ended_since(since: datetime) -> dict[str, int]:
    """How many orders completed and stopped at Failed since ``since`` (as
    ``orders_ended_by_hour`` counts them). One query."""
    counts = Order.objects.filter(last_updated__gte=since).aggregate(
        **{
            outcome: Count("id", filter=Q(pipeline_step=step))
            for outcome, step in ENDED_OUTCOMES.items()
        }
    )
    return dict(counts)


@dataclass(frozen=True)
class FailingCallbacks:
    environment_id: int
    merchant: str
    environment: str  # Sandbox or Live
    events: int


def callbacks_failing() -> list[FailingCallbacks]:
    """Callback events failing now (waiting for a retry after an attempt that did not
    deliver), by merchant and environment, the most first. One GROUP BY."""
    grouped = (
        CallbackEvent.objects.order_by()
        .filter(state=CallbackState.PENDING, attempts__gte=1)
        .values_list("environment_id", "environment__merchant__name", "environment__kind")
        .annotate(n=Count("id"))
        .values_list("environment_id", "environment__merchant__name", "environment__kind", "n")
    )
    found = [FailingCallbacks(*row) for row in grouped]
    return sorted(found, key=lambda f: (-f.events, f.merchant, f.environment))


@dataclass(frozen=True)
class LabTimes:
    lab_code: str
    shipments: int
    median_seconds: float
    p90_seconds: float


def lab_shipping_times(*, now: datetime, days: int = LAB_TIMES_DAYS) -> list[LabTimes]:
    """Each lab's time from a shipment's submission to its dispatch, median and 90th
    percentile, over the shipments it shipped in the last ``days`` days; by lab code. One
    aggregate query on PostgreSQL (``common.db.durations_percentiles``)."""
    shipped = Shipment.objects.filter(
        status=ShipmentStatus.SHIPPED,
        dispatch_date__gte=now - timedelta(days=days),
        submitted_at__isnull=False,
    )
    found = durations_percentiles(
        shipped, group="lab_code", start="submitted_at", end="dispatch_date", fractions=(0.5, 0.9)
    )
    return [
        LabTimes(code, count, median, p90) for code, (count, (median, p90)) in sorted(found.items())
    ]


def queue_depths() -> dict[str, int]:
    """Messages waiting in each of the service's queues (not those a worker holds)."""
    depths = {}
    with current_app.connection_for_read() as connection:
        channel = connection.default_channel
        for queue in settings.CELERY_TASK_QUEUES:
            declared = channel.queue_declare(queue=queue.name)
            depths[queue.name] = int(declared.message_count)
    return depths
