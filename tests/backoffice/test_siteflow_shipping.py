"""The Site Flow bulk shipping update: a worksheet's lab orders get a new carrier at their
Site Flow site (the local Site Flow server) through a job, results answered and written back.
Here tasks run eagerly (the job is done before the answer); test_siteflow_shipping_job.py
runs it on a real worker against a slow site."""

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from backoffice.models import BulkJob
from orders.models import Shipment, ShipmentStatus
from staff.models import ADMINISTRATORS_GROUP, AuditEntry
from tests.support.documents import document_rewritten
from tests.support.orders import order_at_labs
from tests.support.sheets import SheetsServer
from tests.support.siteflow import SiteflowServer, SiteOrder, lab_at_site

pytestmark = pytest.mark.usefixtures("catalogue")

URL = "/v4.0/micro-ui/siteflow-shipping/bulk-update"
SHEET, TAB = "carriers", "Orders"
BODY = {
    "spreadsheetId": SHEET,
    "worksheetName": TAB,
    "shippingSpeed": "express",
    "carrierAlias": "dhl-express",
}


@pytest.fixture
def site(settings: Any) -> Iterator[SiteflowServer]:
    settings.ALLOW_PRIVATE_URLS = True
    server = SiteflowServer(token="tok-gb1", secret="secret-gb1-site")
    server.start()
    lab_at_site(server)
    yield server
    server.stop()


def at_site(site: SiteflowServer, shipment: Shipment, number: int) -> None:
    """The shipment as Site Flow holds it (submitted earlier)."""
    site.orders[shipment.public_id] = SiteOrder(id=f"sf{number}", submitted={})
    Shipment.objects.filter(id=shipment.id).update(lab_order_reference=f"sf{number}")


def test_an_operator_is_unauthorized_and_nothing_changes(
    staff_api: APIClient, sheets: SheetsServer, site: SiteflowServer
) -> None:
    sheets.put(SHEET, TAB, [["Lab Order Id"], ["shp_1"]])

    response = staff_api.post(URL, BODY, format="json")

    assert response.status_code == 401
    assert response.json()["statusText"] == "The administrator role is required for this operation."
    assert site.operations() == [] and sheets.write_calls() == []


def test_an_administrator_updates_carriers_and_results_are_written_back(
    live_api: APIClient,
    sandbox_api: APIClient,
    staff_user: Any,
    staff_api: APIClient,
    sheets: SheetsServer,
    site: SiteflowServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Any,
    settings: Any,
) -> None:
    # The job's worker (eager here) starts once the request's transaction commits, which in
    # this test is when the capture below ends: the answer has what was known at once.
    settings.SITEFLOW_SHIPPING_WAIT_SECONDS = 0.3
    staff_user.groups.add(Group.objects.get_or_create(name=ADMINISTRATORS_GROUP)[0])
    first, by_reference, shipped, cancelled = (
        Shipment.objects.get(order=order_at_labs(live_api)) for _ in range(4)
    )
    sandbox = Shipment.objects.get(order=order_at_labs(sandbox_api))
    for number, shipment in enumerate((first, by_reference, shipped, cancelled), start=1):
        at_site(site, shipment, number)
    Shipment.objects.filter(id=shipped.id).update(status=ShipmentStatus.SHIPPED)
    Shipment.objects.filter(id=cancelled.id).update(status=ShipmentStatus.CANCELLED)
    document_rewritten(shipped.order_id)
    document_rewritten(cancelled.order_id)
    sheets.put(
        SHEET,
        TAB,
        [
            ["Lab Order Id", "Message", "Last Activity", "Skip Row"],
            [first.public_id],
            [str(shipped.id)],
            ["shp_5"],
            ["sf2"],  # the lab's own order reference
            [cancelled.public_id],
            [sandbox.public_id],
            [first.public_id, "", "", "yes"],
            ["\uff11\uff12"],  # full-width digits name no shipment
        ],
    )

    with django_capture_on_commit_callbacks(execute=True):
        response = staff_api.post(URL, BODY, format="json")
        assert response.status_code == 200, response.content
        answer = response.json()

    job = BulkJob.objects.get()
    assert (answer["updatedCount"], answer["failedCount"], answer["pending"]) == (0, 5, 2)
    assert answer["jobId"] == job.id
    assert answer["results"] == [
        {
            "rowIndex": 3,
            "labOrderId": shipped.id,
            "success": False,
            "message": "The shipment has been shipped.",
        },
        {
            "rowIndex": 4,
            "labOrderId": 5,
            "success": False,
            "message": "Unknown lab order 'shp_5'.",
        },
        {
            "rowIndex": 6,
            "labOrderId": cancelled.id,
            "success": False,
            "message": "The shipment is cancelled.",
        },
        {
            "rowIndex": 7,
            "labOrderId": sandbox.id,
            "success": False,
            "message": f"Lab {sandbox.lab_code} is not a Site Flow lab.",
        },
        {
            "rowIndex": 9,
            "labOrderId": None,
            "success": False,
            "message": "Unknown lab order '\uff11\uff12'.",
        },
    ]
    assert job.status == "Done"
    changed = "Carrier changed to dhl-express (Express)."
    done = dict(job.rows.filter(status="Succeeded").values_list("row_index", "message"))
    assert done == {2: changed, 5: changed}
    assert sorted(site.operations()) == [
        ("PUT", "/api/order/sf1/shipments/0", {"carrier": {"alias": "dhl-express"}}),
        ("PUT", "/api/order/sf2/shipments/0", {"carrier": {"alias": "dhl-express"}}),
    ]
    updated = Shipment.objects.get(id=first.id)
    assert (updated.shipping_method, updated.carrier_name) == ("Express", "DHL")
    # The merchant sees the carrier the alias stands for, not the site's alias.
    shown = live_api.get(f"/v4.0/orders/{first.order.public_id}").json()["order"]
    assert shown["shippingMethod"] == "Express"
    assert [s["carrier"] for s in shown["shipments"]] == [{"name": "DHL", "service": "Express"}]
    refusals = [r["message"] for r in answer["results"]]
    assert sheets.column(SHEET, TAB, "Message") == [
        changed,
        *refusals[:2],
        changed,
        *refusals[2:4],
        "Skipped (Skip Row).",
        refusals[4],
    ]
    assert all(sheets.column(SHEET, TAB, "Last Activity"))
    assert len(sheets.write_calls()) == 1
    assert AuditEntry.objects.get(operation="siteflowShipping.bulkUpdate").success


def test_a_bad_shipping_speed_is_validation_failed(
    staff_user: Any, staff_api: APIClient, sheets: SheetsServer
) -> None:
    staff_user.groups.add(Group.objects.get_or_create(name=ADMINISTRATORS_GROUP)[0])

    response = staff_api.post(URL, {**BODY, "shippingSpeed": "Teleport"}, format="json")

    assert response.status_code == 400
    assert response.json()["data"]["failures"]["shippingSpeed"][0]["code"] == "Invalid"
