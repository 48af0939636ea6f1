"""The four order actions and GET .../actions: one availability rule, exact outcomes."""

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from labs.capabilities import CAPABILITIES
from labs.models import Lab, ShippingRate
from labs.selectors import shipping_rate_for
from orders.lab_orders import lab_order
from orders.models import (
    Charge,
    ChargeItem,
    ChargeType,
    Order,
    Shipment,
    ShipmentStatus,
    Stage,
)
from orders.pipeline.steps.allocate import order_allocate
from tests.support.orders import book_item, order_body, order_via_api
from webhooks.models import CallbackEvent

pytestmark = pytest.mark.usefixtures("catalogue")


def allocated(api: APIClient, **changes: Any) -> Order:
    order = order_via_api(api, **changes)
    with transaction.atomic():
        assert order_allocate(order=order)
    return order


def act(api: APIClient, order: Order, action: str, body: Any = None) -> Any:
    if body is None:
        return api.post(f"/v4.0/orders/{order.public_id}/actions/{action}")
    return api.post(f"/v4.0/orders/{order.public_id}/actions/{action}", body, format="json")


def availability(api: APIClient, order: Order) -> dict[str, str]:
    body = api.get(f"/v4.0/orders/{order.public_id}/actions").json()
    assert body["outcome"] == "Ok"
    return {k: v["isAvailable"] for k, v in body.items() if isinstance(v, dict)}


NEW_RECIPIENT: dict[str, Any] = {
    "name": "Grace Hopper",
    "email": "grace@example.com",
    "phoneNumber": "+44 7700 900999",
    "address": {
        "line1": "2 Compiler Close",
        "line2": "",
        "postalOrZipCode": "M1 1AA",
        "countryCode": "GB",
        "townOrCity": "Manchester",
        "stateOrCounty": "",
    },
}


def test_a_new_order_offers_every_action(sandbox_api: APIClient) -> None:
    order = order_via_api(sandbox_api)
    assert availability(sandbox_api, order) == {
        "cancel": "Yes",
        "changeRecipientDetails": "Yes",
        "changeShippingMethod": "Yes",
        "changeMetaData": "Yes",
    }


def test_cancel_before_allocation_cancels_without_charges(sandbox_api: APIClient) -> None:
    order = order_via_api(sandbox_api)

    response = act(sandbox_api, order, "cancel")

    body = response.json()
    assert (response.status_code, body["outcome"]) == (200, "Cancelled")
    assert body["order"]["status"]["stage"] == "Cancelled"
    assert body["order"]["charges"] == []
    order.refresh_from_db()
    assert (order.stage, order.pipeline_step, order.due_at) == (Stage.CANCELLED, "Cancelled", None)


def test_cancel_after_allocation_refunds_everything_and_cancels_each_shipment(
    sandbox_api: APIClient,
) -> None:
    order = allocated(sandbox_api, items=[order_body()["items"][0], book_item()])
    charged = sum(c.total_cost for c in Charge.objects.filter(order=order))
    charged_tax = sum(c.total_tax for c in Charge.objects.filter(order=order))

    body = act(sandbox_api, order, "cancel").json()

    assert body["outcome"] == "Cancelled"
    assert len(body["order"]["shipments"]) == 2
    assert all(
        s["cancelled"] is True and s["status"] == "Cancelled" for s in body["order"]["shipments"]
    )
    refund = Charge.objects.get(order=order, charge_type=ChargeType.REFUND)
    assert (refund.total_cost, refund.total_tax) == (-charged, -charged_tax)
    assert refund.total_cost < Decimal(0)
    [shown] = [c for c in body["order"]["charges"] if c["chargeType"] == "Refund"]
    assert shown["totalCost"] == {"amount": f"{-charged:.2f}", "currency": order.currency}


def test_cancel_writes_a_stage_changed_event(sandbox_api: APIClient) -> None:
    order = order_via_api(sandbox_api, callbackUrl="https://hooks.example.com/in")
    act(sandbox_api, order, "cancel")
    [event] = CallbackEvent.objects.filter(subject=order.public_id)
    assert event.event_type == "com.service.order.status.stage.changed#Cancelled"
    assert event.target_url == "https://hooks.example.com/in"


def test_cancel_after_lab_submission_goes_through_the_lab(sandbox_api: APIClient) -> None:
    order = allocated(sandbox_api)
    Shipment.objects.filter(order=order).update(
        submitted_at=timezone.now(), lab_order_reference="SIM-1"
    )

    assert act(sandbox_api, order, "cancel").json()["outcome"] == "Cancelled"


def test_a_lab_that_cannot_cancel_leaves_the_order_in_progress(sandbox_api: APIClient) -> None:
    order = allocated(sandbox_api)
    shipment = Shipment.objects.get(order=order)
    shipment.submitted_at = timezone.now()
    shipment.save()
    Lab.objects.filter(code=shipment.lab_code).update(capabilities=["hold", "unhold"])

    body = act(sandbox_api, order, "cancel").json()

    assert body["outcome"] == "FailedToCancel"
    assert body["order"]["status"]["stage"] == "InProgress"
    assert body["order"]["shipments"][0]["cancelled"] is False
    assert not Charge.objects.filter(order=order, charge_type=ChargeType.REFUND).exists()


def test_cancel_in_production_fails(sandbox_api: APIClient) -> None:
    order = allocated(sandbox_api)
    Shipment.objects.filter(order=order).update(
        submitted_at=timezone.now(), in_production_at=timezone.now()
    )
    before = Order.objects.get(id=order.id).last_updated

    body = act(sandbox_api, order, "cancel").json()

    assert body["outcome"] == "FailedToCancel"
    assert Order.objects.get(id=order.id).stage == Stage.IN_PROGRESS
    assert Order.objects.get(id=order.id).last_updated == before
    assert availability(sandbox_api, order)["changeShippingMethod"] == "No"


@pytest.mark.parametrize("stage", [Stage.CANCELLED, Stage.COMPLETE])
def test_finished_orders_offer_only_metadata(sandbox_api: APIClient, stage: str) -> None:
    order = order_via_api(sandbox_api)
    Order.objects.filter(id=order.id).update(stage=stage)

    assert availability(sandbox_api, order) == {
        "cancel": "No",
        "changeRecipientDetails": "No",
        "changeShippingMethod": "No",
        "changeMetaData": "Yes",
    }
    assert act(sandbox_api, order, "cancel").json()["outcome"] == "ActionNotAvailable"
    shipping = act(sandbox_api, order, "updateShippingMethod", {"shippingMethod": "Express"}).json()
    assert shipping["outcome"] == "ActionNotAvailable"
    assert (
        act(sandbox_api, order, "updateRecipient", NEW_RECIPIENT).json()["outcome"]
        == "ActionNotAvailable"
    )
    assert Order.objects.get(id=order.id).shipping_method == "Standard"


def test_update_shipping_method_before_allocation(sandbox_api: APIClient) -> None:
    order = order_via_api(sandbox_api)
    before = order.last_updated

    body = act(sandbox_api, order, "updateShippingMethod", {"shippingMethod": "express"}).json()

    assert body["outcome"] == "Updated"
    assert body["order"]["shippingMethod"] == "Express"
    assert body["shipmentUpdateResults"] == body["shippingUpdateResults"] == []
    assert Order.objects.get(id=order.id).last_updated > before


def quoted(api: APIClient, order: Order, method: str, country: str = "GB") -> dict[str, str]:
    items = [
        {
            "sku": i.sku,
            "copies": i.copies,
            "attributes": i.attributes,
            "assets": [{"printArea": "default"}],
        }
        for i in order.items.all()
    ]
    body = {"destinationCountryCode": country, "shippingMethod": method, "items": items}
    quote = api.post("/v4.0/quotes", body, format="json").json()["quotes"][0]
    return {
        "Item": quote["costSummary"]["items"]["amount"],
        "Shipping": quote["costSummary"]["shipping"]["amount"],
    }


def charged(api: APIClient, order: Order) -> dict[str, str]:
    charges = api.get(f"/v4.0/orders/{order.public_id}").json()["order"]["charges"]
    return {c["chargeType"]: c["totalCost"]["amount"] for c in charges}


def test_a_new_method_before_lab_submission_plans_the_order_again(sandbox_api: APIClient) -> None:
    order = allocated(sandbox_api)
    old = Shipment.objects.get(order=order)
    assert charged(sandbox_api, order) == quoted(sandbox_api, order, "Standard")

    body = act(sandbox_api, order, "updateShipping", {"shippingMethod": "Express"}).json()

    new = Shipment.objects.get(order=order)
    assert body["outcome"] == "Updated"
    assert body["shipmentUpdateResults"] == [
        {"shipmentId": new.public_id, "successful": True, "errorCode": None, "description": None}
    ]
    assert body["shippingUpdateResults"] == body["shipmentUpdateResults"]
    assert not Shipment.objects.filter(id=old.id).exists()
    assert new.shipping_method == "Express"
    assert charged(sandbox_api, order) == quoted(sandbox_api, order, "Express")


def test_a_new_country_before_lab_submission_moves_the_order_to_a_lab_there(
    sandbox_api: APIClient,
) -> None:
    order = allocated(sandbox_api)
    us = {
        **NEW_RECIPIENT,
        "address": {**NEW_RECIPIENT["address"], "countryCode": "US", "stateOrCounty": "NY"},
    }

    body = act(sandbox_api, order, "updateRecipient", us).json()

    assert body["outcome"] == "Updated"
    [shipment] = body["order"]["shipments"]
    assert shipment["fulfillmentLocation"]["countryCode"] == "US"
    assert charged(sandbox_api, order) == quoted(sandbox_api, order, "Standard", country="US")


def test_changes_wait_while_a_shipment_is_being_submitted(sandbox_api: APIClient) -> None:
    order = allocated(sandbox_api)
    Order.objects.filter(id=order.id).update(pipeline_step="Submit")
    shipment = Shipment.objects.get(order=order)

    body = act(sandbox_api, order, "updateRecipient", NEW_RECIPIENT).json()

    assert body["outcome"] == "FailedToUpdate"
    assert body["shipmentUpdateResults"][0]["shipmentId"] == shipment.public_id
    assert body["shipmentUpdateResults"][0]["errorCode"] == "order.shipments.updateFailed"
    assert Order.objects.get(id=order.id).recipient_name == "Ada Lovelace"


def test_update_shipping_method_partially_and_not_at_all(sandbox_api: APIClient) -> None:
    order = allocated(sandbox_api, items=[order_body()["items"][0], book_item()])
    first, second = Shipment.objects.filter(order=order).order_by("lab_code")
    Shipment.objects.filter(id__in=[first.id, second.id]).update(submitted_at=timezone.now())
    Lab.objects.filter(code=second.lab_code).update(capabilities=["cancel"])

    body = act(sandbox_api, order, "updateShippingMethod", {"shippingMethod": "Express"}).json()

    assert body["outcome"] == "PartiallyUpdated"
    results = {r["shipmentId"]: r for r in body["shipmentUpdateResults"]}
    assert results[first.public_id]["successful"] is True
    assert results[second.public_id] == {
        "shipmentId": second.public_id,
        "successful": False,
        "errorCode": "order.shipments.updateFailed",
        "description": f"Lab {second.lab_code} does not support updateShippingMethod.",
    }
    Lab.objects.filter(code=first.lab_code).update(capabilities=["cancel"])
    again = act(sandbox_api, order, "updateShippingMethod", {"shippingMethod": "Budget"}).json()
    assert again["outcome"] == "FailedToUpdate"
    assert Order.objects.get(id=order.id).shipping_method == "Express"


def test_update_shipping_method_validates_its_body(sandbox_api: APIClient) -> None:
    order = order_via_api(sandbox_api)
    response = act(sandbox_api, order, "updateShippingMethod", {"shippingMethod": "Rocket", "x": 1})
    assert response.status_code == 400
    assert set(response.json()["data"]["failures"]) == {"shippingMethod", "x"}
    missing = act(sandbox_api, order, "updateShippingMethod", {})
    assert missing.json()["data"]["failures"]["shippingMethod"][0]["code"] == "Required"


def test_update_recipient_takes_the_flat_recipient(sandbox_api: APIClient) -> None:
    order = allocated(sandbox_api)

    body = act(sandbox_api, order, "updateRecipient", NEW_RECIPIENT).json()

    assert body["outcome"] == "Updated"
    assert body["order"]["recipient"]["name"] == "Grace Hopper"
    assert body["order"]["recipient"]["address"]["townOrCity"] == "Manchester"
    assert body["order"]["recipient"]["address"]["line2"] is None
    assert [r["successful"] for r in body["shipmentUpdateResults"]] == [True]


def test_update_recipient_validates_the_address(sandbox_api: APIClient) -> None:
    order = order_via_api(sandbox_api)
    bad = {**NEW_RECIPIENT, "address": {**NEW_RECIPIENT["address"], "countryCode": "ZZ"}}
    response = act(sandbox_api, order, "updateRecipient", {"recipient": bad})
    assert response.status_code == 400
    assert {"recipient", "name", "address"} <= set(response.json()["data"]["failures"])
    response = act(sandbox_api, order, "updateRecipient", bad)
    assert list(response.json()["data"]["failures"]) == ["address.countryCode"]
    assert Order.objects.get(id=order.id).recipient_name == "Ada Lovelace"


def test_update_metadata_replaces_it_even_after_completion(sandbox_api: APIClient) -> None:
    order = order_via_api(sandbox_api)
    Order.objects.filter(id=order.id).update(stage=Stage.COMPLETE)
    before = Order.objects.get(id=order.id).last_updated

    body = act(sandbox_api, order, "updatemetadata", {"metadata": {"fresh": True}}).json()

    assert body["outcome"] == "Updated"
    assert body["order"]["metadata"] == {"fresh": True}
    assert Order.objects.get(id=order.id).last_updated > before


def test_update_metadata_requires_an_object_within_the_limit(sandbox_api: APIClient) -> None:
    order = order_via_api(sandbox_api)
    for body, code in (
        ({}, "Required"),
        ({"metadata": "x"}, "NotObject"),
        ({"metadata": {"k": "x" * 2000}}, "TooLong"),
    ):
        response = act(sandbox_api, order, "updateMetadata", body)
        assert response.status_code == 400
        assert response.json()["data"]["failures"]["metadata"][0]["code"] == code
    assert Order.objects.get(id=order.id).metadata == {"channel": "web"}


def test_action_bodies_must_be_json(sandbox_api: APIClient) -> None:
    order = order_via_api(sandbox_api)
    response = sandbox_api.post(
        f"/v4.0/orders/{order.public_id}/actions/updateMetadata",
        "metadata=1",
        content_type="text/plain",
    )
    assert (response.status_code, response.json()["outcome"]) == (415, "InvalidContentType")


def test_unknown_action_is_endpoint_does_not_exist(sandbox_api: APIClient) -> None:
    order = order_via_api(sandbox_api)
    response = act(sandbox_api, order, "teleport")
    assert (response.status_code, response.json()["outcome"]) == (404, "EndpointDoesNotExist")


def test_get_on_an_action_is_method_not_allowed(sandbox_api: APIClient) -> None:
    order = order_via_api(sandbox_api)
    response = sandbox_api.get(f"/v4.0/orders/{order.public_id}/actions/cancel")
    assert (response.status_code, response.json()["outcome"]) == (405, "MethodNotAllowed")


def test_shipped_shipments_cannot_be_changed(sandbox_api: APIClient) -> None:
    order = allocated(sandbox_api)
    Shipment.objects.filter(order=order).update(
        status=ShipmentStatus.SHIPPED, submitted_at=timezone.now()
    )
    assert availability(sandbox_api, order)["changeRecipientDetails"] == "No"
    assert (
        act(sandbox_api, order, "updateRecipient", NEW_RECIPIENT).json()["outcome"]
        == "ActionNotAvailable"
    )
    assert act(sandbox_api, order, "cancel").json()["outcome"] == "FailedToCancel"


def test_a_method_no_lab_offers_to_the_destination_is_refused(sandbox_api: APIClient) -> None:
    order = order_via_api(sandbox_api, items=[book_item()])

    response = act(sandbox_api, order, "updateShippingMethod", {"shippingMethod": "Overnight"})

    assert response.status_code == 400
    assert response.json()["data"]["failures"]["shippingMethod"][0]["code"] == "MethodNotOffered"
    assert Order.objects.get(id=order.id).shipping_method == "Standard"


def test_moving_to_a_country_the_method_cannot_reach_is_refused(sandbox_api: APIClient) -> None:
    order = order_via_api(sandbox_api, items=[book_item()], shippingMethod="Budget")
    far = {**NEW_RECIPIENT, "address": {**NEW_RECIPIENT["address"], "countryCode": "AU"}}

    response = act(sandbox_api, order, "updateRecipient", far)

    assert response.status_code == 400
    failures = response.json()["data"]["failures"]
    assert failures["address.countryCode"][0]["code"] == "MethodNotOffered"
    assert Order.objects.get(id=order.id).address_country_code == "GB"


def test_a_partial_cancel_refunds_and_reports_only_the_cancelled_shipment(
    sandbox_api: APIClient,
) -> None:
    order = allocated(
        sandbox_api,
        items=[order_body()["items"][0], book_item()],
        callbackUrl="https://h.example.com/",
    )
    first, second = Shipment.objects.filter(order=order).order_by("lab_code")
    Shipment.objects.filter(order=order).update(submitted_at=timezone.now())
    Lab.objects.filter(code=second.lab_code).update(capabilities=["hold"])
    first_lines = [i.id for i in first.items.all()]

    body = act(sandbox_api, order, "cancel").json()

    assert body["outcome"] == "FailedToCancel"
    assert {s["id"]: s["cancelled"] for s in body["order"]["shipments"]} == {
        first.public_id: True,
        second.public_id: False,
    }
    refund = Charge.objects.get(order=order, charge_type=ChargeType.REFUND)
    refunded = {(line.item_id, line.shipment_id) for line in refund.items.all()}
    assert refunded == {*((i, None) for i in first_lines), (None, first.id)}
    events = list(
        CallbackEvent.objects.filter(subject=order.public_id).values_list("event_type", flat=True)
    )
    assert events == ["com.service.order.shipments.shipment#Cancelled"]


def test_a_full_cancel_reports_every_shipment_then_the_stage(sandbox_api: APIClient) -> None:
    order = allocated(
        sandbox_api,
        items=[order_body()["items"][0], book_item()],
        callbackUrl="https://h.example.com/",
    )

    act(sandbox_api, order, "cancel")

    events = list(
        CallbackEvent.objects.filter(subject=order.public_id)
        .order_by("sequence")
        .values_list("event_type", flat=True)
    )
    assert events == [
        "com.service.order.shipments.shipment#Cancelled",
        "com.service.order.shipments.shipment#Cancelled",
        "com.service.order.status.stage.changed#Cancelled",
    ]


def test_production_started_at_the_lab_but_not_yet_polled_blocks_the_action_which_records_it(
    sandbox_api: APIClient, settings: Any
) -> None:
    settings.LAB_SIMULATOR_SECONDS = 60
    order = allocated(sandbox_api)
    # The simulator starts production half-way; the pipeline has not asked it since.
    Shipment.objects.filter(order=order).update(submitted_at=timezone.now() - timedelta(seconds=40))

    # GET .../actions shows what is recorded (it asks no lab); the action asks the lab first,
    # and what it heard is recorded, so GET .../actions shows it from then on.
    assert availability(sandbox_api, order)["changeShippingMethod"] == "Yes"
    assert Shipment.objects.get(order=order).in_production_at is None
    assert act(sandbox_api, order, "cancel").json()["outcome"] == "FailedToCancel"
    assert Shipment.objects.get(order=order).in_production_at is not None
    assert availability(sandbox_api, order)["changeShippingMethod"] == "No"


def test_a_new_method_after_submission_reprices_each_shipment_that_took_it(
    sandbox_api: APIClient,
) -> None:
    order = allocated(sandbox_api, items=[order_body()["items"][0], book_item()])
    first, second = Shipment.objects.filter(order=order).order_by("lab_code")
    Shipment.objects.filter(order=order).update(submitted_at=timezone.now())
    ShippingRate.objects.filter(lab__code=second.lab_code, method="Express").delete()
    standard = shipping_rate_for(lab_code=first.lab_code, method="Standard", country_code="GB")
    express = shipping_rate_for(lab_code=first.lab_code, method="Express", country_code="GB")
    assert standard is not None and express is not None
    extra = express.price - standard.price

    body = act(sandbox_api, order, "updateShippingMethod", {"shippingMethod": "Express"}).json()

    assert body["outcome"] == "PartiallyUpdated"
    assert body["shipmentUpdateResults"] == [
        {"shipmentId": first.public_id, "successful": True, "errorCode": None, "description": None},
        {
            "shipmentId": second.public_id,
            "successful": False,
            "errorCode": "order.shipments.updateFailed",
            "description": f"Lab {second.lab_code} does not ship Express to GB.",
        },
    ]
    shown = {s["id"]: s for s in body["order"]["shipments"]}
    assert shown[first.public_id]["carrier"] == {
        "name": express.carrier_name,
        "service": express.carrier_service,
    }
    assert shown[second.public_id]["carrier"] == {
        "name": second.carrier_name,
        "service": second.carrier_service,
    }
    assert body["order"]["shippingMethod"] == "Express"
    assert [(s.public_id, s.shipping_method) for s in Shipment.objects.filter(order=order)] == [
        (first.public_id, "Express"),
        (second.public_id, "Standard"),
    ]
    adjustment = Charge.objects.filter(order=order, charge_type=ChargeType.SHIPPING).last()
    assert adjustment is not None
    assert [(line.shipment_id, line.cost, line.tax) for line in adjustment.items.all()] == [
        (first.id, extra, (extra * Decimal("0.2")).quantize(Decimal("0.01")))
    ]
    assert body["order"]["charges"][-1]["totalCost"] == {"amount": f"{extra}", "currency": "GBP"}


def test_a_staff_method_change_reprices_and_a_later_cancel_refunds_the_new_price(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    order = allocated(sandbox_api)
    shipment = Shipment.objects.get(order=order)
    Shipment.objects.filter(id=shipment.id).update(
        submitted_at=timezone.now(), lab_order_reference="SIM-1"
    )
    express = shipping_rate_for(lab_code=shipment.lab_code, method="Express", country_code="GB")
    assert express is not None
    base = f"/v4.0/orders/{order.public_id}/shipments/{shipment.public_id}"

    changed = staff_api.post(
        f"{base}/updateShippingMethod", {"shippingMethod": "Express"}, format="json"
    )
    cancelled = staff_api.post(f"{base}/cancel")

    assert changed.json()["success"] is True
    assert cancelled.json()["success"] is True
    assert Order.objects.get(id=order.id).shipping_method == "Express"
    shipping = list(
        ChargeItem.objects.filter(
            charge__order=order, shipment=shipment, item__isnull=True
        ).values_list("charge__charge_type", "cost")
    )
    assert [t for t, _ in shipping] == [ChargeType.SHIPPING, ChargeType.SHIPPING] + [
        ChargeType.REFUND
    ] * 2
    charged = sum(c for t, c in shipping if t == ChargeType.SHIPPING)
    refunded = sum(c for t, c in shipping if t == ChargeType.REFUND)
    assert (charged, refunded) == (express.price, -express.price)


def test_actions_of_an_order_in_production_say_cancel_would_fail(sandbox_api: APIClient) -> None:
    order = allocated(sandbox_api, items=[order_body()["items"][0], book_item()])
    first, second = Shipment.objects.filter(order=order).order_by("lab_code")
    Shipment.objects.filter(order=order).update(submitted_at=timezone.now())
    Shipment.objects.filter(id=first.id).update(in_production_at=timezone.now())
    Lab.objects.update(capabilities=list(CAPABILITIES))

    shown = availability(sandbox_api, order)
    cancel = act(sandbox_api, order, "cancel").json()

    assert shown == {
        "cancel": "No",
        "changeRecipientDetails": "Yes",
        "changeShippingMethod": "Yes",
        "changeMetaData": "Yes",
    }
    assert cancel["outcome"] == "FailedToCancel"
    Shipment.objects.filter(id=second.id).update(in_production_at=timezone.now())
    assert availability(sandbox_api, order) == {
        "cancel": "No",
        "changeRecipientDetails": "No",
        "changeShippingMethod": "No",
        "changeMetaData": "Yes",
    }


def test_actions_follow_what_the_shipments_labs_can_do(sandbox_api: APIClient) -> None:
    order = allocated(sandbox_api)
    shipment = Shipment.objects.get(order=order)
    Shipment.objects.filter(id=shipment.id).update(submitted_at=timezone.now())
    Lab.objects.filter(code=shipment.lab_code).update(capabilities=["updateAddress"])

    shown = availability(sandbox_api, order)
    cancel = act(sandbox_api, order, "cancel").json()
    method = act(sandbox_api, order, "updateShippingMethod", {"shippingMethod": "Express"}).json()

    assert shown == {
        "cancel": "No",
        "changeRecipientDetails": "Yes",
        "changeShippingMethod": "No",
        "changeMetaData": "Yes",
    }
    assert (cancel["outcome"], method["outcome"]) == ("FailedToCancel", "FailedToUpdate")


def test_a_refused_update_recipient_leaves_that_shipment_the_whole_recipient_its_lab_holds(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    order = allocated(sandbox_api, items=[order_body()["items"][0], book_item()])
    first, second = Shipment.objects.filter(order=order).order_by("lab_code")
    Shipment.objects.filter(id__in=[first.id, second.id]).update(
        submitted_at=timezone.now(), lab_order_reference="SIM-1"
    )
    Lab.objects.filter(code=second.lab_code).update(capabilities=["cancel"])
    old_recipient = order_body()["recipient"]

    body = act(sandbox_api, order, "updateRecipient", NEW_RECIPIENT).json()

    assert body["outcome"] == "PartiallyUpdated"
    assert [(r["shipmentId"], r["successful"]) for r in body["shipmentUpdateResults"]] == [
        (first.public_id, True),
        (second.public_id, False),
    ]
    # The merchant sees the order's recipient: the new one, and no shipment shows another.
    shown = sandbox_api.get(f"/v4.0/orders/{order.public_id}").json()["order"]
    assert (
        shown["recipient"]
        == body["order"]["recipient"]
        == {
            **NEW_RECIPIENT,
            "address": {**NEW_RECIPIENT["address"], "line2": None, "stateOrCounty": None},
        }
    )
    assert all("recipient" not in s and "address" not in s for s in shown["shipments"])
    # Each lab order keeps the whole recipient its lab holds.
    assert Shipment.objects.get(id=second.id).recipient == old_recipient
    assert Shipment.objects.get(id=first.id).recipient is None  # follows the order's
    mapped = staff_api.get(
        f"/v4.0/orders/{order.public_id}/shipments/{second.public_id}/maptojson"
    ).json()
    took = staff_api.get(
        f"/v4.0/orders/{order.public_id}/shipments/{first.public_id}/maptojson"
    ).json()
    assert mapped["recipient"] == old_recipient
    assert took["recipient"] == NEW_RECIPIENT


def test_a_later_update_recipient_the_refusing_lab_takes_makes_its_shipment_follow_the_order(
    sandbox_api: APIClient,
) -> None:
    order = allocated(sandbox_api, items=[order_body()["items"][0], book_item()])
    first, second = Shipment.objects.filter(order=order).order_by("lab_code")
    Shipment.objects.filter(id__in=[first.id, second.id]).update(
        submitted_at=timezone.now(), lab_order_reference="SIM-1"
    )
    capabilities = Lab.objects.get(code=second.lab_code).capabilities
    Lab.objects.filter(code=second.lab_code).update(capabilities=["cancel"])
    assert act(sandbox_api, order, "updateRecipient", NEW_RECIPIENT).json()["outcome"] == (
        "PartiallyUpdated"
    )
    Lab.objects.filter(code=second.lab_code).update(capabilities=[*capabilities, "updateAddress"])
    third = {**NEW_RECIPIENT, "name": "Katherine Johnson"}

    body = act(sandbox_api, order, "updateRecipient", third).json()

    assert body["outcome"] == "Updated"
    assert list(Shipment.objects.filter(order=order).values_list("recipient", flat=True)) == [
        None,
        None,
    ]
    assert lab_order(Shipment.objects.get(id=second.id)).recipient == third
