"""Orders, shipments and callbacks in known states for the admin's overview, and the figures
its charts must show for them (``overview_made``); the tables of those charts read from its
HTML (``overview_tables``)."""

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from html import unescape

from orders.issues import ITEM_UNAVAILABLE, LAB_CANCELLED, LAB_ERROR
from orders.models import DetailState, Order, PipelineStep, Stage
from tests.merchants.factories import MerchantFactory
from tests.orders.factories import OrderFactory, OrderIssueFactory, ShipmentFactory
from tests.support.documents import document_rewritten
from tests.webhooks.factories import CallbackEventFactory
from webhooks.models import CallbackState

Rows = list[tuple[str, str]]


@dataclass(frozen=True)
class Made:
    """What the overview must show: each chart's rows (label, value) by its id, the hourly
    charts as their non-zero rows only."""

    rows: dict[str, Rows]
    completed: dict[str, str]
    failed: dict[str, str]


def _ended(order: Order, at: datetime) -> None:
    Order.objects.filter(id=order.id).update(last_updated=at)
    document_rewritten(order)


def _hour(at: datetime) -> str:
    return f"{at:%Y-%m-%d %H}:00"


def overview_made(now: datetime) -> Made:
    """Two merchants' orders at known steps (two downloading, one held, one waiting at
    allocation for an unavailable item, one failed at its download and one its lab failed,
    three complete (one of them 50 hours ago), one cancelled after its lab cancelled), four
    shipments shipped within the last 7 days from two labs (one more 8 days ago) and callback
    events failing for each merchant."""
    acme = MerchantFactory.create(name="Acme Prints")
    blue = MerchantFactory.create(name="Blue Frames")
    acme_sandbox = acme.environments.get(kind="Sandbox")
    blue_live = blue.environments.get(kind="Live")

    OrderFactory.create_batch(2, environment=acme_sandbox)
    OrderFactory.create(environment=acme_sandbox, on_hold=True)
    waiting = OrderFactory.create(environment=blue_live, allocating=True, due_at=None)
    OrderIssueFactory.create(order=waiting, error_code=ITEM_UNAVAILABLE)
    failed_now = OrderFactory.create(environment=acme_sandbox, failed=True)
    _ended(failed_now, now)
    lab_failed = OrderFactory.create(
        environment=blue_live,
        producing=True,
        pipeline_step=PipelineStep.FAILED,
        in_production=DetailState.ERROR,
        due_at=None,
    )
    OrderIssueFactory.create(order=lab_failed, error_code=LAB_ERROR)
    _ended(lab_failed, now - timedelta(hours=5))
    complete = OrderFactory.create_batch(2, environment=blue_live, complete=True)
    for order in complete:
        _ended(order, now - timedelta(hours=3))
    long_ago = OrderFactory.create(environment=blue_live, complete=True)
    _ended(long_ago, now - timedelta(hours=50))
    cancelled = OrderFactory.create(environment=acme_sandbox, cancelled=True)
    OrderIssueFactory.create(order=cancelled, error_code=LAB_CANCELLED)

    for order, hours in ((complete[0], 10), (complete[1], 20), (long_ago, 30)):
        ShipmentFactory.create(
            order=order,
            shipped=True,
            submitted_at=now - timedelta(days=1, hours=hours),
            dispatch_date=now - timedelta(days=1),
        )
    ShipmentFactory.create(
        order=complete[0],
        shipped=True,
        lab_code="us1",
        submitted_at=now - timedelta(hours=6),
        dispatch_date=now - timedelta(hours=2),
    )
    ShipmentFactory.create(
        order=long_ago,
        shipped=True,
        submitted_at=now - timedelta(days=8, hours=100),
        dispatch_date=now - timedelta(days=8),
    )

    CallbackEventFactory.create_batch(2, environment=acme_sandbox, attempts=1)
    CallbackEventFactory.create(environment=acme_sandbox, attempts=0)  # not tried yet: not failing
    CallbackEventFactory.create(environment=blue_live, attempts=3)
    CallbackEventFactory.create(environment=blue_live, attempts=9, state=CallbackState.FAILED)

    return Made(
        rows={
            "open-orders": [
                (f"{Stage.ON_HOLD} · Held", "1"),
                ("AwaitingPayment", "0"),
                (f"{Stage.IN_PROGRESS} · Download", "2"),
                (f"{Stage.IN_PROGRESS} · Allocate", "1"),
                (f"{Stage.IN_PROGRESS} · Prepare", "0"),
                (f"{Stage.IN_PROGRESS} · Submit", "0"),
                (f"{Stage.IN_PROGRESS} · Production", "0"),
                (f"{Stage.IN_PROGRESS} · Failed", "2"),
            ],
            "ended-orders": [
                (f"{Stage.COMPLETE} · Done", "3"),
                ("Cancelled", "1"),
            ],
            "attention": [
                ("Any of these", "3"),
                ("Has an issue", "3"),
                ("A step in Error", "2"),
                ("Lab cancelled, failed or refused", "2"),
                ("Waiting at allocation", "1"),
            ],
            "callbacks-failing": [("Acme Prints (Sandbox)", "2"), ("Blue Frames (Live)", "1")],
            "lab-times": [
                ("gb1: median of 3", "20.0 h"),
                ("gb1: 90th percentile", "28.0 h"),
                ("us1: median of 1", "4.0 h"),
                ("us1: 90th percentile", "4.0 h"),
            ],
        },
        completed={_hour(now - timedelta(hours=3)): "2"},
        failed={_hour(now): "1", _hour(now - timedelta(hours=5)): "1"},
    )


def overview_tables(html: str) -> dict[str, Rows]:
    """Each chart's table of the overview page, by the chart's id: its rows (label, value)."""
    tables = {}
    for slug, figure in re.findall(
        r'<figure class="chart" id="([^"]+)">(.*?)</figure>', html, re.S
    ):
        rows = re.findall(
            r'<tr><th scope="row">(?:<a href="[^"]*">)?([^<]+)(?:</a>)?</th><td>([^<]+)</td></tr>',
            figure,
        )
        tables[slug] = [(unescape(label), unescape(value)) for label, value in rows]
    return tables


def overview_links(html: str, slug: str) -> dict[str, str]:
    """The links of a chart's table: label -> the address it links to."""
    figure = html.split(f'<figure class="chart" id="{slug}">', 1)[1].split("</figure>", 1)[0]
    return {
        unescape(label): unescape(href)
        for href, label in re.findall(r'<th scope="row"><a href="([^"]+)">([^<]+)</a>', figure)
    }
