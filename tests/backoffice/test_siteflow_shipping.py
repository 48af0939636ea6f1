"""The Site Flow bulk shipping update: a worksheet's lab orders get a new carrier at their
Site Flow site (the local Site Flow server), results answered and written back."""

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from labs.models import Lab
from orders.models import Shipment, ShipmentStatus
from staff.models import ADMINISTRATORS_GROUP, AuditEntry
from tests.support.orders import order_at_labs
from tests.support.sheets import SheetsServer
from tests.support.siteflow import SiteflowServer, SiteOrder

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
    Lab.objects.filter(code="gb1").update(
        connector="siteflow",
        siteflow_base_url=server.base_url,
        siteflow_token=server.token,
        siteflow_secret=server.secret,
        siteflow_destination="acme",
    )
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
    staff_user: Any,
    staff_api: APIClient,
    sheets: SheetsServer,
    site: SiteflowServer,
) -> None:
    staff_user.groups.add(Group.objects.get_or_create(name=ADMINISTRATORS_GROUP)[0])
    first, shipped = (Shipment.objects.get(order=order_at_labs(live_api)) for _ in range(2))
    at_site(site, first, 1)
    at_site(site, shipped, 2)
    Shipment.objects.filter(id=shipped.id).update(status=ShipmentStatus.SHIPPED)
    sheets.put(
        SHEET,
        TAB,
        [
            ["Lab Order Id", "Message", "Last Activity"],
            [first.public_id],
            [str(shipped.id)],
            ["shp_5"],
        ],
    )

    response = staff_api.post(URL, BODY, format="json")

    assert response.status_code == 200, response.content
    answer = response.json()
    assert (answer["updatedCount"], answer["failedCount"]) == (1, 2)
    assert answer["results"] == [
        {
            "rowIndex": 2,
            "labOrderId": first.id,
            "success": True,
            "message": "Carrier changed to dhl-express (Express).",
        },
        {
            "rowIndex": 3,
            "labOrderId": shipped.id,
            "success": False,
            "message": "The shipment has been shipped.",
        },
        {"rowIndex": 4, "labOrderId": 5, "success": False, "message": "No shipment shp_5."},
    ]
    assert site.operations() == [
        ("PUT", "/api/order/sf1/shipments/0", {"carrier": {"alias": "dhl-express"}})
    ]
    changed = Shipment.objects.get(id=first.id)
    assert (changed.shipping_method, changed.carrier_name) == ("Express", "dhl-express")
    assert sheets.column(SHEET, TAB, "Message") == [r["message"] for r in answer["results"]]
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
