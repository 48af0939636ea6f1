"""Noisy neighbours whatever their number: many merchants whose asset hosts drip one byte a
second, and a lab whose Site Flow site hangs, slow another merchant's order, or another lab's
orders, by 1.5 times their time alone at most.

Real workers, one per queue as deployed (README, "Queues and workers"): images (prefork, two
processes, with beat), downloads (four threads, one download per merchant at once: the
deployed sixteen threads and four per merchant, scaled down), labs (four threads), callbacks
(two threads), on Redis and the test database. Each order's time alone is measured in the same
test, just before, so the machine's load is in both. Before the slow lane four merchants with
dripping hosts held every download thread, and before the labs queue a hanging site held every
images process (issue 33, finding 5).
"""

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from labs.models import Lab, LabProduct
from merchants.services import CreatedMerchant
from orders.models import Order, PipelineStep
from tests.merchants.factories import merchant_with_keys
from tests.support.images import jpeg_bytes
from tests.support.orders import order_body, order_create_via_api, pk
from tests.support.servers import DripHost, serve
from tests.support.siteflow import SiteflowServer
from tests.support.worker import (
    CAN_RUN_WORKER,
    NO_WORKER,
    Workers,
    purge_queues,
    start_queue_workers,
    wait_for,
)
from webhooks.models import CallbackEvent, CallbackState

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue", "workers_base_url"),
]
# Another merchant's (or lab's) order within this of its time alone, as the issue asks.
SLOWDOWN = 1.5
TOKEN, SECRET = "token-gb1", "siteflow-secret-value"
# The test's scale: the slow lane takes one of the four download threads, one lab's calls
# two of the four labs threads. A hanging site's call waits SITEFLOW_TIMEOUT_SECONDS (30).
SETTINGS: dict[str, Any] = {
    "DOWNLOADS_PER_MERCHANT": "1",
    "SLOW_DOWNLOAD_CHECK_SECONDS": "1",
    "SLOW_DOWNLOADS": "1",
    "SLOW_DOWNLOADS_PER_HOST": "1",
    "ASSET_DOWNLOAD_DEADLINE_SECONDS": "10",
    "LAB_CALLS_PER_LAB": "2",
    "LAB_BUSY_RETRY_SECONDS": "2",
    "SITEFLOW_POLL_BASE_SECONDS": "0.5",
    "SITEFLOW_POLL_MAX_SECONDS": "1",
}


@pytest.fixture(scope="module")
def workers(django_db_setup: None, django_db_blocker: Any, live_server: Any) -> Iterator[Workers]:
    if not CAN_RUN_WORKER:
        pytest.skip(NO_WORKER)
    with tempfile.TemporaryDirectory(prefix="pipeline-neighbours-") as folder:
        running = start_queue_workers(
            Path(folder), live_server.url, download_threads=4, lab_threads=4, **SETTINGS
        )
        try:
            yield running
        finally:
            with django_db_blocker.unblock():
                running.kill()
            purge_queues()


@pytest.fixture
def drip() -> Iterator[DripHost]:
    with DripHost() as host:
        yield host


@pytest.fixture
def site() -> Iterator[SiteflowServer]:
    server = SiteflowServer(token=TOKEN, secret=SECRET)
    server.start()
    yield server
    server.stop()


def client_of(merchant: CreatedMerchant, *, live: bool = False) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=merchant.live_api_key if live else merchant.sandbox_api_key)
    return client


def photo(url: str, country: str = "GB") -> dict[str, Any]:
    body = order_body(items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}])
    if country == "US":
        body["recipient"]["address"].update(
            countryCode="US", postalOrZipCode="11201", townOrCity="Brooklyn", stateOrCounty="NY"
        )
    return body


def idle(workers: Workers) -> None:
    """Wait until no worker holds an order or has a callback to send: the database is emptied
    after the test, which must not race a worker's transaction."""
    busy = Order.objects.filter(claimed_until__gt=timezone.now())
    pending = CallbackEvent.objects.filter(state=CallbackState.PENDING)
    wait_for("the workers to be idle", lambda: not busy.exists() and not pending.exists(), workers)


def timed_order(
    api: APIClient, httpserver: HTTPServer, workers: Workers, name: str, country: str = "GB"
) -> float:
    """Seconds from posting an order to its Done step (waited for long enough that a run
    without the lanes measures its ratio rather than timing out)."""
    url = serve(httpserver, f"/{name}.jpg", jpeg_bytes(), "image/jpeg")
    started = time.monotonic()
    order_id = order_create_via_api(api, **photo(url, country))
    done = Order.objects.filter(id=pk(order_id), pipeline_step=PipelineStep.DONE)
    wait_for(f"{order_id} to complete", done.exists, workers, timeout=300)
    return time.monotonic() - started


def test_four_merchants_dripping_five_orders_each_slow_another_merchants_order_at_most_1_5x(
    workers: Workers, merchant: CreatedMerchant, httpserver: HTTPServer, drip: DripHost
) -> None:
    acme = client_of(merchant)
    timed_order(acme, httpserver, workers, "warm-up")  # every process has loaded
    alone = sum(timed_order(acme, httpserver, workers, f"alone-{n}") for n in range(2))

    # Four merchants, five orders each, from a host that drips a byte a second: one download
    # per merchant fills the four threads, until each is found slow.
    drippers = [client_of(merchant_with_keys(name=f"Drip {n}")) for n in range(4)]
    dripping = [
        (client, order_create_via_api(client, **photo(drip.url(f"/drip-{m}-{n}.jpg"))))
        for m, client in enumerate(drippers)
        for n in range(5)
    ]
    wait_for("every merchant's first download", lambda: len(drip.served) >= 4, workers)
    time.sleep(3.0)  # past the pace check: the slow ones moved to the slow lane, or not

    noisy = sum(timed_order(acme, httpserver, workers, f"noisy-{n}") for n in range(2))
    ratio = noisy / alone
    in_flight, most, served = drip.in_flight, drip.most_in_flight, sum(drip.served.values())
    for client, order_id in dripping:
        client.post(f"/v4.0/orders/{order_id}/actions/cancel", format="json")
    drip.stop()
    idle(workers)

    report = (
        f"four merchants x five dripping orders: another merchant's two orders took "
        f"{noisy:.2f} s, alone {alone:.2f} s (ratio {ratio:.2f}); {in_flight} dripping "
        "downloads at the end, "
        f"{most} at most, {served} started"
    )
    print(report)
    assert ratio <= SLOWDOWN, report
    # The slow lane held one download thread: once found slow, one download at a time drips.
    assert in_flight <= 1, report


def siteflow_lab(site: SiteflowServer) -> None:
    """Lab gb1 (every GB photo order goes there) at the Site Flow ``site``."""
    Lab.objects.filter(code="gb1").update(
        connector="siteflow",
        siteflow_base_url=site.base_url,
        siteflow_token=TOKEN,
        siteflow_secret=SECRET,
        siteflow_destination="acme-print",
        siteflow_carrier_aliases={"Standard": "royalmail-48"},
    )
    LabProduct.objects.filter(lab__code="gb1", product__sku="GLOBAL-PHO-4X6").update(
        lab_sku="PHOTO-4X6-GLOSS"
    )


def test_a_lab_whose_site_hangs_slows_another_labs_orders_at_most_1_5x(
    workers: Workers,
    merchant: CreatedMerchant,
    other_merchant: CreatedMerchant,
    httpserver: HTTPServer,
    site: SiteflowServer,
) -> None:
    siteflow_lab(site)
    acme = client_of(merchant, live=True)  # US orders: lab us1 (the simulator)
    timed_order(acme, httpserver, workers, "warm-up", "US")
    alone = [timed_order(acme, httpserver, workers, f"alone-{n}", "US") for n in range(2)]

    # Six GB orders of another merchant go to gb1, whose site now hangs: each call waits for
    # the whole Site Flow timeout, attempt after attempt.
    site.hang()
    hanging_merchant = client_of(other_merchant, live=True)
    url = serve(httpserver, "/to-gb1.jpg", jpeg_bytes(), "image/jpeg")
    hanging = [order_create_via_api(hanging_merchant, **photo(url)) for _ in range(6)]
    # All six rendered and waiting on the site (their renders are load, not the hang).
    at_site = Order.objects.filter(
        id__in=[pk(o) for o in hanging], pipeline_step=PipelineStep.SUBMIT
    )
    wait_for("the six at the site", lambda: at_site.count() == 6, workers, timeout=120)
    wait_for("the site to hold two calls", lambda: site.held >= 2, workers, timeout=120)
    time.sleep(1.0)

    noisy = [timed_order(acme, httpserver, workers, f"noisy-{n}", "US") for n in range(2)]
    ratio = sum(noisy) / sum(alone)
    held, most_held = site.held, site.most_held
    for order_id in hanging:
        hanging_merchant.post(f"/v4.0/orders/{order_id}/actions/cancel", format="json")
    site.release()
    idle(workers)

    report = (
        f"a hanging Site Flow site with six orders: another lab's orders took "
        f"{', '.join(f'{t:.2f}' for t in noisy)} s, alone {', '.join(f'{t:.2f}' for t in alone)}"
        f" s (ratio {ratio:.2f}); the site held {held} calls at "
        f"the end, {most_held} at most"
    )
    print(report)
    assert ratio <= SLOWDOWN, report
    assert most_held <= int(SETTINGS["LAB_CALLS_PER_LAB"]), report
