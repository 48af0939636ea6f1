"""GET /metrics (Prometheus): only for staff or allowed networks; requests by route; while an
order runs on a real worker, its step and the queues move."""

import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import resolve
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

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


@pytest.mark.django_db
def test_metrics_answer_allowed_networks_and_staff_only(settings: Any, staff_user: Any) -> None:
    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    refused = Client().get("/metrics")  # the test client's 127.0.0.1 is not in 10.0.0.0/8
    assert refused.status_code == 404
    assert refused.json()["outcome"] == "EndpointDoesNotExist"
    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 200
    signed_in = Client()
    signed_in.force_login(staff_user)
    assert signed_in.get("/metrics").status_code == 200


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
    sandbox_api: APIClient, httpserver: HTTPServer, live_server: Any
) -> None:
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
