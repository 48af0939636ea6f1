"""The lab side made true, through real workers: the simulator is a Sandbox tool (under the
production settings a Live order at labs without a real connector waits at allocation and never
ships), and a lab's own cancel or failure is recorded once with its callback (decisions.md,
"Lab-side cancellation and failure"), here through the simulator's cancel and failure modes."""

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from labs.models import Lab, SimulatedLabOrder
from orders.models import Order, PipelineStep, Shipment
from tests.support.orders import fetch, photo_order, pk
from tests.support.servers import Receiver
from tests.support.worker import Worker, needs_worker, start_worker, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue"),
    needs_worker,
]

WARNING = "SIMULATOR_PRODUCES_LIVE is on under the production settings"


def production_worker(folder: Path, live_server: Any, settings: Any, **overrides: str) -> Worker:
    """A worker started with ``config.settings.production``, as deployed (its base URLs are the
    https ones production requires; print files are not fetched by the simulator). This
    process signs and renders file URLs as the worker does (its key, the old one kept as a
    fallback for the sessions made already, and its base URLs): the documents either writes
    agree."""
    secret_key = "p" * 50
    base_urls = {
        "SANDBOX_BASE_URL": "https://sandbox.example.com",
        "LIVE_BASE_URL": "https://live.example.com",
    }
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = secret_key
    for name, url in base_urls.items():
        setattr(settings, name, url)
    started = start_worker(
        folder,
        live_server.url,
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY=secret_key,
        DJANGO_ALLOWED_HOSTS="testserver",
        **base_urls,
        PAYMENT_PROVIDER="stripe",  # production refuses the built-in test provider
        STRIPE_SECRET_KEY="sk_test_lab_side",
        STRIPE_WEBHOOK_SECRET="whsec_lab_side",
        METRICS_TOKEN="lab-side-metrics-token-0123",
        **overrides,
    )
    wait_for("the production worker to consume", started.ready, started)
    return started


@pytest.fixture
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="lab-side-") as name:
        yield Path(name)


def test_a_live_order_under_production_settings_with_only_simulator_labs_never_ships(
    folder: Path, live_server: Any, live_api: APIClient, httpserver: HTTPServer,
    settings: Any, admin_client: Client, django_db_blocker: Any,
) -> None:  # fmt: skip
    settings.SIMULATOR_PRODUCES_LIVE = False  # as production has it
    Lab.objects.update(connector="simulator")  # as the demo labs, and any lab not configured
    worker = production_worker(folder, live_server, settings)
    try:
        order_id = photo_order(
            live_api, httpserver, "live-at-simulator", outcome="CreatedWithIssues"
        )
        expected = (
            "No lab is configured to make GLOBAL-PHO-4X6 for Live orders: only the built-in "
            "simulator makes it, and the simulator makes Sandbox orders only."
        )

        def waiting_at_allocation() -> dict[str, Any] | None:
            shown = fetch(live_api, order_id)
            issues = shown["status"]["issues"]
            return shown if issues and issues[0]["description"] == expected else None

        shown = wait_for("allocation to wait with its issue", waiting_at_allocation, worker)
    finally:
        with django_db_blocker.unblock():
            worker.kill()

    item_id = shown["items"][0]["id"]
    assert shown["status"]["stage"] == "InProgress"
    assert shown["status"]["details"]["downloadAssets"] == "Complete"
    assert shown["status"]["details"]["allocateProductionLocation"] == "InProgress"
    assert shown["status"]["issues"] == [
        {"objectId": item_id, "errorCode": "order.items.ItemUnavailable", "description": expected}
    ]
    assert shown["shipments"] == []
    order = Order.objects.get(id=pk(order_id))
    assert order.pipeline_step == PipelineStep.ALLOCATE and order.due_at is not None
    assert not Shipment.objects.filter(order=order).exists()
    assert not SimulatedLabOrder.objects.exists()
    assert WARNING not in worker.log_tail(400)
    page = admin_client.get(f"/admin/orders/order/{order.id}/change/").content.decode()
    assert "No lab is configured" in page
    waiting = admin_client.get("/admin/orders/order/?attention=allocation").content.decode()
    assert order.public_id in waiting


def test_with_the_development_setting_on_under_production_it_warns_and_says_simulated(
    folder: Path, live_server: Any, live_api: APIClient, httpserver: HTTPServer,
    settings: Any, admin_client: Client, django_db_blocker: Any,
) -> None:  # fmt: skip
    worker = production_worker(folder, live_server, settings, SIMULATOR_PRODUCES_LIVE="1")
    try:
        order_id = photo_order(live_api, httpserver, "live-simulated")
        shown = wait_for(
            "the simulated Live order to complete",
            lambda: (s := fetch(live_api, order_id))["status"]["stage"] == "Complete" and s,
            worker,
        )
    finally:
        with django_db_blocker.unblock():
            worker.kill()

    assert WARNING in worker.log_tail(400)
    [shipment] = shown["shipments"]
    number = shipment["tracking"]["number"]
    assert number.startswith("SIMULATED-SIM")
    assert shipment["tracking"]["url"] == f"https://tracking.example.com/simulated/{number}"
    row = Shipment.objects.get(order_id=pk(order_id))
    assert row.simulated is True
    page = admin_client.get(f"/admin/orders/order/{pk(order_id)}/change/").content.decode()
    assert "simulated (the built-in lab simulator; no parcel leaves any lab)" in page


@pytest.mark.parametrize(
    ("share", "event", "code", "description", "shipment_status", "in_production"),
    [
        ("simulator_cancel_share", "shipments.shipment#Cancelled", "order.shipments.LabCancelled",
         "Simulated cancellation by lab gb1.", "Cancelled", "InProgress"),
        ("simulator_error_share", "status.details.inProduction#Error", "order.shipments.LabError",
         "Simulated production failure at lab gb1.", "Processing", "Error"),
    ],
)  # fmt: skip
def test_a_sandbox_merchant_hears_the_simulators_lab_side_cancel_and_failure_once(
    worker: Worker, sandbox_api: APIClient, httpserver: HTTPServer, receiver: Receiver,
    share: str, event: str, code: str, description: str, shipment_status: str,
    in_production: str,
) -> None:  # fmt: skip
    Lab.objects.filter(code="gb1").update(**{share: 1})
    order_id = photo_order(
        sandbox_api, httpserver, f"sandbox-{share}", callbackUrl=httpserver.url_for("/callbacks")
    )
    wanted = f"com.service.order.{event}"

    wait_for("the lab-side callback", lambda: wanted in receiver.types(order_id), worker)
    order = wait_for(
        "the order to wait for staff",
        lambda: Order.objects.filter(id=pk(order_id), pipeline_step=PipelineStep.FAILED).first(),
        worker,
    )

    shown = fetch(sandbox_api, order_id)
    [shipment] = shown["shipments"]
    assert shipment["status"] == shipment_status
    assert shown["status"]["stage"] == "InProgress"
    assert shown["status"]["details"]["inProduction"] == in_production
    assert shown["status"]["issues"] == [
        {"objectId": shipment["id"], "errorCode": code, "description": description}
    ]
    assert order.due_at is None  # no longer followed: nothing asks the lab again
    types = receiver.types(order_id)
    assert types.count(wanted) == 1
    assert not [t for t in types if t.endswith("#Complete") and "stage" in t]
