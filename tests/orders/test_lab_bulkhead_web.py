"""A lab whose Site Flow site hangs, and one merchant firing eight ``GET .../actions`` and
order actions at once at its orders at that lab, slow another merchant's GETs by 1.5 times
their time alone at most: a real gunicorn with four workers, on PostgreSQL and Redis.

Before, ``GET .../actions`` asked the lab inside the request for up to
``LAB_CALLS_BUDGET_SECONDS``, and so did every order action: eight such GETs held all four
workers and another merchant's ``GET /orders`` waited for them (issue 43, finding 2). Now the
GETs ask no lab, and the actions hold at most ``LAB_WEB_CALLS_PER_LAB`` (1) workers; the others
are refused at once.
"""

import statistics
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any

import pytest
import requests
from rest_framework.test import APIClient

from merchants.services import CreatedMerchant
from orders.models import Order, Shipment
from tests.support.orders import order_at_labs, order_via_api
from tests.support.siteflow import SiteflowServer, lab_at_site
from tests.support.web import Web, gunicorn_serving, needs_shared_database

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue"),
    needs_shared_database,
]
# Another merchant's GETs within this of their time alone, as the issue asks.
SLOWDOWN = 1.5
TOKEN, SECRET = "token-hanging", "siteflow-secret-hanging"
# How long a request waits on the hanging site (its lab calls' budget): the other merchant's
# GETs are timed well inside it.
BUDGET_SECONDS = 15
SERVED = {
    "LAB_CALLS_BUDGET_SECONDS": str(BUDGET_SECONDS),
    "SITEFLOW_TIMEOUT_SECONDS": str(BUDGET_SECONDS + 5),
    "LAB_WEB_CALLS_PER_LAB": "1",
    "LAB_BUSY_RETRY_SECONDS": "5",
    "ALLOW_PRIVATE_URLS": "true",
}
# The other merchant's GETs arrive at a steady pace, each on a connection of its own whatever
# the earlier ones are doing (as a shop's pages and its customers send them): ARRIVALS of them,
# SPACING seconds apart (8 s), the two kinds in turn, before, during and after the hang. Each kind's
# median during is compared with its median before and after (alone). A GET stuck behind
# requests that wait on the lab shows in the median, since those after it arrive anyway.
ARRIVALS = 80
SPACING = 0.1
RECIPIENT = {
    "name": "Grace Hopper",
    "address": {
        "line1": "2 Compiler Close",
        "postalOrZipCode": "M1 1AA",
        "countryCode": "GB",
        "townOrCity": "Manchester",
    },
}


@pytest.fixture
def site() -> Iterator[SiteflowServer]:
    server = SiteflowServer(token=TOKEN, secret=SECRET)
    server.start()
    yield server
    server.stop()


def paced(pool: ThreadPoolExecutor, urls: list[str], key: str) -> list[list[float]]:
    """Each URL's seconds over GETs sent at a steady pace (``ARRIVALS``, ``SPACING``)."""

    def timed(url: str) -> float:
        started = time.monotonic()
        response = requests.get(url, headers={"X-API-Key": key}, timeout=90)
        assert response.status_code == 200, response.content
        return time.monotonic() - started

    sent: list[tuple[int, Future[float]]] = []
    start = time.monotonic()
    for number in range(ARRIVALS):
        time.sleep(max(0.0, start + number * SPACING - time.monotonic()))
        kind = number % len(urls)
        sent.append((kind, pool.submit(timed, urls[kind])))
    taken: list[list[float]] = [[] for _ in urls]
    for kind, future in sent:
        taken[kind].append(future.result(timeout=120))
    return taken


def fired(pool: ThreadPoolExecutor, send: Callable[[], requests.Response]) -> Future[Any]:
    """Send one request from the pool; its future gives (status, body, seconds)."""

    def timed() -> tuple[int, Any, float]:
        started = time.monotonic()
        response = send()
        return response.status_code, response.json(), time.monotonic() - started

    return pool.submit(timed)


def test_a_hanging_site_and_one_merchants_requests_at_it_slow_another_merchants_gets_1_5x_at_most(
    site: SiteflowServer,
    merchant: CreatedMerchant,
    other_merchant: CreatedMerchant,
    live_api: APIClient,
) -> None:
    # One merchant's four Live orders at a lab whose site will hang; another merchant's order.
    orders = [order_at_labs(live_api) for _ in range(4)]
    for code in set(Shipment.objects.filter(order__in=orders).values_list("lab_code", flat=True)):
        lab_at_site(site, code=code)
    other = APIClient()
    other.credentials(HTTP_X_API_KEY=other_merchant.live_api_key)
    other_order = order_via_api(other)
    assert Order.objects.count() == 5

    with (
        gunicorn_serving(workers=4, **SERVED) as web,
        ThreadPoolExecutor(max_workers=12) as pool,
        ThreadPoolExecutor(max_workers=ARRIVALS) as readers,
    ):
        urls = [f"{web.url}/v4.0/orders", f"{web.url}/v4.0/orders/{other_order.public_id}"]
        key = other_merchant.live_api_key
        paced(readers, urls, key)  # warm-up: every worker has served both
        before = paced(readers, urls, key)

        site.hang()
        burst = _burst(pool, web, merchant.live_api_key, orders)
        # Timed once the burst's GETs and refused actions have answered (at once: before, they
        # waited on the site, and 5 s are waited at most), so that what is timed is the site's
        # hang rather than the work of the burst's quick requests.
        settled_by = time.monotonic() + 5
        while sum(f.done() for f in burst) < len(burst) - 1 and time.monotonic() < settled_by:
            time.sleep(0.05)
        timed_during = paced(readers, urls, key)
        # A request still waited on the site when the last GET was answered.
        still_waiting = sum(not future.done() for future in burst)
        site.release()
        answers = [future.result(timeout=90) for future in burst]
        # Alone again, so that the machine's load drifting either way is in "alone" too.
        after = paced(readers, urls, key)

    alone = [statistics.median(b + a) for b, a in zip(before, after, strict=True)]
    during = [statistics.median(times) for times in timed_during]
    ratios = [d / a for d, a in zip(during, alone, strict=True)]
    gets, changes = answers[:8], answers[8:]
    report = (
        f"another merchant's GET /orders and GET /orders/id: medians alone "
        f"{alone[0] * 1000:.1f}, {alone[1] * 1000:.1f} ms, during "
        f"{during[0] * 1000:.1f}, {during[1] * 1000:.1f} ms (ratios "
        f"{ratios[0]:.2f}, {ratios[1]:.2f}); the burst's GETs took "
        f"{max(t for _, _, t in gets):.2f} s at most; actions answered "
        f"{sorted(status for status, _, _ in changes)}; the site held {site.most_held} at most"
    )
    print(report)
    assert still_waiting >= 1, report  # the GETs were timed while a request waited on the site
    assert all(ratio <= SLOWDOWN for ratio in ratios), report
    # The GETs asked no lab and answered at once, from what is recorded.
    assert all(status == 200 and body["outcome"] == "Ok" for status, body, _ in gets), report
    assert max(t for _, _, t in gets) < BUDGET_SECONDS / 2, report
    # One action took the lab's one place and waited on the site; the others were refused at
    # once, in the envelope.
    busy = [(status, body) for status, body, _ in changes if status == 503]
    assert len(busy) == 3, report
    assert all(body["outcome"] == "ServiceUnavailable" for _, body in busy), report
    assert (site.most_held, site.arrived_hanging) == (1, 1), report


def _burst(pool: ThreadPoolExecutor, web: Web, key: str, orders: list[Order]) -> list[Future[Any]]:
    """Eight GET .../actions (two per order), then four order actions, all at once, each on a
    connection of its own."""
    headers = {"X-API-Key": key}
    actions = [f"{web.url}/v4.0/orders/{order.public_id}/actions" for order in orders]
    gets = [
        fired(pool, partial(requests.get, url, headers=headers, timeout=90)) for url in actions * 2
    ]
    bodies: list[tuple[str, dict[str, Any] | None]] = [
        ("cancel", None),
        ("cancel", None),
        ("updateShippingMethod", {"shippingMethod": "Express"}),
        ("updateRecipient", RECIPIENT),
    ]
    changes = [
        fired(pool, partial(requests.post, f"{url}/{name}", json=body, headers=headers, timeout=90))
        for url, (name, body) in zip(actions, bodies, strict=True)
    ]
    return gets + changes
