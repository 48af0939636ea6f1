"""The admin's first page: the service at a glance, drawn as charts on the server
(``common.charts``) from ``orders.figures``, the same figures ``/metrics`` exports. Each count
of orders or callbacks links to the admin's list of them.

Shown to staff who may view orders (every Operator and Administrator); seven queries
whatever the number of orders, and the broker asked once for its queues' depths.
"""

import logging
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from common.charts import BarChart, Point, Row, RowChart, bar_chart, row_chart
from orders.figures import (
    ATTENTION_CAUSES,
    ENDED_STAGES,
    LAB_TIMES_DAYS,
    callbacks_failing,
    lab_shipping_times,
    orders_by_stage_and_step,
    orders_ended_by_hour,
    orders_needing_attention,
    queue_depths,
)

logger = logging.getLogger(__name__)
VIEW_ORDERS = "orders.view_order"
HOURS = 48


@dataclass(frozen=True)
class Overview:
    open_orders: RowChart
    ended_orders: RowChart
    attention: RowChart
    completed: BarChart
    failed: BarChart
    callbacks: RowChart
    lab_times: RowChart
    queues: RowChart | None  # None: the broker did not answer


def _list(model: str, **filters: Any) -> str:
    return f"{reverse(f'admin:{model}_changelist')}?{urlencode(filters)}"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h"


def overview_read(*, now: datetime) -> Overview:
    """The overview's charts as the figures stand at ``now``."""
    stand = orders_by_stage_and_step()
    open_rows: list[Row] = []
    ended_rows: list[Row] = []
    for (stage, step), n in stand.items():
        row = Row(
            step if step == stage else f"{stage} · {step}",
            Decimal(n),
            href=_list("orders_order", stage__exact=stage, pipeline_step__exact=step),
        )
        (ended_rows if stage in ENDED_STAGES else open_rows).append(row)

    needing = orders_needing_attention(now=now)
    attention_rows = [
        Row(words, Decimal(needing[cause]), href=_list("orders_order", attention=cause))
        for cause, words in ATTENTION_CAUSES
    ]

    hours = orders_ended_by_hour(now=now, hours=HOURS)

    def hourly(slug: str, title: str, count: Any) -> BarChart:
        values = [count(hour) for hour in hours]
        return bar_chart(
            slug=slug,
            title=title,
            description=(
                f"{len(hours)} bars, one an hour (UTC) from {hours[0].hour:%d %b %H:00} to "
                f"{hours[-1].hour:%d %b %H:00}; {sum(values)} in all, at most {max(values)} "
                "in an hour."
            ),
            points=[
                Point(
                    Decimal(value),
                    bar=f"{hour.hour:%d %b %H:00}",
                    row=f"{hour.hour:%Y-%m-%d %H:00}",
                    tick=f"{hour.hour:%H:00}" if (len(hours) - 1 - index) % 12 == 0 else "",
                )
                for index, (hour, value) in enumerate(zip(hours, values, strict=True))
            ],
            places=0,
            label_heading="Hour (UTC)",
        )

    lab_rows = []
    for lab in lab_shipping_times(now=now):
        for what, seconds in (
            (f"median of {lab.shipments}", lab.median_seconds),
            ("90th percentile", lab.p90_seconds),
        ):
            lab_rows.append(
                Row(
                    f"{lab.lab_code}: {what}",
                    Decimal(round(seconds / 3600, 1)).quantize(Decimal("0.1")),
                    text=_hours(seconds),
                    href=_list("labs_lab", code__exact=lab.lab_code),
                )
            )
    try:
        depths: dict[str, int] | None = queue_depths()
    except Exception:  # the page shows the rest; the broker's failure is logged
        logger.warning("Queue depths not read for the overview", exc_info=True)
        depths = None
    return Overview(
        open_orders=row_chart(
            slug="open-orders", title="Orders in progress now, by stage and step", rows=open_rows
        ),
        ended_orders=row_chart(
            slug="ended-orders", title="Orders ended, by stage", rows=ended_rows
        ),
        attention=row_chart(
            slug="attention",
            title="Orders needing attention, by cause",
            rows=attention_rows,
            label_width=250,
        ),
        completed=hourly(
            "completed-hourly",
            f"Orders completed an hour, last {HOURS} hours",
            lambda hour: hour.complete,
        ),
        failed=hourly(
            "failed-hourly",
            f"Orders stopped at Failed an hour, last {HOURS} hours",
            lambda hour: hour.failed,
        ),
        callbacks=row_chart(
            slug="callbacks-failing",
            title="Callbacks failing now (waiting for a retry), by merchant",
            rows=[
                Row(
                    f"{found.merchant} ({found.environment})",
                    Decimal(found.events),
                    href=_list(
                        "webhooks_callbackevent",
                        state__exact="Pending",
                        attempts__gte=1,
                        environment__id__exact=found.environment_id,
                    ),
                )
                for found in callbacks_failing()
            ],
        ),
        lab_times=row_chart(
            slug="lab-times",
            title=f"Time from submission to shipment by lab, last {LAB_TIMES_DAYS} days (hours)",
            rows=lab_rows,
            places=1,
        ),
        queues=None
        if depths is None
        else row_chart(
            slug="queues",
            title="Messages waiting in each queue",
            rows=[Row(name, Decimal(depth)) for name, depth in depths.items()],
        ),
    )
