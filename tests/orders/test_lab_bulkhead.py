"""No web request waits on a lab it need not ask, and one lab holds a bounded share of the web
workers: ``GET .../actions`` answers from what is recorded, asking no lab; an order action, a
staff operation (API or admin) or a dashboard cancel at a lab whose web places are all taken is
refused at once, nothing sent and nothing changed (issue 43, finding 2)."""

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from labs.capabilities import CAPABILITIES
from labs.models import Lab
from merchants.services import CreatedMerchant
from orders.lab_bulkhead import lab_web_places
from orders.models import Order, Shipment, ShipmentStatus, Stage
from staff.models import AuditEntry
from tests.support.dashboard import signed_in_client
from tests.support.orders import order_at_labs
from tests.support.siteflow import SiteflowServer, SiteOrder, lab_at_site, site_running
from tests.support.staff import staff_client

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]

TOKEN = "token-bulkhead"
SECRET = "s3cret-bulkhead-value"
RETRY_AFTER = 7
EXPRESS = {"shippingMethod": "Express"}
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
def site(settings: Any) -> Iterator[SiteflowServer]:
    settings.LAB_CALLS_BUDGET_SECONDS = 2.0  # a hanging call holds its request this long
    settings.LAB_WEB_CALLS_PER_LAB = 1
    settings.LAB_BUSY_RETRY_SECONDS = RETRY_AFTER
    with site_running(settings, token=TOKEN, secret=SECRET) as server:
        yield server


def at_site(api: APIClient, site: SiteflowServer) -> Shipment:
    """A Live order's one shipment, accepted by its lab, that lab a Site Flow ``site`` holding
    the lab order."""
    order = order_at_labs(api)
    shipment = Shipment.objects.select_related("order__environment").get(order=order)
    lab_at_site(site, code=shipment.lab_code)
    Lab.objects.filter(code=shipment.lab_code).update(capabilities=list(CAPABILITIES))
    site.orders[shipment.public_id] = SiteOrder(id="sf000042", submitted={})
    Shipment.objects.filter(id=shipment.id).update(lab_order_reference="sf000042")
    shipment.lab_order_reference = "sf000042"
    return shipment


def availability(api: APIClient, order: Order) -> dict[str, str]:
    response = api.get(f"/v4.0/orders/{order.public_id}/actions")
    assert response.status_code == 200, response.content
    return {k: v["isAvailable"] for k, v in response.json().items() if isinstance(v, dict)}


def assert_busy(response: Any, lab_code: str) -> None:
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == str(RETRY_AFTER)
    body = response.json()
    assert body == {
        "outcome": "ServiceUnavailable",
        "statusCode": 503,
        "statusText": f"Lab {lab_code} is busy with other requests; try again in a moment.",
        "data": {"labCode": lab_code, "retryAfterSeconds": RETRY_AFTER},
        "traceParent": response["traceParent"],
    }


def unchanged(shipment: Shipment) -> None:
    """The shipment and its order as they were: nothing recorded, no intent left."""
    now = Shipment.objects.get(id=shipment.id)
    assert (now.status, now.held_since, now.lab_operation) == (ShipmentStatus.PROCESSING, None, "")
    assert now.recipient is None and now.shipping_method == shipment.shipping_method
    assert Order.objects.get(id=shipment.order_id).stage == Stage.IN_PROGRESS


def test_get_actions_asks_no_lab_and_answers_at_once_while_the_site_hangs(
    site: SiteflowServer, live_api: APIClient
) -> None:
    shipment = at_site(live_api, site)
    site.hang()

    started = time.monotonic()
    shown = availability(live_api, shipment.order)
    took = time.monotonic() - started

    assert shown == {
        "cancel": "Yes",
        "changeRecipientDetails": "Yes",
        "changeShippingMethod": "Yes",
        "changeMetaData": "Yes",
    }
    assert took < 1.0  # not the 2 s a call to the hanging site would hold it
    assert (site.arrived_hanging, site.received) == (0, [])


def test_get_actions_shows_what_was_recorded_of_the_lab_and_its_capabilities(
    site: SiteflowServer, live_api: APIClient
) -> None:
    shipment = at_site(live_api, site)
    Lab.objects.filter(code=shipment.lab_code).update(capabilities=["updateAddress"])

    before = availability(live_api, shipment.order)
    # The pipeline's check (or an action's question) recorded that production started.
    Shipment.objects.filter(id=shipment.id).update(in_production_at=timezone.now())
    after = availability(live_api, shipment.order)

    assert before == {
        "cancel": "No",
        "changeRecipientDetails": "Yes",
        "changeShippingMethod": "No",
        "changeMetaData": "Yes",
    }
    assert after == {
        "cancel": "No",
        "changeRecipientDetails": "No",
        "changeShippingMethod": "No",
        "changeMetaData": "Yes",
    }
    assert site.received == []


def test_an_order_action_at_a_lab_whose_web_places_are_taken_is_refused_at_once(
    site: SiteflowServer, live_api: APIClient
) -> None:
    shipment = at_site(live_api, site)
    url = f"/v4.0/orders/{shipment.order.public_id}/actions"

    with lab_web_places([shipment.lab_code]):  # another request waits on the lab
        started = time.monotonic()
        answers = [
            live_api.post(f"{url}/cancel"),
            live_api.post(f"{url}/updateShippingMethod", EXPRESS, format="json"),
            live_api.post(f"{url}/updateShipping", EXPRESS, format="json"),
            live_api.post(f"{url}/updateRecipient", RECIPIENT, format="json"),
        ]
        took = time.monotonic() - started
        metadata = live_api.post(f"{url}/updateMetadata", {"metadata": {"a": 1}}, format="json")

    for answer in answers:
        assert_busy(answer, shipment.lab_code)
    assert took < 2.0
    assert site.received == []
    unchanged(shipment)
    assert metadata.json()["outcome"] == "Updated"  # no lab to ask: no place needed
    # The place given back, the next cancel reaches the lab.
    assert live_api.post(f"{url}/cancel").json()["outcome"] == "Cancelled"
    assert site.order(shipment.public_id).status == "cancelled"


def test_a_sandbox_order_at_the_simulator_needs_no_place(
    site: SiteflowServer, sandbox_api: APIClient
) -> None:
    order = order_at_labs(sandbox_api)
    shipment = Shipment.objects.get(order=order)
    lab_at_site(site, code=shipment.lab_code)  # Live orders there go to the site, not Sandbox

    with lab_web_places([shipment.lab_code]):
        cancelled = sandbox_api.post(f"/v4.0/orders/{order.public_id}/actions/cancel")

    assert cancelled.json()["outcome"] == "Cancelled"


def test_a_staff_operation_at_a_busy_lab_is_refused_at_once_and_audited(
    site: SiteflowServer, live_api: APIClient, staff_api: APIClient
) -> None:
    shipment = at_site(live_api, site)
    url = f"/v4.0/orders/{shipment.order.public_id}/shipments/{shipment.public_id}"

    with lab_web_places([shipment.lab_code]):
        answers = [
            staff_api.post(f"{url}/hold"),
            staff_api.post(f"{url}/cancel"),
            staff_api.post(
                f"{url}/updateShippingMethod", {"shippingMethod": "Express"}, format="json"
            ),
        ]
    held = staff_api.post(f"{url}/hold")

    for answer in answers:
        assert_busy(answer, shipment.lab_code)
    entry = AuditEntry.objects.filter(operation="shipment.hold").order_by("id").first()
    assert entry is not None
    assert (entry.success, entry.status_code) == (False, 503)
    assert held.json()["success"] is True  # the place given back
    assert [(r.method, r.path) for r in site.received if r.method == "PUT"] == [
        ("PUT", "/api/order/sf000042/hold")
    ]


def test_an_admin_operation_at_a_busy_lab_says_so_and_sends_nothing(
    site: SiteflowServer, live_api: APIClient
) -> None:
    shipment = at_site(live_api, site)
    operator = staff_client("olga")
    url = reverse(
        "admin:orders_order_shipment_operation", args=[shipment.order_id, shipment.id, "hold"]
    )

    with lab_web_places([shipment.lab_code]):
        response = operator.post(url, follow=True)

    assert response.status_code == 200
    page = response.content.decode()
    assert f"Hold of {shipment.public_id}: not sent. Lab {shipment.lab_code} is busy" in page
    assert site.received == []
    unchanged(shipment)
    entry = AuditEntry.objects.get(operation="shipment.hold")
    assert (entry.success, entry.status_code) == (False, 503)


def test_a_dashboard_cancel_at_a_busy_lab_says_so_and_changes_nothing(
    site: SiteflowServer, merchant: CreatedMerchant, live_api: APIClient
) -> None:
    shipment = at_site(live_api, site)
    client = signed_in_client(merchant.merchant)

    with lab_web_places([shipment.lab_code]):
        response = client.post(f"/dashboard/orders/{shipment.order.public_id}/cancel", follow=True)

    assert response.status_code == 200
    assert f"Lab {shipment.lab_code} is busy with other requests" in response.content.decode()
    assert site.received == []
    unchanged(shipment)
