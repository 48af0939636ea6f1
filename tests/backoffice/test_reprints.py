"""Reprints and lab-failed lab orders through the bulk tool, end to end (decisions.md, "Bulk
tools, wave 4"): a real worker runs the pipeline and the job, the sheet is the local Sheets v4
server read and written through gspread, and the merchant's callbacks arrive at a receiver.

A shipped lab order in a sheet with ``KeepOriginal`` is reprinted: a new shipment of the same
items at the chosen lab, with its own tracking and callbacks, no charge to the merchant, and
the order's stage Complete throughout. A lab order its lab failed, resubmitted either way,
ends its order Complete with ``inProduction`` Complete."""

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from backoffice.models import BulkJob, JobStatus
from labs.models import Lab
from orders.models import Order, PipelineStep, Shipment
from tests.support.orders import fetch, photo_order, pk, stage_is
from tests.support.pipeline import order_failed
from tests.support.servers import Receiver
from tests.support.sheets import SheetsServer
from tests.support.worker import (
    CAN_RUN_WORKER,
    NO_WORKER,
    Worker,
    needs_worker,
    purge_queues,
    start_worker,
    wait_for,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue"),
    needs_worker,
]

SHEET = "reprints"
TAB = "Lost parcels"
SUBMIT = "/v4.0/micro-ui/bulk-resubmission/submit"
PREFIX = "com.service.order."
STAGE_COMPLETE = f"{PREFIX}status.stage.changed#Complete"
SHIPPED = f"{PREFIX}shipments.shipment#Shipped"


@pytest.fixture(scope="module")
def sheets() -> Iterator[SheetsServer]:
    server = SheetsServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def worker(
    django_db_setup: None, django_db_blocker: Any, live_server: Any, sheets: SheetsServer
) -> Iterator[Worker]:
    """One worker for the module's tests, reading and writing the local sheets."""
    if not CAN_RUN_WORKER:
        pytest.skip(NO_WORKER)
    with tempfile.TemporaryDirectory(prefix="reprints-") as folder:
        running = start_worker(
            Path(folder),
            live_server.url,
            SHEETS_API_URL=sheets.api_url,
            SHEETS_ACCESS_TOKEN=sheets.token,
            BULK_WRITE_BACK_SECONDS="0.2",
        )
        try:
            yield running
        finally:
            with django_db_blocker.unblock():  # to see the worker's sessions go
                running.kill()
            purge_queues()


@pytest.fixture(autouse=True)
def sheets_here(settings: Any, sheets: SheetsServer, live_server: Any) -> None:
    """The test process reads the same sheets (the review and submit run here), and has the
    worker's base URLs (the documents it writes show file URLs under them)."""
    settings.SHEETS_API_URL = sheets.api_url
    settings.SHEETS_ACCESS_TOKEN = sheets.token
    settings.SANDBOX_BASE_URL = settings.LIVE_BASE_URL = live_server.url


@pytest.fixture
def receiver(httpserver: HTTPServer) -> Receiver:
    found = Receiver()
    httpserver.expect_request("/callbacks", method="POST").respond_with_handler(found.handle)
    return found


def _ordered(api: APIClient, httpserver: HTTPServer, name: str) -> str:
    return photo_order(api, httpserver, name, callbackUrl=httpserver.url_for("/callbacks"))


def _submitted(staff_api: APIClient, **body: Any) -> dict[str, Any]:
    response = staff_api.post(
        SUBMIT, {"spreadsheetId": SHEET, "worksheetName": TAB, **body}, format="json"
    )
    assert response.status_code == 200, response.content
    return dict(response.json())


def _heard(receiver: Receiver, order_id: str, event_type: str) -> Callable[[], bool]:
    return lambda: event_type in receiver.types(order_id)


def _job_done(worker: Worker) -> None:
    wait_for(
        "the job to be done",
        lambda: BulkJob.objects.filter(status=JobStatus.DONE).exists(),
        worker,
    )


def test_a_shipped_lab_order_is_reprinted_at_the_services_cost_and_the_order_stays_complete(
    worker: Worker,
    sandbox_api: APIClient,
    staff_api: APIClient,
    httpserver: HTTPServer,
    receiver: Receiver,
    sheets: SheetsServer,
) -> None:
    order_id = _ordered(sandbox_api, httpserver, "lost-parcel")
    before = wait_for("the order to complete", stage_is(sandbox_api, order_id, "Complete"), worker)
    wait_for("its callbacks", _heard(receiver, order_id, STAGE_COMPLETE), worker)
    [original] = before["shipments"]
    assert original["status"] == "Shipped" and original["fulfillmentLocation"]["labCode"] == "gb1"
    heard_before = receiver.types(order_id)
    sheets.put(SHEET, TAB, [["Lab Order Id", "Cancel Option"], [original["id"], "KeepOriginal"]])

    answer = _submitted(staff_api, lab="us1")

    assert (answer["accepted"], answer["queuedRowCount"]) == (True, 1)
    _job_done(worker)
    [message] = sheets.column(SHEET, TAB, "Message")
    [new_number] = sheets.column(SHEET, TAB, "New Lab Order Id")
    reprint_id = f"shp_{new_number}"
    assert message.startswith(f"Reprinted as {reprint_id} at us1. Lab cost ")
    assert message.endswith("(the service's); no charge to the merchant.")
    wait_for(
        "the reprint's Shipped callback",
        lambda: receiver.types(order_id).count(SHIPPED) == 2,
        worker,
    )
    after = fetch(sandbox_api, order_id)

    listed = sandbox_api.get(f"/v4.0/orders?orderIds={order_id}").json()["orders"]
    assert listed == [after]  # the list reads the reprint's items as GET does

    shown_original, reprint = after["shipments"]
    assert shown_original == original  # shipped as it was, its items kept
    assert reprint["id"] == reprint_id
    assert reprint["status"] == "Shipped" and reprint["cancelled"] is False
    assert reprint["fulfillmentLocation"]["labCode"] == "us1"
    assert reprint["items"] == original["items"]
    assert reprint["tracking"]["number"] and reprint["dispatchDate"]
    assert reprint["tracking"] != original["tracking"]
    assert after["status"]["stage"] == "Complete"
    assert after["status"]["details"] == before["status"]["details"]
    assert after["status"]["issues"] == []
    assert after["charges"] == before["charges"]  # no charge, no refund
    heard = receiver.types(order_id)
    assert heard[: len(heard_before)] == heard_before
    assert heard[len(heard_before) :] == [
        f"{PREFIX}shipments.shipment#Processing",
        SHIPPED,
    ]
    assert heard.count(STAGE_COMPLETE) == 1
    shipped_event = [e for e in receiver.events() if e["type"] == SHIPPED][-1]
    assert shipped_event["data"]["order"]["status"]["stage"] == "Complete"
    assert shipped_event["data"]["order"]["shipments"][1]["id"] == reprint_id
    order = Order.objects.get(id=pk(order_id))
    assert (order.pipeline_step, order.due_at) == (PipelineStep.DONE, None)
    assert Shipment.objects.get(id=pk(reprint_id)).reprint_of_id == pk(original["id"])


def test_a_lab_failed_lab_order_resubmitted_either_way_completes_its_order(
    worker: Worker,
    sandbox_api: APIClient,
    staff_api: APIClient,
    httpserver: HTTPServer,
    receiver: Receiver,
    sheets: SheetsServer,
) -> None:
    Lab.objects.filter(code="gb1").update(simulator_error_share=1)
    kept_id = _ordered(sandbox_api, httpserver, "failed-kept")
    cancelled_id = _ordered(sandbox_api, httpserver, "failed-cancelled")
    failed = {}
    for order_id in (kept_id, cancelled_id):
        wait_for("the lab's failure to be recorded", order_failed(order_id), worker)
        failed[order_id] = fetch(sandbox_api, order_id)
        assert failed[order_id]["status"]["details"]["inProduction"] == "Error"
        assert failed[order_id]["status"]["issues"][0]["errorCode"] == "order.shipments.LabError"
    [kept] = failed[kept_id]["shipments"]
    [cancelled] = failed[cancelled_id]["shipments"]
    sheets.put(
        SHEET,
        TAB,
        [
            ["Lab Order Id", "Cancel Option"],
            [kept["id"], "KeepOriginal"],
            [cancelled["id"], "CancelOriginal"],
        ],
    )

    answer = _submitted(staff_api, lab="us1")

    assert (answer["accepted"], answer["queuedRowCount"]) == (True, 2)
    _job_done(worker)
    messages = sheets.column(SHEET, TAB, "Message")
    assert messages[0].startswith("Resubmitted as shp_")
    assert messages[1].startswith("Resubmitted as shp_") and "Original cancelled." in messages[1]
    for order_id, original in ((kept_id, kept), (cancelled_id, cancelled)):
        done = wait_for(
            "the order to complete", stage_is(sandbox_api, order_id, "Complete"), worker
        )
        old, new = done["shipments"]
        assert (old["id"], old["status"], old["cancelled"]) == (original["id"], "Cancelled", True)
        assert old["items"] == []
        assert (new["status"], new["fulfillmentLocation"]["labCode"]) == ("Shipped", "us1")
        assert new["items"] == original["items"]
        assert done["status"]["details"]["inProduction"] == "Complete"
        assert done["status"]["details"]["shipping"] == "Complete"
        assert done["status"]["issues"] == []
        assert done["charges"] == failed[order_id]["charges"]
        wait_for("the stage callback", _heard(receiver, order_id, STAGE_COMPLETE), worker)
        heard = receiver.types(order_id)
        assert heard.count(STAGE_COMPLETE) == 1
        assert heard.count(f"{PREFIX}shipments.shipment#Cancelled") == 1
        assert heard.count(SHIPPED) == 1
