"""Leases, not long claims, with real workers (PostgreSQL, Redis, Celery processes as deployed).

Work a killed worker held is running again within about a minute with the project's own lease
(``PIPELINE_CLAIM_SECONDS``' default, not shortened here): the lease is short and a
heartbeat renews it while the work runs, so a long download keeps its claim however long it
lasts. A lab submission whose answer a killed worker never heard is looked up at the lab and
adopted, not made again.
"""

import collections
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from labs.models import LabProduct
from orders.models import Asset, Order, PipelineStep, Shipment, Stage
from tests.support.orders import TYPE, order_body, order_create_via_api, pk
from tests.support.servers import Receiver, SlowAssets, SlowHost
from tests.support.siteflow import SiteflowServer, lab_at_site, site_running
from tests.support.worker import (
    Worker,
    needs_worker,
    purge_queues,
    start_queue_workers,
    wait_for,
    worker_environment,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,  # its bounds are minutes; it kills its own workers only
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue"),
    needs_worker,
]
ORDERS = 6
TOKEN, SECRET = "token-leases", "secret-leases"
# The bound: every order Complete within two minutes of the restart.
AFTER_RESTART_SECONDS = 120


def test_the_default_lease_is_short_and_renewed_not_a_download_deadline() -> None:
    """What the deployment runs with unless told otherwise: a claim of well under a minute."""
    assert 20 <= settings.PIPELINE_CLAIM_SECONDS <= 45
    assert settings.PIPELINE_CLAIM_SECONDS < settings.ASSET_DOWNLOAD_DEADLINE_SECONDS
    assert "PIPELINE_CLAIM_SECONDS" not in worker_environment(Path("/tmp"), "http://x")


@pytest.fixture
def site(settings: Any) -> Iterator[SiteflowServer]:
    with site_running(settings, token=TOKEN, secret=SECRET) as server:
        yield server


class Shipper:
    """Ships at the site every order it has held a moment, as a print site does, until
    stopped."""

    def __init__(self, site: SiteflowServer) -> None:
        self.site = site
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stopped.wait(0.5):
            for source_id in self.site.printready(older_than=1.0):
                self.site.ship(
                    source_id,
                    tracking_number=f"TRK-{source_id}",
                    tracking_url=f"https://track.example/{source_id}",
                    carrier_name="Royal Mail",
                    carrier_service="Tracked 48",
                    shipped_at="2026-03-02T09:30:00Z",
                )

    def __enter__(self) -> "Shipper":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)


@pytest.mark.usefixtures("workers_base_url")
def test_orders_held_by_killed_workers_complete_within_two_minutes_each_submitted_once(
    live_server: Any,
    live_api: APIClient,
    httpserver: HTTPServer,
    receiver: Receiver,
    site: SiteflowServer,
    tmp_path: Path,
) -> None:
    lab_at_site(site, "gb1")
    LabProduct.objects.filter(lab__code="gb1", product__sku="GLOBAL-PHO-4X6").update(
        lab_sku="PHOTO-4X6"
    )
    # The site stores each submission and answers it seconds later: a worker killed meanwhile
    # never hears that its lab order exists.
    site.answer_delays["submit"] = 4.0
    assets = SlowAssets()
    for n in range(ORDERS):
        httpserver.expect_request(f"/photo-{n}.jpg").respond_with_handler(assets.handle)
    callback = httpserver.url_for("/callbacks")
    # The site's polls and the lab's busy retries shortened, as in test_pipeline_noisy_neighbours
    # (not the lease): a place in the lab's calls taken by the killed labs worker stays taken
    # until it frees itself, and each order that finds none would wait 15 s before asking again.
    workers = start_queue_workers(
        tmp_path,
        live_server.url,
        SITEFLOW_POLL_BASE_SECONDS="0.5",
        SITEFLOW_POLL_MAX_SECONDS="1",
        LAB_BUSY_RETRY_SECONDS="1",
    )
    try:
        with Shipper(site):
            order_ids = [
                order_create_via_api(
                    live_api,
                    order_body(
                        callbackUrl=callback,
                        items=[
                            {
                                "sku": "GLOBAL-PHO-4X6",
                                "copies": 1 + n,
                                "assets": [{"url": httpserver.url_for(f"/photo-{n}.jpg")}],
                            }
                        ],
                    ),
                )
                for n in range(ORDERS)
            ]
            # The downloads worker killed while it downloads, and started again.
            wait_for("a download in flight", lambda: assets.in_flight > 0, workers)
            workers["downloads"].kill()
            held_by_downloads = Order.objects.filter(
                pipeline_step=PipelineStep.DOWNLOAD, claim_token__isnull=False
            ).count()
            workers["downloads"].start()
            # The labs worker, which submits, killed while a submission's answer is on its
            # way, and the images worker (with beat) with it.
            wait_for("a submission in flight", lambda: site.in_flight["submit"] > 0, workers)
            workers["labs"].kill()
            workers["images"].kill()
            intended = set(
                Shipment.objects.filter(lab_operation="submit", submitted_at=None).values_list(
                    "id", flat=True
                )
            )
            workers["labs"].start()
            workers["images"].start()
            restarted = time.monotonic()

            wait_for(
                "every order to complete",
                lambda: (
                    Order.objects.filter(
                        id__in=[pk(i) for i in order_ids], stage=Stage.COMPLETE
                    ).count()
                    == ORDERS
                ),
                workers,
                timeout=AFTER_RESTART_SECONDS,
            )
            completed_after = time.monotonic() - restarted
            completes = {f"{i}": f"{TYPE}.status.stage.changed#Complete" for i in order_ids}
            wait_for(
                "every Complete callback",
                lambda: all(completes[i] in receiver.types(i) for i in completes),
                workers,
            )
            time.sleep(2)  # a second delivery of an event would arrive by now
    finally:
        workers.kill()
        purge_queues()

    assert held_by_downloads >= 1 and intended  # both kills caught work in flight
    assert completed_after < AFTER_RESTART_SECONDS
    shipments = list(Shipment.objects.filter(order_id__in=[pk(i) for i in order_ids]))
    assert len(shipments) == ORDERS
    # One submission of each shipment reached the site: the one whose answer was lost was
    # looked up by its shipment id and adopted.
    assert site.submissions == collections.Counter({s.public_id: 1 for s in shipments})
    assert site.lookups >= len(intended)
    for shipment in shipments:
        assert shipment.status == "Shipped"
        assert shipment.lab_order_reference == site.order(shipment.public_id).id
        assert (shipment.lab_operation, shipment.lab_operation_since) == ("", None)
    # Each Complete callback delivered once, and no event twice.
    delivered = collections.Counter(
        (event["subject"], event["type"]) for event in receiver.events()
    )
    for order_id in order_ids:
        assert delivered[(order_id, f"{TYPE}.status.stage.changed#Complete")] == 1
    assert all(count == 1 for count in delivered.values()), delivered
    ids = [json.loads(body)["id"] for _, body in receiver.deliveries]
    assert len(ids) == len(set(ids))
    assert set(
        Asset.objects.filter(item__order_id__in=[pk(i) for i in order_ids]).values_list(
            "download_attempts", flat=True
        )
    ) == {1}


@pytest.mark.usefixtures("workers_base_url")
def test_a_long_single_download_keeps_its_claim_past_several_leases(
    live_server: Any, sandbox_api: APIClient, tmp_path: Path
) -> None:
    """A 3-second lease (renewed every second) and a download of 12 seconds at a steady pace,
    with two download workers and the sweeper every half second: nobody takes the order over
    (one request to the host, one attempt)."""
    host = SlowHost(seconds=12)
    env = worker_environment(
        tmp_path,
        live_server.url,
        PIPELINE_CLAIM_SECONDS="3",
        PIPELINE_SWEEP_SECONDS="0.5",
        ASSET_DOWNLOAD_DEADLINE_SECONDS="60",
        SLOW_DOWNLOAD_MIN_BYTES_PER_SECOND="1",  # steady, only long: never the slow lane
    )
    workers = start_queue_workers(
        tmp_path,
        live_server.url,
        download_threads=2,
        PIPELINE_CLAIM_SECONDS="3",
        PIPELINE_SWEEP_SECONDS="0.5",
        ASSET_DOWNLOAD_DEADLINE_SECONDS="60",
        SLOW_DOWNLOAD_MIN_BYTES_PER_SECOND="1",  # steady, only long: never the slow lane
    )
    second = Worker(env, tmp_path, ("downloads",), "threads", 2, beat=False, name="second")
    second.start()
    try:
        wait_for("the second downloads worker", second.ready, second)
        order_id = order_create_via_api(
            sandbox_api,
            order_body(
                items=[
                    {
                        "sku": "GLOBAL-PHO-4X6",
                        "copies": 1,
                        "assets": [{"url": host.url("/long.jpg")}],
                    }
                ]
            ),
        )
        wait_for(
            "the download to end",
            lambda: Order.objects.filter(id=pk(order_id), download_assets="Complete").exists(),
            workers,
            timeout=40,
        )
    finally:
        workers.kill()
        second.kill()
        host.stop()
        purge_queues()

    assert host.served == collections.Counter({"/long.jpg": 1})
    asset = Asset.objects.get(item__order_id=pk(order_id))
    assert (asset.status, asset.download_attempts) == ("Complete", 1)
    logs = workers.log_tail(2000) + second.log_tail(2000)
    assert "claim lost" not in logs
