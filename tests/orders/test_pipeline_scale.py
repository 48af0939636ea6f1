"""Beyond one machine: two web processes and a worker per queue plus beat, on one PostgreSQL
and one Redis, take 200 orders of four merchants from the API to Complete while a web process
and the images worker are SIGKILLed mid-run.

The processes are the ones README "Queues and workers" describes: gunicorn twice (each its own
master and worker), ``celery worker -Q images`` (prefork), ``-Q downloads`` (threads),
``-Q callbacks`` (threads) and ``celery beat`` alone. Clients post with idempotency keys and,
when their web process dies under them, post the same order to the other one. The images
worker is killed while orders are being rendered, submitted or followed, and started again, as
a process supervisor would. Every order completes with one lab order per shipment, its three
callback events, each delivered once.
"""

import collections
import contextlib
import json
import os
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
from django.utils import timezone
from pytest_httpserver import HTTPServer

from labs.models import SimulatedLabOrder
from orders.models import Order, PipelineStep, Shipment, Stage
from tests.merchants.factories import merchant_with_keys
from tests.support.images import jpeg_bytes
from tests.support.orders import TYPE, order_body
from tests.support.servers import Receiver, serve
from tests.support.web import Web, gunicorn_serving
from tests.support.worker import (
    CAN_RUN_WORKER,
    NO_WORKER,
    Workers,
    purge_queues,
    start_queue_workers,
    wait_for,
)
from webhooks.models import CallbackEvent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,  # its bounds are minutes; it kills its own workers only
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue"),
    pytest.mark.skipif(not CAN_RUN_WORKER, reason=NO_WORKER),
]
ORDERS = 200
MERCHANTS = 4
CLIENTS = 4
KILL_WEB_AFTER = 60  # orders posted
EXPECTED_EVENTS = [
    f"{TYPE}.status.details.downloadAssets#Complete",
    f"{TYPE}.shipments.shipment#Shipped",
    f"{TYPE}.status.stage.changed#Complete",
]


@pytest.fixture
def webs() -> Iterator[list[Web]]:
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(gunicorn_serving(workers=1, ALLOW_PRIVATE_URLS="1"))
            for _ in range(2)
        ]


@pytest.fixture
def workers(webs: list[Web], settings: Any) -> Iterator[Workers]:
    # The workers' base URL, here too: the documents they write show this process's URLs.
    settings.SANDBOX_BASE_URL = settings.LIVE_BASE_URL = webs[1].url
    with tempfile.TemporaryDirectory(prefix="pipeline-scale-") as folder:
        running = start_queue_workers(
            Path(folder),
            webs[1].url,
            images=2,
            download_threads=8,
            callback_threads=4,
            beat_alone=True,
            # Claims expire within the run, so the sweeper hands the killed worker's orders on
            # (and queues again for messages it held); not sooner, or every order waiting
            # behind the backlog would be presumed lost and queued again and again.
            PIPELINE_CLAIM_SECONDS="30",
            ASSET_DOWNLOAD_DEADLINE_SECONDS="3",
            LAB_SIMULATOR_SECONDS="1",
            DATABASE_CONN_MAX_AGE="60",  # as deployed: a connection per process, not per task
        )
        try:
            yield running
        finally:
            running.kill()
            purge_queues()


class Clients:
    """Merchants' clients posting orders to whichever web process is alive; a request cut off
    by a dead process (before or during its answer) is posted again, same body and idempotency
    key, to the other."""

    def __init__(self, webs: list[Web], keys: list[str], body: dict[str, Any]) -> None:
        self.webs, self.keys, self.body = webs, keys, body
        self.dead: set[int] = set()
        self.posted = 0
        self.retried = 0
        self.lock = threading.Lock()
        self.outcomes: collections.Counter[str] = collections.Counter()

    def post(self, n: int) -> str:
        body = {**self.body, "idempotencyKey": f"scale-{n}", "merchantReference": f"MR-{n}"}
        headers = {"X-API-Key": self.keys[n % len(self.keys)]}
        for attempt in range(6):
            alive = [i for i in range(len(self.webs)) if i not in self.dead]
            web = self.webs[alive[(n + attempt) % len(alive)]]
            try:
                response = requests.post(
                    f"{web.url}/v4.0/orders", json=body, headers=headers, timeout=30
                )
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError):
                # Cut off before or while the answer came: the process was killed.
                with self.lock:
                    self.retried += 1
                continue
            assert response.status_code == 200, response.text
            with self.lock:
                self.posted += 1
                self.outcomes[response.json()["outcome"]] += 1
            return str(response.json()["order"]["id"])
        pytest.fail(f"order {n} could not be posted")


def claimed_in(*steps: str) -> bool:
    return Order.objects.filter(pipeline_step__in=steps, claimed_until__gt=timezone.now()).exists()


def test_two_webs_and_a_worker_per_queue_take_200_orders_to_complete_through_sigkills(
    webs: list[Web], workers: Workers, httpserver: HTTPServer, receiver: Receiver
) -> None:
    merchants = [merchant_with_keys(name=f"Scale {n}") for n in range(MERCHANTS)]
    url = serve(httpserver, "/scale.jpg", jpeg_bytes(), "image/jpeg")
    body = order_body(
        callbackUrl=httpserver.url_for("/callbacks"),
        items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}],
    )
    clients = Clients(webs, [m.sandbox_api_key for m in merchants], body)
    started = time.monotonic()

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        futures = [pool.submit(clients.post, n) for n in range(ORDERS)]
        # A web process dies mid-run (master and worker at once): its clients go to the other.
        wait_for("orders posted", lambda: clients.posted >= KILL_WEB_AFTER, workers)
        os.killpg(webs[0].process.pid, signal.SIGKILL)
        clients.dead.add(0)
        # The images worker dies while orders are being rendered, submitted or followed.
        wait_for(
            "an order claimed after allocation",
            lambda: claimed_in(PipelineStep.PREPARE, PipelineStep.SUBMIT, PipelineStep.PRODUCTION),
            workers,
        )
        workers["images"].kill()
        stranded = Order.objects.filter(claimed_until__gt=timezone.now()).count()
        workers["images"].start()
        order_ids = [future.result() for future in futures]
    posted_in = time.monotonic() - started

    done = Order.objects.filter(pipeline_step=PipelineStep.DONE)
    wait_for("every order to complete", lambda: done.count() == ORDERS, workers, timeout=240)
    completed_in = time.monotonic() - started
    events = list(CallbackEvent.objects.order_by("subject", "sequence"))
    wait_for(
        "every callback to arrive",
        lambda: {e["id"] for e in receiver.events()} >= {e.public_id for e in events},
        workers,
    )
    delivered_in = time.monotonic() - started

    submissions = sum(SimulatedLabOrder.objects.values_list("submissions", flat=True))
    print(
        f"{ORDERS} orders posted in {posted_in:.1f} s ({clients.retried} cut off and posted "
        f"again; outcomes {dict(clients.outcomes)}); complete in {completed_in:.1f} s "
        f"({ORDERS / completed_in * 60:.0f} orders/min); callbacks in {delivered_in:.1f} s; "
        f"{stranded} orders stranded by the kill; {submissions} lab submissions"
    )
    # One order per idempotency key, whichever web process answered or died.
    assert len(set(order_ids)) == ORDERS
    assert Order.objects.count() == ORDERS
    assert set(Order.objects.values_list("idempotency_key", flat=True)) == {
        f"scale-{n}" for n in range(ORDERS)
    }
    assert clients.outcomes["Created"] + clients.outcomes["AlreadyExists"] == ORDERS
    assert set(Order.objects.values_list("stage", "due_at", "claimed_until")) == {
        (Stage.COMPLETE, None, None)
    }
    # One lab order per shipment, one shipment per order, however often a killed worker's
    # submission was sent again.
    assert Shipment.objects.filter(status="Shipped").count() == ORDERS
    assert SimulatedLabOrder.objects.count() == ORDERS
    assert set(SimulatedLabOrder.objects.values_list("shipment_id", flat=True)) == {
        s.public_id for s in Shipment.objects.all()
    }
    # Three events per order, each delivered once, with the bytes stored.
    by_order: dict[str, list[str]] = collections.defaultdict(list)
    for event in events:
        by_order[event.subject].append(event.event_type)
    assert sorted(by_order) == sorted(order_ids)
    assert all(types == EXPECTED_EVENTS for types in by_order.values())
    deliveries = collections.Counter(json.loads(raw)["id"] for _, raw in receiver.deliveries)
    assert set(deliveries) == {e.public_id for e in events}
    assert set(deliveries.values()) == {1}
    stored = {e.public_id: bytes(e.body) for e in events}
    assert all(stored[json.loads(raw)["id"]] == raw for _, raw in receiver.deliveries)
