"""The pipeline survives its worker being killed (SIGKILL) mid-step, twice, and its broker
losing every queued message.

Orders in flight lose their messages (acknowledged late, held unacknowledged by the dead
worker) and keep their claims until these expire; the beat sweeper of the restarted worker
finds them due and queues again. Every order completes and every effect happens once.
"""

import collections
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from labs.models import SimulatedLabOrder
from orders.models import (
    Asset,
    Charge,
    ChargeItem,
    ChargeType,
    Order,
    PipelineStep,
    Shipment,
)
from tests.support.orders import TYPE, order_body, order_create_via_api, pk
from tests.support.servers import Receiver, SlowAssets
from tests.support.worker import Worker, needs_worker, purge_queues, start_worker, wait_for
from webhooks.models import CallbackEvent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,  # its bounds are minutes; it kills its own workers only
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue", "workers_base_url"),
    needs_worker,
]
ORDERS = 6
# Claims expire quickly so the sweeper can take over soon after a kill.
CLAIM_SECONDS = "4"


@pytest.fixture
def fault_worker(live_server: Any) -> Iterator[Worker]:
    with tempfile.TemporaryDirectory(prefix="pipeline-faults-") as folder:
        running = start_worker(
            Path(folder),
            live_server.url,
            PIPELINE_CLAIM_SECONDS=CLAIM_SECONDS,
            ASSET_DOWNLOAD_DEADLINE_SECONDS="3",
            PIPELINE_SWEEP_SECONDS="0.5",
            LAB_SIMULATOR_SECONDS="2",
        )
        try:
            yield running
        finally:
            running.kill()
            purge_queues()


def bodies(httpserver: HTTPServer) -> list[tuple[dict[str, Any], int]]:
    """Orders and how many shipments each gets: single prints and split book-and-frame ones."""
    callback = httpserver.url_for("/callbacks")
    made = []
    for n in range(ORDERS):
        photo = {"url": httpserver.url_for(f"/photo-{n}.jpg")}
        if n % 2 == 0:
            items = [{"sku": "GLOBAL-PHO-4X6", "copies": 1 + n, "assets": [photo]}]
            made.append((order_body(callbackUrl=callback, items=items), 1))
            continue
        items = [
            {
                "sku": "BOOK-A5-L-SOFT-G",
                "copies": 1,
                "assets": [
                    {"url": httpserver.url_for(f"/book-{n}.pdf"), "pageCount": 30},
                    {"printArea": "spine", "url": httpserver.url_for(f"/spine-{n}.jpg")},
                ],
            },
            {
                "sku": "GLOBAL-CFPM-12X16",
                "copies": 1,
                "attributes": {"color": "gold"},
                "assets": [photo],
            },
        ]
        made.append((order_body(callbackUrl=callback, items=items), 2))
    return made


def claimed_in(*steps: str) -> bool:
    return Order.objects.filter(pipeline_step__in=steps, claimed_until__gt=timezone.now()).exists()


def test_killed_workers_delay_orders_but_every_order_completes_with_each_effect_once(
    fault_worker: Worker, sandbox_api: APIClient, httpserver: HTTPServer, receiver: Receiver
) -> None:
    assets = SlowAssets()
    for prefix in ("/photo-", "/book-", "/spine-"):
        for n in range(ORDERS):
            suffix = ".pdf" if prefix == "/book-" else ".jpg"
            httpserver.expect_request(f"{prefix}{n}{suffix}").respond_with_handler(assets.handle)
    planned = bodies(httpserver)
    order_ids = [order_create_via_api(sandbox_api, body) for body, _ in planned]

    # First kill: while asset downloads are being answered (their step is half done).
    wait_for("a download in flight", lambda: assets.in_flight > 0, fault_worker)
    assert claimed_in(PipelineStep.DOWNLOAD)
    fault_worker.kill()
    stranded = Order.objects.filter(claimed_until__gt=timezone.now()).count()
    fault_worker.start()
    # Second kill: while an order is owned in a later step (rendering, submitting or tracking).
    wait_for(
        "an order claimed after allocation",
        lambda: claimed_in(PipelineStep.PREPARE, PipelineStep.SUBMIT, PipelineStep.PRODUCTION),
        fault_worker,
    )
    fault_worker.kill()
    purge_queues()  # and the broker loses every queued message, as a restarted one may
    fault_worker.start()

    wait_for(
        "every order to complete",
        lambda: (
            Order.objects.filter(id__in=[pk(i) for i in order_ids], stage="Complete").count()
            == ORDERS
        ),
        fault_worker,
        timeout=90,
    )
    events = list(CallbackEvent.objects.order_by("subject", "sequence"))
    wait_for(
        "every callback to be delivered",
        lambda: {e["id"] for e in receiver.events()} >= {e.public_id for e in events},
        fault_worker,
    )

    assert stranded >= 1
    assert SimulatedLabOrder.objects.count() == sum(shipments for _, shipments in planned)
    for order_id, (body, shipments) in zip(order_ids, planned, strict=True):
        order = Order.objects.get(id=pk(order_id))
        assert (order.pipeline_step, order.due_at, order.claimed_until) == (
            PipelineStep.DONE, None, None,
        )  # fmt: skip
        rows = list(Shipment.objects.filter(order=order))
        assert len(rows) == shipments
        assert all(
            s.status == "Shipped" and s.lab_order_reference and s.tracking_number for s in rows
        )
        # One lab order per shipment, whatever was submitted again after a kill.
        lab_orders = SimulatedLabOrder.objects.filter(shipment_id__in=[s.public_id for s in rows])
        assert sorted(lab_orders.values_list("shipment_id", "reference")) == sorted(
            (s.public_id, s.lab_order_reference) for s in rows
        )
        assert all(item.shipment_id is not None for item in order.items.all())
        charges = sorted(Charge.objects.filter(order=order).values_list("charge_type", flat=True))
        assert charges == [ChargeType.ITEM, ChargeType.SHIPPING]
        assert ChargeItem.objects.filter(
            charge__order=order, charge_type=ChargeType.ITEM
        ).count() == len(body["items"])
        assert (
            ChargeItem.objects.filter(charge__order=order, charge_type=ChargeType.SHIPPING).count()
            == shipments
        )
        assert [e.event_type for e in events if e.subject == order.public_id] == [
            f"{TYPE}.status.details.downloadAssets#Complete",
            *[f"{TYPE}.shipments.shipment#Shipped"] * shipments,
            f"{TYPE}.status.stage.changed#Complete",
        ]
        # An attempt cut short by a kill was never recorded, so none counts twice.
        assert set(
            Asset.objects.filter(item__order=order).values_list("download_attempts", flat=True)
        ) == {1}
    # At least once, with the same bytes every time: receivers can deduplicate on the id.
    bodies_by_id: dict[str, set[bytes]] = collections.defaultdict(set)
    for _, raw in receiver.deliveries:
        bodies_by_id[json.loads(raw)["id"]].add(raw)
    stored = {e.public_id: bytes(e.body) for e in events}
    assert set(bodies_by_id) == set(stored)
    assert all(found == {stored[event_id]} for event_id, found in bodies_by_id.items())
