"""Roles on the staff API: a staff key (or a staff session) can do exactly what its user's role
can do in the admin, through the user's Django permissions; a staff user with no role can do
nothing, and every refusal is the API's error envelope, written to the audit log."""

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from rest_framework.test import APIClient

from orders.models import Shipment, ShipmentStatus
from staff.models import AuditEntry
from staff.services import staff_api_key_create, staff_user_save
from tests.staff.factories import StaffUserFactory
from tests.support.openapi import STAFF_DOCUMENT
from tests.support.orders import order_at_labs

pytestmark = pytest.mark.usefixtures("catalogue")

# Every operation of the staff document (tests/api/test_routers.py keeps it equal to the routes).
OPERATIONS = [
    (path, method) for path, methods in STAFF_DOCUMENT["paths"].items() for method in methods
]
SITEFLOW_SHIPPING = "/v4.0/micro-ui/siteflow-shipping/bulk-update"
ADDRESS = {
    "address": {
        "line1": "2 Compiler Close",
        "postalOrZipCode": "M1 1AA",
        "countryCode": "GB",
        "townOrCity": "Manchester",
    }
}
BODIES: dict[str, Any] = {
    "updateAddress": ADDRESS,
    "updateShippingMethod": {"shippingMethod": "express"},
}
OPERATOR_REFUSAL = "The operator role is required for this operation."
ADMINISTRATOR_REFUSAL = "The administrator role is required for this operation."


def key_client(user: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=staff_api_key_create(user=user, name="roles")[1])
    return client


def no_role() -> Any:
    """A staff user in no group: refused everywhere in the admin."""
    return StaffUserFactory.create(username="nobody")


def call(client: APIClient, path: str, method: str, shipment: Shipment) -> Any:
    """The operation on ``shipment`` (its order, its lab), with a valid body where it has one
    and otherwise one that only validation refuses (no sheet is read)."""
    filled = (
        path.replace("{orderId}", shipment.order.public_id)
        .replace("{shipmentId}", shipment.public_id)
        .replace("{labCode}", shipment.lab_code)
    )
    if method == "get":
        return client.get(filled)
    return client.post(filled, BODIES.get(path.rsplit("/", 1)[-1], {}), format="json")


def assert_refused(response: Any, status: int, text: str) -> None:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["outcome"] == "Unauthorized"
    assert body["statusCode"] == status
    assert body["statusText"] == text
    assert body["data"] == {"reason": text}
    assert body["traceParent"].startswith("00-")


@pytest.mark.parametrize(("path", "method"), OPERATIONS, ids=str)
def test_a_staff_key_of_a_user_with_no_role_is_refused_everywhere(
    sandbox_api: APIClient, path: str, method: str
) -> None:
    shipment = Shipment.objects.get(order=order_at_labs(sandbox_api))

    response = call(key_client(no_role()), path, method, shipment)

    if path == SITEFLOW_SHIPPING:  # decisions.md: 401 naming the administrator role
        assert_refused(response, 401, ADMINISTRATOR_REFUSAL)
    else:
        assert_refused(response, 403, OPERATOR_REFUSAL)
    shipment.refresh_from_db()
    assert shipment.status == ShipmentStatus.PROCESSING
    assert shipment.held_since is None
    assert shipment.order.address_line1 != ADDRESS["address"]["line1"]
    [entry] = AuditEntry.objects.all()
    assert (entry.username, entry.success) == ("nobody", False)
    assert entry.status_code == response.status_code


@pytest.mark.parametrize(("path", "method"), OPERATIONS, ids=str)
def test_an_operator_key_does_what_the_operator_role_does(
    sandbox_api: APIClient, staff_api: APIClient, path: str, method: str
) -> None:
    shipment = Shipment.objects.get(order=order_at_labs(sandbox_api))
    if path.endswith("/unhold"):
        call(staff_api, path.replace("/unhold", "/hold"), "post", shipment)

    response = call(staff_api, path, method, shipment)

    if path == SITEFLOW_SHIPPING:
        assert_refused(response, 401, ADMINISTRATOR_REFUSAL)
    elif path.startswith("/v4.0/micro-ui/") and path.rsplit("/", 1)[-1] != "form-options":
        # past the role check: only the missing sheet is refused
        assert response.status_code == 400, response.content
        assert response.json()["outcome"] == "ValidationFailed"
    else:
        assert response.status_code == 200, response.content
        assert response.json().get("success", True) is True


def test_an_administrator_key_passes_the_site_flow_shipping_roles_check(
    sandbox_api: APIClient,
) -> None:
    shipment = Shipment.objects.get(order=order_at_labs(sandbox_api))
    administrator, _ = staff_user_save(username="ada", administrator=True)

    response = call(key_client(administrator), SITEFLOW_SHIPPING, "post", shipment)

    assert response.status_code == 400
    assert set(response.json()["data"]["failures"]) >= {"spreadsheetId", "worksheetName"}


def test_a_signed_in_staff_user_with_no_role_is_refused_too(sandbox_api: APIClient) -> None:
    shipment = Shipment.objects.get(order=order_at_labs(sandbox_api))
    session = APIClient()
    session.force_login(no_role())

    response = session.get(
        f"/v4.0/orders/{shipment.order.public_id}/shipments/{shipment.public_id}/maptojson"
    )

    assert_refused(response, 403, OPERATOR_REFUSAL)


def test_the_check_is_the_users_permissions_not_a_group_name(sandbox_api: APIClient) -> None:
    # Given a user whose only group lets it view orders and shipments, not operate on them
    shipment = Shipment.objects.get(order=order_at_labs(sandbox_api))
    viewers = Group.objects.create(name="Viewers")
    viewers.permissions.set(
        Permission.objects.filter(
            content_type__app_label="orders", codename__in=["view_order", "view_shipment"]
        )
    )
    user = no_role()
    user.groups.add(viewers)
    client = key_client(user)
    base = f"/v4.0/orders/{shipment.order.public_id}/shipments/{shipment.public_id}"

    # Then it reads the lab JSON, but cannot hold the shipment
    assert client.get(f"{base}/maptojson").status_code == 200
    assert_refused(client.post(f"{base}/hold"), 403, OPERATOR_REFUSAL)
    shipment.refresh_from_db()
    assert shipment.held_since is None
