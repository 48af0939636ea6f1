"""The admin's first page is the service at a glance: orders per stage and step, needing
attention by cause (each a link to the order list filtered by it), completed and failed per
hour, callbacks failing by merchant, each lab's time to ship, queue depths; drawn as SVG on the
server, with their figures as tables; a handful of queries whatever the number of orders."""

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from common.db import durations_percentiles
from config.celery_app import app as celery_app
from orders.figures import ATTENTION_CAUSES, queue_depths
from orders.models import Shipment
from staff.services import staff_user_save
from tests.orders.factories import OrderFactory
from tests.support.overview import overview_links, overview_made, overview_tables
from tests.support.staff import signed_in, staff_client

pytestmark = pytest.mark.django_db


def hourly(tables: dict[str, list[tuple[str, str]]], slug: str) -> dict[str, str]:
    rows = dict(tables[slug])
    assert len(rows) == 48
    return {hour: count for hour, count in rows.items() if count != "0"}


def test_an_operator_sees_the_figures_of_the_orders_as_they_stand() -> None:
    made = overview_made(timezone.now())
    operator = staff_client("olga")

    response = operator.get("/admin/")

    assert response.status_code == 200
    html = response.content.decode()
    tables = overview_tables(html)
    for slug, rows in made.rows.items():
        assert tables[slug] == rows, slug
    assert hourly(tables, "completed-hourly") == made.completed
    assert hourly(tables, "failed-hourly") == made.failed
    assert tables["queues"] == [(name, str(depth)) for name, depth in queue_depths().items()]
    assert [name for name, _ in tables["queues"]] == [
        "downloads",
        "images",
        "labs",
        "callbacks",
        "sweeps",
    ]
    # Drawn: an SVG image a chart, titled and described, a bar a row.
    assert html.count('<svg viewBox="0 0 640') == len(tables)
    assert '<desc id="attention-desc">Any of these: 3; Has an issue: 3;' in html
    assert "<title>Waiting at allocation: 1</title>" in html
    assert "Site administration" in html  # the models and tools follow


def test_each_cause_links_to_the_order_list_filtered_by_it_showing_as_many_orders() -> None:
    overview_made(timezone.now())
    operator = staff_client("olga")
    html = operator.get("/admin/").content.decode()
    counts = dict(overview_tables(html)["attention"])

    links = overview_links(html, "attention")

    assert list(links) == [words for _, words in ATTENTION_CAUSES]
    for (cause, words), href in zip(ATTENTION_CAUSES, links.values(), strict=True):
        assert href == f"/admin/orders/order/?attention={cause}"
        listed = operator.get(href)
        assert listed.status_code == 200
        assert listed.context["cl"].result_count == int(counts[words]), cause


def test_the_other_links_list_what_their_rows_count() -> None:
    overview_made(timezone.now())
    operator = staff_client("olga")
    html = operator.get("/admin/").content.decode()
    tables = overview_tables(html)

    for slug in ("open-orders", "ended-orders", "callbacks-failing"):
        for label, href in overview_links(html, slug).items():
            listed = operator.get(href)
            assert listed.status_code == 200, href
            assert listed.context["cl"].result_count == int(dict(tables[slug])[label]), href
    labs = overview_links(html, "lab-times")
    assert labs["gb1: median of 3"] == "/admin/labs/lab/?code__exact=gb1"


def test_the_page_reads_as_many_queries_for_many_orders_as_for_a_few() -> None:
    operator = staff_client("olga")
    overview_made(timezone.now())
    operator.get("/admin/")
    with CaptureQueriesContext(connection) as few:
        assert operator.get("/admin/").status_code == 200
    overview_made(timezone.now() - timedelta(hours=7))
    OrderFactory.create_batch(20)

    with CaptureQueriesContext(connection) as many:
        assert operator.get("/admin/").status_code == 200

    overview = [q["sql"] for q in many.captured_queries if "orders_" in q["sql"]]
    assert len(overview) == 5  # stage and step, attention, hours, labs, callbacks
    # and the session, the user, their permissions (two) and the recent actions
    assert len(many.captured_queries) == len(few.captured_queries) == 10


def test_staff_who_may_not_view_orders_see_no_overview() -> None:
    user, _ = staff_user_save(username="nobody")
    user.groups.clear()

    html = signed_in(user).get("/admin/").content.decode()

    assert 'id="overview"' not in html


def test_without_the_broker_the_page_says_so_and_shows_the_rest() -> None:
    overview_made(timezone.now())
    original = celery_app.conf.broker_url
    celery_app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        html = staff_client("olga").get("/admin/").content.decode()
    finally:
        celery_app.conf.broker_url = original
    assert "The broker did not answer." in html
    assert dict(overview_tables(html)["attention"])["Any of these"] == "3"


def test_percentiles_are_the_same_on_postgresql_and_computed_alike(monkeypatch: Any) -> None:
    made_at = timezone.now()
    overview_made(made_at)
    shipped = Shipment.objects.filter(
        dispatch_date__gte=made_at - timedelta(days=7), submitted_at__isnull=False
    )
    arguments: dict[str, Any] = dict(
        group="lab_code", start="submitted_at", end="dispatch_date", fractions=(0.5, 0.9)
    )

    on_postgresql = durations_percentiles(shipped, **arguments)
    monkeypatch.setattr("common.db._postgresql", lambda: False)
    computed = durations_percentiles(shipped, **arguments)

    assert (
        on_postgresql
        == computed
        == {
            "gb1": (3, [20 * 3600.0, 28 * 3600.0]),
            "us1": (1, [4 * 3600.0, 4 * 3600.0]),
        }
    )
