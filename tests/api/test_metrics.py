"""GET /metrics (Prometheus): for the monitoring system's bearer token (or, without one, the
allowed networks, the client's address read through NUM_PROXIES) and staff only; cheap and
bounded; requests by route; while an order runs on a real worker, its step and the queues
move."""

import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import resolve
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from common.concurrency import places_release, places_take
from common.metrics import FIGURES_KEY
from orders.models import Order, PipelineStep
from tests.support.orders import photo_order, pk
from tests.support.worker import CAN_RUN_WORKER, NO_WORKER, purge_queues, start_worker, wait_for


def scrape(client: Client | None = None) -> str:
    response = (client or Client()).get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    return response.content.decode()


def value(text: str, name: str, **labels: str) -> float:
    """The sample ``name{labels}`` of a scrape (labels in any order), 0 when absent."""
    for line in text.splitlines():
        match = re.match(r"^([a-z_]+)(?:\{(.*)\})? (\S+)$", line)
        if not match or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(match.group(3))
    return 0.0


TOKEN = "metrics-token-0123456789abcdef"
# Behind nginx (NUM_PROXIES=1) every request comes from loopback; nginx appends the address it
# saw to X-Forwarded-For.
BEHIND_NGINX: dict[str, Any] = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "203.0.113.7"}


@pytest.fixture(autouse=True)
def figures_forgotten() -> None:
    cache.delete(FIGURES_KEY)


def assert_not_found(response: Any) -> None:
    assert response.status_code == 404
    assert response.json()["outcome"] == "EndpointDoesNotExist"
    assert b"printapi_" not in response.content


@pytest.mark.django_db
def test_with_a_token_a_scrape_through_the_proxy_needs_it(settings: Any, staff_user: Any) -> None:
    settings.METRICS_TOKEN = TOKEN
    settings.NUM_PROXIES = 1

    assert_not_found(Client(**BEHIND_NGINX).get("/metrics"))
    assert_not_found(Client(REMOTE_ADDR="127.0.0.1").get("/metrics"))  # loopback is not enough
    wrong = Client(**BEHIND_NGINX, HTTP_AUTHORIZATION=f"Bearer {TOKEN[:-1]}x")
    assert_not_found(wrong.get("/metrics"))
    assert_not_found(Client(**BEHIND_NGINX, HTTP_AUTHORIZATION=TOKEN).get("/metrics"))

    scraper = Client(**BEHIND_NGINX, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert "printapi_http_requests_total" in scrape(scraper)
    signed_in = Client(**BEHIND_NGINX)
    signed_in.force_login(staff_user)
    assert "printapi_http_requests_total" in scrape(signed_in)


@pytest.mark.django_db
def test_without_a_token_the_networks_see_the_address_nginx_saw(settings: Any) -> None:
    settings.METRICS_TOKEN = ""
    settings.NUM_PROXIES = 1
    settings.METRICS_ALLOWED_NETWORKS = ["127.0.0.1/32", "10.0.0.0/8"]

    assert_not_found(Client(**BEHIND_NGINX).get("/metrics"))
    # what a client writes itself stays left of what nginx appended
    spoofed = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="10.1.2.3, 203.0.113.7")
    assert_not_found(spoofed.get("/metrics"))
    assert scrape(Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="10.1.2.3"))
    settings.NUM_PROXIES = 0
    assert_not_found(
        Client(REMOTE_ADDR="192.0.2.9", HTTP_X_FORWARDED_FOR="127.0.0.1").get("/metrics")
    )
    assert scrape(Client(REMOTE_ADDR="10.1.2.3"))


@pytest.mark.django_db
def test_the_figures_are_read_once_every_few_seconds(settings: Any) -> None:
    settings.METRICS_FIGURES_SECONDS = 60
    first_queries = CaptureQueriesContext(connection)
    with first_queries:
        first = scrape()
    with CaptureQueriesContext(connection) as again_queries:
        again = scrape()

    assert len(first_queries.captured_queries) >= 3  # steps, callbacks, lab failures
    assert len(again_queries.captured_queries) == 0
    assert value(again, "printapi_lab_submission_failures_total") == value(
        first, "printapi_lab_submission_failures_total"
    )
    assert "printapi_orders_in_step" in again


@pytest.mark.django_db
def test_scrapes_beyond_the_bound_are_answered_429_at_once(settings: Any) -> None:
    settings.METRICS_CONCURRENT_SCRAPES = 1
    running = places_take({"metrics-scrapes": 1}, seconds=30)
    assert running is not None
    try:
        refused = Client().get("/metrics")
    finally:
        places_release(running)

    assert refused.status_code == 429
    assert refused["Retry-After"] == "1"
    assert refused.json()["outcome"] == "TooManyRequests"
    assert scrape()  # the place given back, the next scrape runs


@pytest.mark.django_db
def test_requests_are_counted_and_timed_by_route_not_by_path(sandbox_api: APIClient) -> None:
    route = resolve("/v4.0/orders/ord_1").route  # the pattern, whatever its spelling
    assert "ord_1" not in route
    before = scrape()
    for order_id in ("ord_1", "ord_2", "ord_3"):
        assert sandbox_api.get(f"/v4.0/orders/{order_id}").status_code == 404
    after = scrape()

    counted = value(after, "printapi_http_requests_total", route=route, method="GET", status="404")
    assert (
        counted
        - value(before, "printapi_http_requests_total", route=route, method="GET", status="404")
        == 3
    )
    timed = value(after, "printapi_http_request_duration_seconds_count", route=route, method="GET")
    assert (
        timed
        - value(before, "printapi_http_request_duration_seconds_count", route=route, method="GET")
        == 3
    )
    assert "ord_1" not in after


@pytest.mark.slow
@pytest.mark.side_by_side
@pytest.mark.skipif(not CAN_RUN_WORKER, reason=NO_WORKER)
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_a_scrape_sees_an_orders_step_and_the_queues_move(
    sandbox_api: APIClient, httpserver: HTTPServer, live_server: Any, settings: Any
) -> None:
    settings.METRICS_FIGURES_SECONDS = 0  # each scrape reads the figures now
    settings.SANDBOX_BASE_URL = live_server.url  # the worker's, as one deployment has one
    purge_queues()
    # Given an order posted while no worker runs: it waits at Download, its task message queued
    order_id = photo_order(sandbox_api, httpserver, "metrics")
    waiting = scrape()
    assert value(waiting, "printapi_orders_in_step", step="Download") == 1
    assert value(waiting, "printapi_queue_messages", queue="downloads") == 1
    assert value(waiting, "printapi_orders_in_step", step="Production") == 0

    # When a worker takes it through the pipeline
    with tempfile.TemporaryDirectory(prefix="metrics-") as folder:
        worker = start_worker(Path(folder), live_server.url)
        try:
            done = Order.objects.filter(
                id=pk(order_id), pipeline_step__in=[PipelineStep.PRODUCTION, PipelineStep.DONE]
            )
            wait_for(f"{order_id} at the lab", done.exists, worker)
            moved = scrape()
        finally:
            worker.kill()
            purge_queues()

    # Then the scrape shows it left Download and the downloads queue emptied
    assert value(moved, "printapi_orders_in_step", step="Download") == 0
    assert value(moved, "printapi_queue_messages", queue="downloads") == 0
    step = Order.objects.get(id=pk(order_id)).pipeline_step
    if step == PipelineStep.PRODUCTION:
        assert value(moved, "printapi_orders_in_step", step="Production") == 1
    assert value(moved, "printapi_lab_submission_failures_total") == 0
