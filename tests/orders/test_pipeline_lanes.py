"""The bounded lanes of slow outbound work (``orders.pipeline.lanes``), run in the test's
process: a download that falls behind its pace, the slow lane's places, and one lab's calls.

``test_pipeline_noisy_neighbours.py`` shows what they are for with real workers.
"""

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from common.concurrency import places_release, places_take
from labs.models import LabProduct
from orders.models import Asset, AssetStatus, Order, OrderIssue, PipelineStep, Shipment
from orders.pipeline.lanes import asset_host, slow_host_known, slow_host_remember
from orders.pipeline.state_machine import order_advance
from tests.support.images import jpeg_bytes
from tests.support.orders import order_body, order_create_via_api, pk
from tests.support.pipeline import advance_to
from tests.support.servers import DripHost, serve
from tests.support.siteflow import SiteflowServer, lab_at_site, site_running

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalogue")]


@pytest.fixture
def drip(settings: Any) -> Iterator[DripHost]:
    settings.ALLOW_PRIVATE_URLS = True
    with DripHost(interval=0.1) as host:  # ten bytes a second
        yield host


def dripping_order(api: APIClient, drip: DripHost, name: str) -> str:
    items = [{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": drip.url(f"/{name}")}]}]
    return order_create_via_api(api, items=items)


def test_a_download_that_falls_behind_stops_counts_no_attempt_and_goes_to_the_slow_lane(
    sandbox_api: APIClient, drip: DripHost, settings: Any
) -> None:
    settings.SLOW_DOWNLOAD_CHECK_SECONDS = 0.5
    settings.SLOW_DOWNLOAD_MIN_BYTES_PER_SECOND = 100
    order_id = dripping_order(sandbox_api, drip, "behind.jpg")
    host = asset_host(drip.url("/behind.jpg"))
    assert not slow_host_known(host)
    started = time.monotonic()

    due = order_advance(order_id=pk(order_id), step=PipelineStep.DOWNLOAD)

    assert time.monotonic() - started < 5.0  # the deadline is ten seconds
    asset = Asset.objects.get(item__order_id=pk(order_id))
    assert (asset.status, asset.download_attempts) == (AssetStatus.IN_PROGRESS, 0)
    assert asset.last_error.startswith(f"Reading {drip.url('/behind.jpg')} was too slow: ")
    assert asset.next_attempt_at is not None and asset.next_attempt_at <= timezone.now()
    order = Order.objects.get(id=pk(order_id))
    assert (order.pipeline_step, order.claimed_until) == (PipelineStep.DOWNLOAD, None)
    assert due is not None and due <= timezone.now()  # tried again at once, in the slow lane
    assert not OrderIssue.objects.filter(order_id=pk(order_id)).exists()
    assert slow_host_known(host)


def test_a_download_from_a_slow_host_waits_for_a_place_without_connecting_then_runs_unpaced(
    sandbox_api: APIClient, drip: DripHost, settings: Any
) -> None:
    settings.SLOW_DOWNLOAD_CHECK_SECONDS = 0.5
    settings.SLOW_DOWNLOAD_MIN_BYTES_PER_SECOND = 100
    settings.ASSET_DOWNLOAD_DEADLINE_SECONDS = 1.5
    settings.SLOW_DOWNLOADS = 1
    settings.DOWNLOAD_DEFER_SECONDS = 30
    order_id = dripping_order(sandbox_api, drip, "lane.jpg")
    host = asset_host(drip.url("/lane.jpg"))
    slow_host_remember(host)
    taken = places_take({"slow-downloads": 1}, seconds=60)  # another download holds the lane
    assert taken is not None and taken.keys
    try:
        before = timezone.now()
        order_advance(order_id=pk(order_id), step=PipelineStep.DOWNLOAD)
    finally:
        places_release(taken)

    asset = Asset.objects.get(item__order_id=pk(order_id))
    assert drip.served == {}  # never connected: no thread held
    assert asset.download_attempts == 0
    assert asset.last_error == (
        f"The host {host} sends slowly and every place for slow downloads is taken: the "
        "download waits for one."
    )
    assert asset.next_attempt_at is not None
    assert timedelta(seconds=29) < asset.next_attempt_at - before < timedelta(seconds=32)

    # With the place free, it runs in the lane without a pace: past the pace check, to its
    # deadline, and that attempt counts.
    Asset.objects.filter(id=asset.id).update(next_attempt_at=timezone.now())
    Order.objects.filter(id=pk(order_id)).update(due_at=timezone.now())
    order_advance(order_id=pk(order_id), step=PipelineStep.DOWNLOAD)

    asset.refresh_from_db()
    assert drip.served["/lane.jpg"] == 1
    assert asset.download_attempts == 1
    assert "did not finish within 1.5 seconds" in asset.last_error


def test_a_step_that_finds_its_labs_calls_taken_does_not_call_it_and_asks_again_soon(
    live_api: APIClient, httpserver: HTTPServer, settings: Any, live_server: Any
) -> None:
    settings.LIVE_BASE_URL = live_server.url
    settings.LAB_CALLS_PER_LAB = 2
    settings.LAB_BUSY_RETRY_SECONDS = 15
    with site_running(settings, token="token-gb1", secret="lanes-secret") as site:
        lab_at_site(site, "gb1")
        LabProduct.objects.filter(lab__code="gb1", product__sku="GLOBAL-PHO-4X6").update(
            lab_sku="PHOTO-4X6-GLOSS"
        )
        url = serve(httpserver, "/busy.jpg", jpeg_bytes(), "image/jpeg")
        body = order_body(items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}])
        order_id = order_create_via_api(live_api, **body)
        advance_to(order_id, PipelineStep.SUBMIT)
        taken = [places_take({"lab-calls:gb1": 2}, seconds=60) for _ in range(2)]
        try:
            before = timezone.now()
            order_advance(order_id=pk(order_id), step=PipelineStep.SUBMIT)
        finally:
            for place in taken:
                assert place is not None
                places_release(place)
        received_while_busy = list(site.received)

        order = Order.objects.get(id=pk(order_id))
        shipment = Shipment.objects.get(order_id=pk(order_id))
        assert received_while_busy == []
        assert (order.pipeline_step, shipment.submit_attempts) == (PipelineStep.SUBMIT, 0)
        assert order.due_at is not None
        assert timedelta(seconds=14) < order.due_at - before < timedelta(seconds=17)
        assert not OrderIssue.objects.filter(order_id=pk(order_id)).exists()

        # With a place free, the same step submits.
        Order.objects.filter(id=pk(order_id)).update(due_at=timezone.now())
        order_advance(order_id=pk(order_id), step=PipelineStep.SUBMIT)

        assert Order.objects.get(id=pk(order_id)).pipeline_step == PipelineStep.PRODUCTION
        assert _siteflow_submissions(site) == [shipment.public_id]


def _siteflow_submissions(site: SiteflowServer) -> list[str]:
    return [r.body["orderData"]["sourceOrderId"] for r in site.received if r.method == "POST"]
