"""The admin order page an operator works from: summary first, items with thumbnails,
shipments with their lab orders, tracking and actions, charges, callback events; the shipment
operations through the staff services, each confirmed, audited and its result shown; search
and the needs-attention filter."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from labs.capabilities import CAPABILITIES
from labs.models import Lab
from orders.models import (
    DetailState,
    Order,
    OrderIssue,
    OrderItem,
    PipelineStep,
    Shipment,
    ShipmentResubmission,
)
from orders.resubmission import shipment_resubmit
from staff.models import AuditEntry
from tests.support.documents import document_rewritten
from tests.support.orders import order_at_labs, order_via_api
from tests.support.staff import signed_in, staff_client
from tests.webhooks.factories import CallbackEventFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]


@pytest.fixture
def operator() -> Client:
    return staff_client("olga")


@pytest.fixture
def shipment(sandbox_api: APIClient) -> Shipment:
    order = order_at_labs(sandbox_api, merchantReference="SHOP-42")
    found = Shipment.objects.select_related("order").get(order=order)
    Lab.objects.filter(code=found.lab_code).update(capabilities=list(CAPABILITIES))
    OrderItem.objects.filter(order=order).update(thumbnail=f"orders/{order.id}/thumb.jpg")
    document_rewritten(order)
    return found


def page_of(client: Client, order: Order) -> str:
    response = client.get(reverse("admin:orders_order_change", args=[order.id]))
    assert response.status_code == 200
    return response.content.decode()


def operation_url(shipment: Shipment, operation: str) -> str:
    return reverse(
        "admin:orders_order_shipment_operation", args=[shipment.order_id, shipment.id, operation]
    )


def test_the_page_puts_summary_items_shipments_charges_and_events_first(
    operator: Client, shipment: Shipment
) -> None:
    Shipment.objects.filter(id=shipment.id).update(
        tracking_number="TRK1", tracking_url="https://track.example.com/TRK1"
    )
    order = shipment.order
    document_rewritten(order)
    events = [
        CallbackEventFactory.create(
            environment=order.environment, subject=order.public_id, sequence=number
        )
        for number in (1, 2)
    ]

    html = page_of(operator, order)

    assert html.index('id="summary"') < html.index('id="order-items"')
    assert html.index('id="order-items"') < html.index('id="order-shipments"')
    assert html.index('id="order-events"') < html.index("<fieldset")
    assert "SHOP-42" in html and "Acme Prints" in html and "Sandbox" in html
    assert f"/media/orders/{order.id}/thumb.jpg?expires=" in html
    assert shipment.lab_order_reference in html
    assert '<a href="https://track.example.com/TRK1"' in html
    for charge in order.charges.all():
        assert charge.public_id in html
    for event in events:
        assert event.public_id in html
    for operation in ("hold", "cancel", "updateAddress", "updateShippingMethod"):
        assert operation_url(shipment, operation) in html
    assert operation_url(shipment, "unhold") not in html  # not held
    assert "Django administration" not in html


def test_the_issues_are_in_plain_words(operator: Client, shipment: Shipment) -> None:
    OrderIssue.objects.create(
        order=shipment.order,
        object_id=shipment.public_id,
        error_code="order.shipments.LabError",
        description="The lab could not print the cover.",
    )
    document_rewritten(shipment.order)

    html = page_of(operator, shipment.order)

    issues = html[html.index('id="issues"') : html.index('id="order-items"')]
    assert "The lab could not print the cover." in issues


def test_a_viewer_without_the_operations_sees_no_action(shipment: Shipment) -> None:
    viewer = User.objects.create_user("vera", password="a-long-password-1", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_order"))
    client = signed_in(viewer)

    html = page_of(client, shipment.order)

    assert 'class="operation"' not in html
    refused = client.get(operation_url(shipment, "hold"))
    assert refused.status_code == 403 and refused["Content-Type"].startswith("text/html")
    posted = client.post(operation_url(shipment, "hold"))
    assert posted.status_code == 403
    assert Shipment.objects.get(id=shipment.id).held_since is None


def test_hold_is_confirmed_then_done_audited_and_shown(
    operator: Client, shipment: Shipment
) -> None:
    confirm = operator.get(operation_url(shipment, "hold"))

    assert confirm.status_code == 200
    assert "The lab stops producing this lab order" in confirm.content.decode()
    assert Shipment.objects.get(id=shipment.id).held_since is None

    done = operator.post(operation_url(shipment, "hold"), follow=True)

    held = Shipment.objects.get(id=shipment.id)
    assert held.held_since is not None
    html = done.content.decode()
    assert f"Hold of {shipment.public_id}: done." in html
    assert operation_url(shipment, "unhold") in html and operation_url(shipment, "hold") not in html
    entry = AuditEntry.objects.get(operation="shipment.hold")
    assert (entry.username, entry.success, entry.target) == (
        "olga",
        True,
        f"order {shipment.order.public_id} shipment {shipment.public_id}",
    )

    operator.post(operation_url(shipment, "unhold"))

    assert Shipment.objects.get(id=shipment.id).held_since is None
    assert AuditEntry.objects.filter(operation="shipment.unhold", success=True).count() == 1


def test_a_refusal_is_shown_and_audited(operator: Client, shipment: Shipment) -> None:
    Shipment.objects.filter(id=shipment.id).update(status="Shipped")
    document_rewritten(shipment.order)

    done = operator.post(operation_url(shipment, "cancel"), follow=True)

    assert f"Cancel of {shipment.public_id}: refused. The shipment has been shipped." in (
        done.content.decode()
    )
    assert Shipment.objects.get(id=shipment.id).status == "Shipped"
    assert not AuditEntry.objects.get(operation="shipment.cancel").success


def test_change_the_address_validates_then_goes_through_the_service(
    operator: Client, shipment: Shipment
) -> None:
    url = operation_url(shipment, "updateAddress")
    address = {
        "line1": "2 New Street",
        "line2": "",
        "postalOrZipCode": "EC1A 1BB",
        "townOrCity": "London",
        "stateOrCounty": "",
        "countryCode": "gb",
    }
    current = shipment.order.address_line1
    assert f'value="{current}"' in operator.get(url).content.decode()  # the form starts there

    refused = operator.post(url, {**address, "countryCode": "XX"})

    assert refused.status_code == 200
    assert "&#x27;XX&#x27; is not an ISO 3166-1 alpha-2 country code." in refused.content.decode()
    assert Order.objects.get(id=shipment.order_id).address_line1 != "2 New Street"

    operator.post(url, address)

    order = Order.objects.get(id=shipment.order_id)
    assert (order.address_line1, order.address_country_code) == ("2 New Street", "GB")
    assert AuditEntry.objects.get(operation="shipment.updateAddress").success


def test_an_operation_on_a_lab_order_holding_another_recipient_shows_it(
    operator: Client, shipment: Shipment
) -> None:
    """As a refused ``updateRecipient`` leaves it: the order is Grace's, its lab holds Ada."""
    Order.objects.filter(id=shipment.order_id).update(recipient_name="Grace Hopper")
    held = {
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "phoneNumber": "+44 7700 900123",
        "address": {"line1": "1 Analytical Row", "line2": "", "postalOrZipCode": "SW1A 1AA",
                    "countryCode": "GB", "townOrCity": "London", "stateOrCounty": ""},
    }  # fmt: skip
    Shipment.objects.filter(id=shipment.id).update(recipient=held)
    document_rewritten(shipment.order)

    operation = operator.get(operation_url(shipment, "updateAddress")).content.decode()

    assert "<th>Recipient at its lab</th><td>Ada Lovelace, ada@example.com, +44 7700 900123" in (
        operation
    )


def test_change_the_shipping_method(operator: Client, shipment: Shipment) -> None:
    operator.post(operation_url(shipment, "updateShippingMethod"), {"shippingMethod": "Express"})

    assert Shipment.objects.get(id=shipment.id).shipping_method == "Express"


def test_cancel_a_shipment(operator: Client, shipment: Shipment) -> None:
    operator.post(operation_url(shipment, "cancel"))

    assert Shipment.objects.get(id=shipment.id).status == "Cancelled"
    assert Order.objects.get(id=shipment.order_id).stage == "Cancelled"


def test_an_unknown_operation_or_a_shipment_of_another_order_is_not_found(
    operator: Client, shipment: Shipment, sandbox_api: APIClient
) -> None:
    other = order_via_api(sandbox_api)

    assert operator.get(operation_url(shipment, "explode")).status_code == 404
    wrong = reverse("admin:orders_order_shipment_operation", args=[other.id, shipment.id, "hold"])
    assert operator.post(wrong).status_code == 404
    assert Shipment.objects.get(id=shipment.id).held_since is None


def results(client: Client, **query: str) -> set[Order]:
    response = client.get(reverse("admin:orders_order_changelist"), query)
    assert response.status_code == 200
    return set(response.context["cl"].result_list)


def test_search_by_ids_reference_recipient_and_lab_order_reference(
    operator: Client, shipment: Shipment, sandbox_api: APIClient
) -> None:
    order = shipment.order
    other = order_via_api(sandbox_api, merchantReference="OTHER-1")
    Order.objects.filter(id=order.id).update(recipient_name="Grace Hopper")
    document_rewritten(order)

    assert results(operator, q=order.public_id) == {order}
    assert results(operator, q=str(order.id)) == {order}
    assert results(operator, q=shipment.public_id) == {order}
    assert results(operator, q="SHOP-42") == {order}
    assert results(operator, q="grace hop") == {order}
    assert results(operator, q=shipment.lab_order_reference) == {order}
    assert results(operator, q="OTHER-1") == {other}
    assert results(operator, q=order.public_id.upper()) == {order}  # the prefix in any case
    full_width = str(order.id).translate({ord(d): 0xFF10 + int(d) for d in "0123456789"})
    assert results(operator, q=f"ord_{full_width}") == set()  # ASCII digits only
    assert results(operator, q=f"shp_{'9' * 20}") == set()  # beyond any id: no search by id


def test_the_needs_attention_filter(operator: Client, sandbox_api: APIClient) -> None:
    calm = order_via_api(sandbox_api)
    with_issue, in_error, lab_side, waiting = (order_via_api(sandbox_api) for _ in range(4))
    OrderIssue.objects.create(order=with_issue, object_id="x", error_code="e", description="d")
    Order.objects.filter(id=in_error.id).update(download_assets=DetailState.ERROR)
    OrderIssue.objects.create(
        order=lab_side,
        object_id="shp_1",
        error_code="order.shipments.LabCancelled",
        description="The lab cancelled this lab order.",
    )
    Order.objects.filter(id=waiting.id).update(
        pipeline_step=PipelineStep.ALLOCATE, due_at=timezone.now() + timedelta(hours=1)
    )
    for arranged in (with_issue, in_error, lab_side, waiting):
        document_rewritten(arranged)

    assert results(operator, attention="issues") == {with_issue, lab_side}
    assert results(operator, attention="error") == {in_error}
    assert results(operator, attention="lab") == {lab_side}
    assert results(operator, attention="allocation") == {waiting}
    assert results(operator, attention="any") == {with_issue, in_error, lab_side, waiting}
    assert calm not in results(operator, attention="any")


def test_the_page_of_an_order_with_no_shipment_yet(
    operator: Client, sandbox_api: APIClient
) -> None:
    order = order_via_api(sandbox_api)

    html = page_of(operator, order)

    assert "No shipment yet" in html and "No charge." in html


def test_a_resubmission_shows_the_lab_cost_the_service_bore(
    operator: Client, shipment: Shipment
) -> None:
    done = shipment_resubmit(shipment_id=shipment.id, labs=["gb2"])
    assert done.successful, done.message
    record = ShipmentResubmission.objects.get(original=shipment)
    cost = f"{record.lab_cost} {record.plan['currency']}"
    assert record.lab_cost is not None and record.lab_cost < Decimal(record.plan["total"])

    html = page_of(operator, shipment.order)
    listed = operator.get("/admin/orders/shipmentresubmission/").content.decode()

    row = html[html.index(f'id="shipment-shp_{record.new_shipment_id}"') :]
    row = row[: row.index("</tr>")]
    assert f"of {shipment.public_id}; lab cost {cost} (what the lab charges the service" in row
    assert cost in listed and f"shp_{record.new_shipment_id}" in listed
