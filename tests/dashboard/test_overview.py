"""The overview's charts: orders and spend a day over the last 30 days and the orders needing
attention, drawn on the server as SVG with their figures as a table."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from merchants.models import Environment, PauseMode
from merchants.services import CreatedMerchant
from orders.models import Charge, Order
from tests.support.dashboard import signed_in_client
from tests.support.documents import document_rewritten
from tests.support.orders import order_allocated, order_create_via_api, order_via_api

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]


def figures(html: str, slug: str) -> dict[str, str]:
    """The chart's table: day -> value."""
    chart = html.split(f'id="{slug}"', 1)[1].split("</figure>", 1)[0]
    return dict(re.findall(r'<th scope="row">([^<]+)</th><td>([^<]+)</td>', chart))


def bar_labels(html: str, slug: str) -> list[str]:
    chart = html.split(f'id="{slug}"', 1)[1].split("</svg>", 1)[0]
    return re.findall(r'<rect class="bar[^"]*"[^>]*><title>([^<]+)</title>', chart)


def placed_days_ago(order: Order, days: int) -> None:
    when = timezone.now() - timedelta(days=days)
    Order.objects.filter(id=order.id).update(created=when)
    Charge.objects.filter(order=order).update(created=when)
    document_rewritten(order)


def test_the_charts_show_each_days_orders_and_spend_of_the_environment(
    merchant: CreatedMerchant, live_api: APIClient, sandbox_api: APIClient
) -> None:
    today = timezone.now().date()
    two_today = [order_allocated(live_api), order_allocated(live_api)]
    three_days_ago = order_allocated(live_api)
    placed_days_ago(three_days_ago, 3)
    too_old = order_allocated(live_api)
    placed_days_ago(too_old, 30)  # the 31st day back: outside the window
    order_allocated(sandbox_api)  # another environment
    owner = signed_in_client(merchant.merchant)
    owner.post("/dashboard/environment", {"kind": "Live"})

    html = owner.get("/dashboard/").content.decode()

    def spend(*orders: Order) -> str:
        charges = Charge.objects.filter(order__in=orders)
        return f"{sum(c.total_cost + c.total_tax for c in charges):.2f} GBP"

    orders = figures(html, "orders-chart")
    assert len(orders) == 30
    assert list(orders)[::29] == [f"{today - timedelta(days=29):%Y-%m-%d}", f"{today:%Y-%m-%d}"]
    assert orders[f"{today:%Y-%m-%d}"] == "2"
    assert orders[f"{today - timedelta(days=3):%Y-%m-%d}"] == "1"
    assert sum(int(v) for v in orders.values()) == 3
    spent = figures(html, "spend-chart")
    assert spent[f"{today:%Y-%m-%d}"] == spend(*two_today) != "0.00 GBP"
    assert spent[f"{today - timedelta(days=3):%Y-%m-%d}"] == spend(three_days_ago)
    assert spent[f"{today - timedelta(days=1):%Y-%m-%d}"] == "0.00 GBP"
    labels = bar_labels(html, "orders-chart")
    assert len(labels) == 30 and labels[-1] == f"{today:%d %b}: 2"
    # The tallest bar reaches the top of the scale (2 orders: the scale's top is 2).
    chart = html.split('id="orders-chart"', 1)[1].split("</svg>", 1)[0]
    heights = re.findall(r'class="bar" x="[^"]+" y="[^"]+" width="[^"]+" height="([^"]+)"', chart)
    assert float(heights[29]) == 180.0 and float(heights[26]) == 90.0 and float(heights[0]) == 0
    assert 'role="img"' in html and '<desc id="orders-chart-desc">30 bars' in html
    assert "3 in all, at most 2 in a day." in html


def test_the_attention_chart_counts_orders_by_why_they_need_the_merchant(
    card: CreatedMerchant, live_api: APIClient, sandbox_api: APIClient
) -> None:
    order_create_via_api(live_api)
    order_create_via_api(live_api)  # two wait for payment
    Environment.objects.filter(merchant=card.merchant, kind="Live").update(
        pause_mode=PauseMode.INDEFINITE
    )
    order_create_via_api(live_api, outcome="OnHold")
    order_via_api(sandbox_api)  # Sandbox: not counted in Live
    owner = signed_in_client(card.merchant)
    owner.post("/dashboard/environment", {"kind": "Live"})

    html = owner.get("/dashboard/").content.decode()

    link = r'<li><a href="/dashboard/orders\?([^"]+)">([^<]+)</a>: <strong>(\d+)'
    listed = re.findall(link, html)
    assert listed == [
        ("status=awaitingPayment", "Waiting for payment", "2"),
        ("status=draft", "On hold", "1"),
        ("attention=1", "With a problem to look at", "0"),
        ("attention=1", "A step failed", "0"),
    ]
    assert "Waiting for payment: 2; On hold: 1; With a problem to look at: 0" in html


def test_the_overview_reads_as_many_queries_for_many_orders_as_for_one(
    merchant: CreatedMerchant, live_api: APIClient
) -> None:
    owner = signed_in_client(merchant.merchant)
    owner.post("/dashboard/environment", {"kind": "Live"})
    order_allocated(live_api)
    owner.get("/dashboard/")  # the session and catalogue read once
    with CaptureQueriesContext(connection) as one:
        assert owner.get("/dashboard/").status_code == 200
    for _ in range(4):
        order_allocated(live_api)

    with CaptureQueriesContext(connection) as five:
        html = owner.get("/dashboard/").content.decode()

    assert len(five.captured_queries) == len(one.captured_queries)
    assert sum(int(v) for v in figures(html, "orders-chart").values()) == 5
