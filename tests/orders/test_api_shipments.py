"""Staff shipment endpoints: capabilities, the five lab operations and maptojson."""

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from labs.connectors.simulator import SimulatorConnector
from labs.models import Lab, ShippingRate
from labs.selectors import shipping_rate_for
from orders.lab_orders import lab_order
from orders.models import Charge, ChargeType, Order, Shipment, ShipmentStatus, Stage
from staff.models import AuditEntry, StaffApiKey
from tests.support.documents import document_rewritten
from tests.support.orders import order_allocated, order_at_labs, order_body
from webhooks.models import CallbackEvent

pytestmark = pytest.mark.usefixtures("catalogue")

OPERATIONS = ["cancel", "hold", "unhold", "updateAddress", "updateShippingMethod"]
BODIES: dict[str, Any] = {
    "cancel": None,
    "hold": None,
    "unhold": None,
    "updateAddress": {
        "address": {
            "line1": "2 Compiler Close",
            "postalOrZipCode": "M1 1AA",
            "countryCode": "GB",
            "townOrCity": "Manchester",
        }
    },
    "updateShippingMethod": {"shippingMethod": "express"},
}
NEW_ADDRESS = {
    "line1": "2 Compiler Close",
    "line2": "",
    "postalOrZipCode": "M1 1AA",
    "countryCode": "GB",
    "townOrCity": "Manchester",
    "stateOrCounty": "",
}

ADA = {k: v for k, v in order_body()["recipient"].items() if k != "address"}


def url(shipment: Shipment, suffix: str, *, order_id: str | None = None) -> str:
    order = order_id or f"ord_{shipment.order_id}"
    return f"/v4.0/orders/{order}/shipments/{shipment.public_id}/{suffix}"


def post(api: APIClient, shipment: Shipment, operation: str, body: Any = None) -> Any:
    if body is None:
        return api.post(url(shipment, operation))
    return api.post(url(shipment, operation), body, format="json")


def call(api: APIClient, shipment: Shipment, endpoint: str) -> Any:
    if endpoint in ("fulfilmentLocationCapabilities", "maptojson"):
        return api.get(url(shipment, endpoint))
    return post(api, shipment, endpoint, BODIES[endpoint])


ENDPOINTS = ["fulfilmentLocationCapabilities", "maptojson", *OPERATIONS]


def only_shipment(order: Order) -> Shipment:
    return Shipment.objects.get(order=order)


def without_trace(body: dict[str, Any]) -> dict[str, Any]:
    assert body.pop("traceParent").startswith("00-")
    return body


# --- authentication -------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_merchant_key_is_unauthorized(sandbox_api: APIClient, endpoint: str) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))

    response = call(sandbox_api, shipment, endpoint)

    assert response.status_code == 401
    assert response.json()["outcome"] == "Unauthorized"
    assert response.json()["statusCode"] == 401
    assert Shipment.objects.get(id=shipment.id).status == ShipmentStatus.PROCESSING
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_no_key_is_unauthorized(sandbox_api: APIClient, api: APIClient, endpoint: str) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))

    response = call(api, shipment, endpoint)

    assert response.status_code == 401
    assert response.json()["outcome"] == "Unauthorized"
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_staff_key_is_accepted(
    sandbox_api: APIClient, staff_api: APIClient, endpoint: str
) -> None:
    order = order_at_labs(sandbox_api)
    shipment = only_shipment(order)
    if endpoint == "unhold":
        post(staff_api, shipment, "hold")

    response = call(staff_api, shipment, endpoint)

    assert response.status_code == 200, response.content
    if endpoint in OPERATIONS:
        assert response.json()["success"] is True, response.json()


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_staff_admin_session_is_accepted(
    sandbox_api: APIClient, staff_session: APIClient, endpoint: str
) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))
    if endpoint == "unhold":
        post(staff_session, shipment, "hold")

    response = call(staff_session, shipment, endpoint)

    assert response.status_code == 200, response.content
    if endpoint in OPERATIONS:
        assert response.json()["success"] is True, response.json()


def test_a_session_of_a_user_who_is_not_staff_is_unauthorized(
    sandbox_api: APIClient, staff_user: Any
) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))
    staff_user.is_staff = False
    staff_user.save()
    client = APIClient()
    client.force_login(staff_user)

    assert client.get(url(shipment, "fulfilmentLocationCapabilities")).status_code == 401


def test_a_revoked_staff_key_is_unauthorized(sandbox_api: APIClient, staff_api: APIClient) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))
    StaffApiKey.objects.update(revoked_at=timezone.now())

    assert staff_api.get(url(shipment, "fulfilmentLocationCapabilities")).status_code == 401


@pytest.mark.parametrize(
    "path", ["/v4.0/orders", "/v4.0/quotes", "/v4.0/products/GLOBAL-CAN-10X10"]
)
def test_a_staff_key_on_merchant_endpoints_is_unauthorized(staff_api: APIClient, path: str) -> None:
    response = (
        staff_api.post(path, {}, format="json") if path.endswith("quotes") else staff_api.get(path)
    )

    assert response.status_code == 401
    body = response.json()
    assert body["outcome"] == "Unauthorized"
    assert body["data"]["reason"].startswith(
        "A staff API key is not accepted on merchant endpoints"
    )


# --- paths ----------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_shipment_of_another_order_is_not_found(
    sandbox_api: APIClient, staff_api: APIClient, endpoint: str
) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))
    other = order_at_labs(sandbox_api)
    path = url(shipment, endpoint, order_id=other.public_id)

    response = (
        staff_api.get(path)
        if endpoint in ENDPOINTS[:2]
        else staff_api.post(path, BODIES[endpoint] or {}, format="json")
    )

    assert response.status_code == 404
    assert response.json()["outcome"] == "EntityNotFound"
    assert Shipment.objects.get(id=shipment.id).status == ShipmentStatus.PROCESSING


def test_path_ids_may_be_bare_numbers(sandbox_api: APIClient, staff_api: APIClient) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))

    response = staff_api.get(
        f"/v4.0/orders/{shipment.order_id}/shipments/{shipment.id}/fulfilmentLocationCapabilities"
    )

    assert response.status_code == 200


@pytest.mark.parametrize(
    ("order_id", "shipment_id", "field"),
    [("ord_x", "shp_1", "orderId"), ("1", "ord_1", "shipmentId"), ("1", "-1", "shipmentId")],
)
def test_malformed_path_ids_are_validation_failed(
    staff_api: APIClient, order_id: str, shipment_id: str, field: str
) -> None:
    response = staff_api.post(f"/v4.0/orders/{order_id}/shipments/{shipment_id}/cancel")

    assert response.status_code == 400
    assert list(response.json()["data"]["failures"]) == [field]


def test_an_unknown_shipment_is_not_found(staff_api: APIClient) -> None:
    response = staff_api.post("/v4.0/orders/ord_1/shipments/shp_2/hold")

    assert response.status_code == 404
    assert response.json()["outcome"] == "EntityNotFound"


# --- capabilities ---------------------------------------------------------------------------


def test_shipment_capabilities_are_its_labs(sandbox_api: APIClient, staff_api: APIClient) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))
    Lab.objects.filter(code=shipment.lab_code).update(capabilities=["unhold", "cancel"])

    response = staff_api.get(url(shipment, "fulfilmentLocationCapabilities"))

    assert without_trace(response.json()) == {
        "success": True,
        "result": {
            "labCode": shipment.lab_code,
            "countryCode": shipment.lab_country_code,
            "capabilities": ["cancel", "unhold"],
        },
        "message": "",
    }


# --- operations -----------------------------------------------------------------------------


@pytest.mark.parametrize("operation", OPERATIONS)
def test_an_operation_the_lab_lacks_is_unsuccessful_and_changes_nothing(
    sandbox_api: APIClient, staff_api: APIClient, operation: str
) -> None:
    order = order_at_labs(sandbox_api, callbackUrl="https://hooks.example.com/in")
    shipment = only_shipment(order)
    if operation == "unhold":
        post(staff_api, shipment, "hold")
    others = [c for c in OPERATIONS if c != operation]
    Lab.objects.filter(code=shipment.lab_code).update(capabilities=others)
    before = Shipment.objects.filter(id=shipment.id).values().get()
    events = CallbackEvent.objects.count()

    response = post(staff_api, shipment, operation, BODIES[operation])

    assert response.status_code == 200
    body = without_trace(response.json())
    assert body["success"] is False
    assert body["message"] == f"Lab {shipment.lab_code} does not support {operation}."
    assert body["result"]["operation"] == operation
    assert body["result"]["shipmentId"] == shipment.public_id
    assert Shipment.objects.filter(id=shipment.id).values().get() == before
    assert CallbackEvent.objects.count() == events
    assert not Charge.objects.filter(order=order, charge_type=ChargeType.REFUND).exists()


@pytest.mark.parametrize("operation", OPERATIONS)
def test_a_shipment_not_at_a_lab_yet_is_unsuccessful(
    sandbox_api: APIClient, staff_api: APIClient, operation: str
) -> None:
    shipment = only_shipment(order_allocated(sandbox_api))

    body = post(staff_api, shipment, operation, BODIES[operation]).json()

    assert (body["success"], body["message"]) == (False, "The shipment is not at a lab yet.")
    assert Shipment.objects.get(id=shipment.id).status == ShipmentStatus.PROCESSING


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (ShipmentStatus.SHIPPED, "The shipment has been shipped."),
        (ShipmentStatus.CANCELLED, "The shipment is cancelled."),
    ],
)
@pytest.mark.parametrize("operation", OPERATIONS)
def test_a_shipped_or_cancelled_shipment_is_unsuccessful(
    sandbox_api: APIClient, staff_api: APIClient, operation: str, status: str, message: str
) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))
    Shipment.objects.filter(id=shipment.id).update(status=status)
    document_rewritten(shipment.order_id)

    body = post(staff_api, shipment, operation, BODIES[operation]).json()

    assert (body["success"], body["message"]) == (False, message)
    assert body["result"]["shipment"]["status"] == status


def test_a_shipment_its_lab_has_shipped_since_the_last_poll_is_unsuccessful(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))
    Shipment.objects.filter(id=shipment.id).update(submitted_at=timezone.now() - timedelta(hours=1))

    body = post(staff_api, shipment, "hold").json()

    assert (body["success"], body["message"]) == (False, "The shipment has been shipped.")
    assert Shipment.objects.get(id=shipment.id).held_since is None


def test_a_lab_that_cannot_be_reached_is_unsuccessful_with_its_message(
    sandbox_api: APIClient, staff_api: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))

    def unreachable(self: SimulatorConnector, order: Any) -> Any:
        raise ConnectionError("connection refused")

    monkeypatch.setattr(SimulatorConnector, "cancel", unreachable)

    body = post(staff_api, shipment, "cancel").json()

    assert body["success"] is False
    assert body["message"] == f"Lab {shipment.lab_code} could not be reached: connection refused"
    current = Shipment.objects.get(id=shipment.id)
    assert (current.status, current.lab_operation) == (ShipmentStatus.PROCESSING, "")


def test_a_shipment_whose_lab_is_busy_with_another_change_is_unsuccessful(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))
    Shipment.objects.filter(id=shipment.id).update(
        lab_operation="updateAddress", lab_operation_since=timezone.now()
    )

    body = post(staff_api, shipment, "hold").json()

    assert body["success"] is False
    assert body["message"].startswith("Another change to this shipment is in progress")


def test_cancel_cancels_refunds_and_cancels_an_order_with_no_shipment_left(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    order = order_at_labs(sandbox_api, callbackUrl="https://hooks.example.com/in")
    shipment = only_shipment(order)
    charged = sum(c.total_cost for c in Charge.objects.filter(order=order))

    response = post(staff_api, shipment, "cancel", {})

    body = without_trace(response.json())
    assert body["success"] is True
    assert body["message"] == ""
    result = body["result"]
    assert (result["shipmentId"], result["labCode"], result["operation"]) == (
        shipment.public_id,
        shipment.lab_code,
        "cancel",
    )
    assert result["labOrderReference"] == f"SIM-{shipment.lab_code.upper()}-{shipment.id}"
    assert (result["shipment"]["status"], result["shipment"]["cancelled"]) == ("Cancelled", True)
    assert result["shipment"]["id"] == shipment.public_id
    refund = Charge.objects.get(order=order, charge_type=ChargeType.REFUND)
    assert refund.total_cost == -charged
    order.refresh_from_db()
    assert (order.stage, order.pipeline_step) == (Stage.CANCELLED, "Cancelled")
    events = CallbackEvent.objects.filter(subject=order.public_id).order_by("sequence")
    assert [e.event_type for e in events] == [
        "com.service.order.shipments.shipment#Cancelled",
        "com.service.order.status.stage.changed#Cancelled",
    ]


def test_cancel_of_one_shipment_of_two_refunds_it_and_the_order_goes_on(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    order = order_at_labs(sandbox_api, two_shipments=True)
    first, second = Shipment.objects.filter(order=order).order_by("lab_code")

    body = post(staff_api, first, "cancel").json()

    assert body["success"] is True
    refund = Charge.objects.get(order=order, charge_type=ChargeType.REFUND)
    refunded_shipments = {line.shipment_id for line in refund.items.all()} - {None}
    refunded_items = {line.item_id for line in refund.items.all()} - {None}
    assert refunded_shipments == {first.id}
    assert refunded_items == {i.id for i in first.items.all()}
    assert Order.objects.get(id=order.id).stage == Stage.IN_PROGRESS
    assert Shipment.objects.get(id=second.id).status == ShipmentStatus.PROCESSING


def test_hold_and_unhold(sandbox_api: APIClient, staff_api: APIClient) -> None:
    order = order_at_labs(sandbox_api, callbackUrl="https://hooks.example.com/in")
    shipment = only_shipment(order)

    held = post(staff_api, shipment, "hold").json()
    again = post(staff_api, shipment, "hold").json()
    held_since = Shipment.objects.get(id=shipment.id).held_since
    released = post(staff_api, shipment, "unhold").json()
    released_again = post(staff_api, shipment, "unhold").json()

    assert (held["success"], held["result"]["operation"]) == (True, "hold")
    assert held_since is not None
    assert (again["success"], again["message"]) == (False, "The shipment is already on hold.")
    assert (released["success"], released["result"]["operation"]) == (True, "unhold")
    assert (released_again["success"], released_again["message"]) == (
        False,
        "The shipment is not on hold.",
    )
    current = Shipment.objects.get(id=shipment.id)
    assert current.held_since is None
    assert current.held_seconds > 0
    assert current.status == ShipmentStatus.PROCESSING
    events = CallbackEvent.objects.filter(subject=order.public_id)
    assert [e.event_type for e in events.order_by("sequence")] == [
        "com.service.order.shipments.shipment#Processing",
        "com.service.order.shipments.shipment#Processing",
    ]


def test_update_address_of_the_only_shipment_moves_the_order_recipient_too(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    order = order_at_labs(sandbox_api, callbackUrl="https://hooks.example.com/in")
    shipment = only_shipment(order)

    body = post(staff_api, shipment, "updateAddress", {"address": NEW_ADDRESS}).json()

    assert body["success"] is True
    order.refresh_from_db()
    assert (order.address_line1, order.address_town_or_city, order.address_line2) == (
        "2 Compiler Close",
        "Manchester",
        "",
    )
    assert order.recipient_name == "Ada Lovelace"
    current = Shipment.objects.get(id=shipment.id)
    assert current.recipient is None  # the order's, which moved with it
    assert lab_order(current).recipient["address"] == NEW_ADDRESS
    [event] = CallbackEvent.objects.filter(subject=order.public_id)
    assert event.event_type == "com.service.order.shipments.shipment#Processing"


def test_update_address_of_one_shipment_of_two_changes_only_its_lab_order(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    order = order_at_labs(sandbox_api, two_shipments=True)
    first, second = Shipment.objects.filter(order=order).order_by("lab_code")

    body = post(staff_api, first, "updateAddress", {"address": NEW_ADDRESS}).json()

    assert body["success"] is True
    assert Order.objects.get(id=order.id).address_line1 == "1 Analytical Row"
    assert Shipment.objects.get(id=first.id).recipient == {**ADA, "address": NEW_ADDRESS}
    assert Shipment.objects.get(id=second.id).recipient is None
    lab_json = staff_api.get(url(first, "maptojson")).json()
    assert lab_json["recipient"]["address"] == NEW_ADDRESS
    assert lab_json["recipient"]["name"] == "Ada Lovelace"


def test_update_address_keeps_the_name_email_and_phone_the_lab_order_holds(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    order = order_at_labs(sandbox_api, two_shipments=True)
    first, second = Shipment.objects.filter(order=order).order_by("lab_code")
    capabilities = Lab.objects.get(code=second.lab_code).capabilities
    Lab.objects.filter(code=second.lab_code).update(capabilities=["cancel"])
    grace = {"name": "Grace Hopper", "email": "grace@example.com", "phoneNumber": "+44 7700 900999"}
    partial = sandbox_api.post(
        f"/v4.0/orders/{order.public_id}/actions/updateRecipient",
        {**grace, "address": NEW_ADDRESS},
        format="json",
    ).json()
    assert partial["outcome"] == "PartiallyUpdated"
    Lab.objects.filter(code=second.lab_code).update(capabilities=[*capabilities, "updateAddress"])
    moved = {
        **NEW_ADDRESS,
        "line1": "3 Loom Lane",
        "townOrCity": "Leeds",
        "postalOrZipCode": "LS1 1AA",
    }

    body = post(staff_api, second, "updateAddress", {"address": moved}).json()

    assert body["success"] is True, body
    # The refused lab order keeps Ada, now at the new address; the order stays Grace's.
    assert Shipment.objects.get(id=second.id).recipient == {**ADA, "address": moved}
    assert staff_api.get(url(second, "maptojson")).json()["recipient"] == {**ADA, "address": moved}
    assert staff_api.get(url(first, "maptojson")).json()["recipient"] == {
        **grace,
        "address": NEW_ADDRESS,
    }
    shown = sandbox_api.get(f"/v4.0/orders/{order.public_id}").json()["order"]["recipient"]
    assert (shown["name"], shown["address"]["line1"]) == ("Grace Hopper", "2 Compiler Close")


def test_update_shipping_method_takes_the_labs_carrier_for_it(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    order = order_at_labs(sandbox_api)
    shipment = only_shipment(order)

    body = post(staff_api, shipment, "updateShippingMethod", {"shippingMethod": "EXPRESS"}).json()

    assert body["success"] is True
    current = Shipment.objects.get(id=shipment.id)
    rate = shipping_rate_for(lab_code=shipment.lab_code, method="Express", country_code="GB")
    assert rate is not None
    assert (current.shipping_method, current.carrier_name, current.carrier_service) == (
        "Express",
        rate.carrier_name,
        rate.carrier_service,
    )
    assert body["result"]["shipment"]["carrier"] == {
        "name": rate.carrier_name,
        "service": rate.carrier_service,
    }
    assert Order.objects.get(id=order.id).shipping_method == "Express"


def test_update_shipping_method_the_lab_does_not_ship_is_unsuccessful(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))
    ShippingRate.objects.filter(lab__code=shipment.lab_code, method="Overnight").delete()

    body = post(staff_api, shipment, "updateShippingMethod", {"shippingMethod": "Overnight"})

    assert body.json()["success"] is False
    assert body.json()["message"] == f"Lab {shipment.lab_code} does not ship Overnight to GB."
    assert Shipment.objects.get(id=shipment.id).shipping_method == "Standard"


@pytest.mark.parametrize(
    ("operation", "body", "failures"),
    [
        ("cancel", {"reason": "x"}, ["reason"]),
        ("hold", [], ["body"]),
        ("unhold", {"now": True}, ["now"]),
        ("updateAddress", {}, ["address"]),
        ("updateAddress", {"address": {"line1": "x"}}, [
            "address.postalOrZipCode", "address.countryCode", "address.townOrCity",
        ]),
        ("updateAddress", {"address": {**NEW_ADDRESS, "countryCode": "XX"}}, [
            "address.countryCode",
        ]),
        ("updateAddress", {"address": NEW_ADDRESS, "extra": 1}, ["extra"]),
        ("updateShippingMethod", {}, ["shippingMethod"]),
        ("updateShippingMethod", {"shippingMethod": "Teleport"}, ["shippingMethod"]),
        ("updateShippingMethod", {"shippingMethod": 3}, ["shippingMethod"]),
        ("updateShippingMethod", "Express", ["body"]),
    ],
)  # fmt: skip
def test_bad_bodies_are_validation_failed_and_change_nothing(
    sandbox_api: APIClient, staff_api: APIClient, operation: str, body: Any, failures: list[str]
) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))
    before = Shipment.objects.filter(id=shipment.id).values().get()

    response = staff_api.post(url(shipment, operation), body, format="json")

    assert response.status_code == 400
    assert response.json()["outcome"] == "ValidationFailed"
    assert sorted(response.json()["data"]["failures"]) == sorted(failures)
    assert Shipment.objects.filter(id=shipment.id).values().get() == before


def test_a_body_that_is_not_json_is_refused(sandbox_api: APIClient, staff_api: APIClient) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))

    response = staff_api.post(url(shipment, "hold"), "x=1", content_type="text/plain")

    assert response.status_code == 415
    assert response.json()["outcome"] == "InvalidContentType"


# --- maptojson ------------------------------------------------------------------------------


def test_maptojson_is_exactly_what_the_connector_sends(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))
    connector = SimulatorConnector(lab_code=shipment.lab_code, capabilities=frozenset())
    expected = connector.map_to_json(lab_order(Shipment.objects.get(id=shipment.id)))

    response = staff_api.get(url(shipment, "maptojson"))

    assert response.status_code == 200
    assert response.json() == {**expected, "items": [dict(i) for i in expected["items"]]}
    assert response.json()["shipment_id"] == shipment.public_id
    assert response.headers["traceParent"].startswith("00-")


def test_maptojson_without_nulls_drops_null_keys_at_every_depth(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))
    Shipment.objects.filter(id=shipment.id).update(
        recipient={**ADA, "address": {**NEW_ADDRESS, "line2": None}}
    )

    with_nulls = staff_api.get(url(shipment, "maptojson")).json()
    without = staff_api.get(url(shipment, "maptojson") + "?includeNulls=false").json()

    assert with_nulls["recipient"]["address"]["line2"] is None
    assert "line2" not in without["recipient"]["address"]
    del with_nulls["recipient"]["address"]["line2"]
    [item] = with_nulls["items"]
    assert item.pop("spine") is None  # a canvas: no spine object
    assert without == with_nulls


def test_maptojson_include_nulls_must_be_a_boolean(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))

    response = staff_api.get(url(shipment, "maptojson") + "?includeNulls=maybe")

    assert response.status_code == 400
    assert list(response.json()["data"]["failures"]) == ["includeNulls"]


# --- audit ----------------------------------------------------------------------------------


def test_every_staff_operation_is_audited(
    sandbox_api: APIClient, staff_api: APIClient, staff_user: Any
) -> None:
    shipment = only_shipment(order_at_labs(sandbox_api))
    Lab.objects.filter(code=shipment.lab_code).update(capabilities=["cancel"])

    post(staff_api, shipment, "hold")
    post(staff_api, shipment, "cancel")
    staff_api.get(url(shipment, "maptojson"))

    entries = list(AuditEntry.objects.order_by("id"))
    target = f"order ord_{shipment.order_id} shipment {shipment.public_id}"
    assert [
        (e.user, e.username, e.operation, e.method, e.target, e.success, e.status_code)
        for e in entries
    ] == [
        (staff_user, "ops", "shipment.hold", "POST", target, False, 200),
        (staff_user, "ops", "shipment.cancel", "POST", target, True, 200),
        (staff_user, "ops", "shipment.maptojson", "GET", target, True, 200),
    ]
    assert entries[0].message == f"Lab {shipment.lab_code} does not support hold."
    assert entries[1].path == url(shipment, "cancel")
    assert all(e.api_key is not None for e in entries)


def test_a_refused_staff_request_is_audited_with_its_error(
    staff_session: APIClient, staff_user: Any
) -> None:
    staff_session.post("/v4.0/orders/ord_1/shipments/shp_2/cancel")

    [entry] = AuditEntry.objects.all()
    assert (entry.user, entry.operation, entry.success, entry.status_code) == (
        staff_user,
        "shipment.cancel",
        False,
        404,
    )
    assert entry.api_key is None
    assert entry.message == "The entity was not found."
