"""``orders.resubmission``: a shipment resubmitted as a new one, called directly with orders
made by the factories (the bulk tool's rows call it once each: tests/backoffice)."""

import json
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from labs.connectors import connector_for
from labs.models import Lab, LabProduct, ShippingRate, SimulatedLabOrder
from orders.lab_orders import lab_order
from orders.models import (
    CancelOption,
    DetailState,
    Order,
    OrderIssue,
    OrderItem,
    PipelineStep,
    Shipment,
    ShipmentResubmission,
    ShipmentStatus,
    Stage,
)
from orders.resubmission import (
    RESUBMISSION_CANCEL,
    Resubmission,
    ResubmissionOffer,
    ShipmentStanding,
    shipment_resubmission_offer,
    shipment_resubmit,
    shipments_standing,
)
from orders.shipments import shipment_method_plan
from tests.orders.factories import PREPARED, OrderFactory, OrderItemFactory, ShipmentFactory
from tests.support.orders import events_of
from tests.support.pipeline import run_in_process

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]


def _at_its_lab(**order: Any) -> Shipment:
    """A shipment its lab (gb1, simulated) accepted, of an order made by ``order``."""
    made = OrderFactory.create(**order)
    return ShipmentFactory.create(order=made, submitted=True)


def _new_shipment(done: Resubmission) -> Shipment:
    assert done.new_shipment_id is not None
    return Shipment.objects.get(id=done.new_shipment_id)


@pytest.mark.parametrize(
    "order",
    [
        {"pipeline_step": PipelineStep.FAILED, "in_production": DetailState.ERROR, **PREPARED},
        {"complete": True},
    ],
    ids=["failed", "done"],
)
def test_a_failed_or_done_order_is_moved_back_to_production_to_follow_its_new_lab_order(
    order: dict[str, Any],
) -> None:
    original = _at_its_lab(**order)
    item_ids = set(original.items.values_list("id", flat=True))

    done = shipment_resubmit(
        shipment_id=original.id, labs=["us1"], cancel_option=CancelOption.KEEP_ORIGINAL
    )

    assert done.successful, done.message
    new = _new_shipment(done)
    assert done.message.startswith(f"Resubmitted as {new.public_id} at us1.")
    assert (new.lab_code, new.status, new.submitted_at is not None) == ("us1", "Processing", True)
    assert new.lab_order_reference == f"SIM-US1-{new.id}"
    assert set(new.items.values_list("id", flat=True)) == item_ids
    row = Order.objects.get(id=original.order_id)
    assert row.pipeline_step == PipelineStep.PRODUCTION
    assert row.claimed_until is None
    assert row.due_at is not None and row.due_at <= timezone.now()
    # The original was kept, as asked.
    assert Shipment.objects.get(id=original.id).status == ShipmentStatus.PROCESSING


def test_an_order_still_in_production_keeps_its_step_and_due_time() -> None:
    original = _at_its_lab(producing=True, due_at=timezone.now() + timedelta(hours=1))
    before = Order.objects.get(id=original.order_id)

    done = shipment_resubmit(shipment_id=original.id, labs=["us1"])

    assert done.successful, done.message
    assert "Original cancelled." in done.message
    row = Order.objects.get(id=original.order_id)
    assert (row.pipeline_step, row.due_at, row.stage) == (
        PipelineStep.PRODUCTION,
        before.due_at,
        Stage.IN_PROGRESS,
    )
    assert row.last_updated > before.last_updated
    assert Shipment.objects.get(id=original.id).status == ShipmentStatus.CANCELLED


def test_a_second_call_answers_with_the_first_resubmission_and_sends_nothing_again() -> None:
    original = _at_its_lab(producing=True)
    first = shipment_resubmit(shipment_id=original.id, labs=["us1"])

    again = shipment_resubmit(shipment_id=original.id, labs=["gb1"])

    assert again == Resubmission(
        True, f"Already resubmitted as shp_{first.new_shipment_id}.", first.new_shipment_id
    )
    assert Shipment.objects.filter(order_id=original.order_id).count() == 2
    assert ShipmentResubmission.objects.get().lab_code == "us1"


def test_a_shipped_shipment_is_not_resubmitted_but_to_reprint_nor_an_unknown_one() -> None:
    shipped = ShipmentFactory.create(order=OrderFactory.create(complete=True), shipped=True)

    for option in (CancelOption.CANCEL_ORIGINAL, CancelOption.CANCEL_IF_POSSIBLE):
        assert shipment_resubmit(shipment_id=shipped.id, cancel_option=option) == Resubmission(
            False, "Already shipped: use KeepOriginal to reprint"
        )
    assert shipment_resubmit(shipment_id=999) == Resubmission(False, "No shipment shp_999.")
    assert not ShipmentResubmission.objects.exists()
    assert Shipment.objects.count() == 1


def test_no_allowed_lab_that_makes_the_items_is_a_refusal_that_leaves_the_original() -> None:
    original = _at_its_lab(producing=True)

    done = shipment_resubmit(shipment_id=original.id, labs=["nolab"])

    assert not done.successful
    assert done.message.startswith("No allowed lab (nolab) can make the shipment:")
    assert Shipment.objects.get(id=original.id).status == ShipmentStatus.PROCESSING
    assert not ShipmentResubmission.objects.exists()


HELD_BY_ITS_LAB = {
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "phoneNumber": "+44 7700 900123",
    "address": {
        "line1": "1 Analytical Row",
        "line2": "Flat 2",
        "postalOrZipCode": "SW1A 1AA",
        "countryCode": "GB",
        "townOrCity": "London",
        "stateOrCounty": "Greater London",
    },
}


def test_a_shipment_holding_a_recipient_of_its_own_is_resubmitted_to_it_whole() -> None:
    """As a refused ``updateRecipient`` leaves it: the order moved on to Grace in Manchester,
    its lab kept Ada in London."""
    original = _at_its_lab(
        producing=True,
        recipient_name="Grace Hopper",
        recipient_email="grace@example.com",
        address_town_or_city="Manchester",
        address_postal_or_zip_code="M1 1AA",
    )
    Shipment.objects.filter(id=original.id).update(recipient=HELD_BY_ITS_LAB)

    done = shipment_resubmit(shipment_id=original.id, labs=["us1"])

    assert done.successful, done.message
    new = _new_shipment(done)
    assert new.recipient == HELD_BY_ITS_LAB
    assert lab_order(new).recipient == HELD_BY_ITS_LAB
    assert Order.objects.get(id=original.order_id).recipient_name == "Grace Hopper"


def test_a_lab_that_refuses_leaves_an_issue_on_the_original_and_the_record_for_a_retry() -> None:
    Lab.objects.filter(code="us1").update(simulator_failure_share=1)
    original = _at_its_lab(producing=True)

    done = shipment_resubmit(
        shipment_id=original.id, labs=["us1"], cancel_option=CancelOption.KEEP_ORIGINAL
    )

    assert not done.successful
    assert done.message == "Lab us1 refused: Simulated rejection by lab us1."
    issue = OrderIssue.objects.get(order_id=original.order_id)
    assert (issue.object_id, issue.error_code) == (
        original.public_id,
        "order.shipments.SubmissionFailed",
    )
    record = ShipmentResubmission.objects.get(original=original)
    assert record.submitted_at is None
    assert not Shipment.objects.filter(id=record.new_shipment_id).exists()


def test_standing_reads_each_shipment_as_a_resubmission_would_find_it(
    django_assert_max_num_queries: Any,
) -> None:
    open_one = _at_its_lab(producing=True)
    shipped = ShipmentFactory.create(order=OrderFactory.create(complete=True), shipped=True)
    resubmitted = _at_its_lab(producing=True)
    cancelled = _at_its_lab(cancelled=True)
    done = shipment_resubmit(shipment_id=resubmitted.id, labs=["us1"])
    assert done.successful

    shipments = list(
        Shipment.objects.filter(id__in=[open_one.id, shipped.id, resubmitted.id, cancelled.id])
        .select_related("order")
        .order_by("id")
    )

    with django_assert_max_num_queries(1):  # the resubmissions; the shipments are given
        standing = shipments_standing(shipments=shipments)

    assert set(standing) == {open_one.id, shipped.id, resubmitted.id, cancelled.id}
    assert standing[open_one.id] == ShipmentStanding(
        shipped=False, order_cancelled=False, resubmitted_as=None
    )
    assert standing[shipped.id].shipped is True
    assert standing[resubmitted.id].resubmitted_as == done.new_shipment_id
    assert standing[cancelled.id].order_cancelled is True


def test_a_resubmission_adds_no_charge_and_records_the_lab_cost_for_the_service() -> None:
    original = _at_its_lab(producing=True)
    charges_before = list(original.order.charges.values_list("id", flat=True))
    offer = shipment_resubmission_offer(shipment=original, labs=["us1"])
    assert isinstance(offer, ResubmissionOffer)

    done = shipment_resubmit(shipment_id=original.id, labs=["us1"])

    assert done.successful, done.message
    assert list(original.order.charges.values_list("id", flat=True)) == charges_before
    record = ShipmentResubmission.objects.get(original=original)
    assert (record.lab_code, record.lab_cost, record.plan["currency"]) == (
        offer.lab_code,
        offer.cost,
        offer.currency,
    )
    # What the lab charges the service: its prices, not the merchant's price with its tax.
    taxes = Decimal(record.plan["shipping"][1]) + sum(
        Decimal(tax) for _cost, tax in record.plan["items"].values()
    )
    assert taxes > 0 and offer.cost == Decimal(record.plan["total"]) - taxes
    assert done.message.endswith(
        f"Lab cost {offer.cost} {offer.currency} (the service's); no charge to the merchant."
    )


def test_an_order_that_is_cancelled_is_not_resubmitted_and_nothing_is_written() -> None:
    original = _at_its_lab(cancelled=True)

    done = shipment_resubmit(shipment_id=original.id, labs=["us1"])

    assert done == Resubmission(False, "Order cancelled: a cancelled order is not resubmitted.")
    assert not ShipmentResubmission.objects.exists()
    assert Shipment.objects.filter(order=original.order).count() == 1


def test_a_lab_that_does_not_make_the_product_is_told_apart_from_one_that_cannot_deliver() -> None:
    original = _at_its_lab(producing=True)
    sku = OrderItem.objects.filter(shipment=original).values_list("sku", flat=True).get()
    makes = set(LabProduct.objects.filter(product__sku=sku).values_list("lab__code", flat=True))
    other = Lab.objects.filter(is_active=True).exclude(code__in=makes).order_by("code").first()
    assert other is not None

    not_made = shipment_resubmission_offer(shipment=original, labs=[other.code])
    ShippingRate.objects.filter(lab__code=original.lab_code).delete()
    not_delivered = shipment_resubmission_offer(shipment=original, labs=[original.lab_code])

    assert not_made == (
        f"No allowed lab ({other.code}) can make the shipment: "
        f"{sku} is not made by lab {other.code}."
    )
    assert not_delivered == (
        f"No allowed lab ({original.lab_code}) can make the shipment: "
        f"{sku} cannot be delivered to GB."
    )


def test_the_offer_is_the_plan_the_resubmission_makes_or_why_none() -> None:
    original = _at_its_lab(producing=True)
    Lab.objects.filter(code="us1").update(is_active=True)

    offer = shipment_resubmission_offer(shipment=original, labs=["us1"])
    nowhere = shipment_resubmission_offer(shipment=original, labs=["zz9"])

    assert isinstance(offer, ResubmissionOffer) and offer.lab_code == "us1"
    assert isinstance(nowhere, str)
    assert nowhere.startswith("No allowed lab (zz9) can make the shipment: ")
    assert nowhere.endswith(".") and not nowhere.endswith("..")
    done = shipment_resubmit(shipment_id=original.id, labs=["us1"])
    assert _new_shipment(done).lab_code == offer.lab_code


def test_a_reprint_of_a_complete_order_is_followed_to_shipped(settings: Any) -> None:
    settings.LAB_SIMULATOR_SECONDS = 0.2
    order = OrderFactory.create(complete=True)
    first = order.items.get()
    second = OrderItemFactory.create(order=order)
    ShipmentFactory.create(order=order, shipped=True, items=[first])
    lost = ShipmentFactory.create(
        order=order, submitted=True, status=ShipmentStatus.CANCELLED, items=[second]
    )

    done = shipment_resubmit(
        shipment_id=lost.id, labs=["us1"], cancel_option=CancelOption.KEEP_ORIGINAL
    )

    assert done.successful, done.message
    assert Order.objects.get(id=order.id).pipeline_step == PipelineStep.PRODUCTION
    finished = run_in_process(order.public_id)
    reprint = _new_shipment(done)
    assert (reprint.status, reprint.lab_code) == (ShipmentStatus.SHIPPED, "us1")
    assert reprint.tracking_number and reprint.dispatch_date is not None
    assert (finished.stage, finished.pipeline_step) == (Stage.COMPLETE, PipelineStep.DONE)
    second.refresh_from_db()
    assert second.shipment_id == reprint.id


def _killed_after_the_lab_call(original: Shipment, lab: str) -> ShipmentResubmission:
    """What a worker killed during the new lab order's submission leaves: the resubmission
    recorded, the lab's order made, its answer never recorded."""
    Lab.objects.filter(code=lab).update(simulator_failure_share=1)  # the first call refused
    shipment_resubmit(shipment_id=original.id, labs=[lab], cancel_option=CancelOption.KEEP_ORIGINAL)
    Lab.objects.filter(code=lab).update(simulator_failure_share=0)
    record = ShipmentResubmission.objects.get(original=original)
    payload = replace(
        lab_order(original), shipment_id=f"shp_{record.new_shipment_id}", lab_code=lab
    )
    assert connector_for(lab_code=lab, sandbox=True).submit(payload).successful
    return record


def test_a_resumed_resubmission_adopts_the_lab_order_its_lost_call_made() -> None:
    original = _at_its_lab(producing=True)
    record = _killed_after_the_lab_call(original, "us1")

    done = shipment_resubmit(
        shipment_id=original.id, labs=["us1"], cancel_option=CancelOption.KEEP_ORIGINAL
    )

    assert done.successful, done.message
    new = _new_shipment(done)
    assert new.id == record.new_shipment_id
    assert new.lab_order_reference == f"SIM-US1-{new.id}"
    # The lab was asked once for it: the second run found the order and adopted it.
    lab_orders = SimulatedLabOrder.objects.filter(shipment_id=new.public_id)
    assert list(lab_orders.values_list("submissions", flat=True)) == [1]


def test_a_resumed_cancel_of_the_original_that_the_lab_made_is_a_cancel_done() -> None:
    """A worker killed after the lab cancelled the original, before recording it: the intent
    is left; the next run sends the cancel again (the lab takes it as done) and goes on."""
    original = _at_its_lab(producing=True)
    Shipment.objects.filter(id=original.id).update(
        lab_operation=RESUBMISSION_CANCEL, lab_operation_since=timezone.now()
    )

    done = shipment_resubmit(
        shipment_id=original.id, labs=["us1"], cancel_option=CancelOption.CANCEL_ORIGINAL
    )

    assert done.successful, done.message
    assert "Original cancelled." in done.message
    stored = Shipment.objects.get(id=original.id)
    assert (stored.status, stored.lab_operation, stored.lab_operation_since) == (
        ShipmentStatus.CANCELLED, "", None,
    )  # fmt: skip


def _event_types(order: Order) -> list[str]:
    return [e["type"].removeprefix("com.service.order.") for e in events_of(order.public_id)]


def test_a_shipped_shipment_is_reprinted_with_keep_original_and_keeps_its_items(
    settings: Any,
) -> None:
    settings.LAB_SIMULATOR_SECONDS = 0.2
    order = OrderFactory.create(complete=True)
    lost = ShipmentFactory.create(order=order, shipped=True)
    items = list(lost.items.values_list("id", flat=True))
    charges = list(order.charges.values_list("id", "total_cost"))

    done = shipment_resubmit(
        shipment_id=lost.id, labs=["us1"], cancel_option=CancelOption.KEEP_ORIGINAL
    )

    assert done.successful, done.message
    reprint = _new_shipment(done)
    assert done.message.startswith(f"Reprinted as {reprint.public_id} at us1. Lab cost ")
    assert done.message.endswith("(the service's); no charge to the merchant.")
    assert (reprint.reprint_of_id, reprint.status, reprint.lab_code) == (
        lost.id,
        ShipmentStatus.PROCESSING,
        "us1",
    )
    assert list(reprint.items.all()) == []  # the items stay with the shipment that shipped them
    assert list(lost.items.values_list("id", flat=True)) == items
    assert Shipment.objects.get(id=lost.id).status == ShipmentStatus.SHIPPED
    assert [item.item_id for item in lab_order(reprint).items] == [f"ori_{i}" for i in items]
    simulated = SimulatedLabOrder.objects.get(shipment_id=reprint.public_id)
    assert simulated.lab_code == "us1"
    shown = json.loads(Order.objects.get(id=order.id).document)  # as GET sends it
    assert [s["id"] for s in shown["shipments"]] == [lost.public_id, reprint.public_id]
    assert shown["shipments"][1]["items"] == shown["shipments"][0]["items"] != []
    row = Order.objects.get(id=order.id)
    assert (row.stage, row.pipeline_step) == (Stage.COMPLETE, PipelineStep.PRODUCTION)
    assert (row.in_production, row.shipping) == (DetailState.COMPLETE, DetailState.COMPLETE)

    finished = run_in_process(order.public_id)

    reprint.refresh_from_db()
    assert reprint.status == ShipmentStatus.SHIPPED
    assert reprint.tracking_number and reprint.tracking_number != lost.tracking_number
    assert (finished.stage, finished.pipeline_step, finished.due_at) == (
        Stage.COMPLETE,
        PipelineStep.DONE,
        None,
    )
    assert (finished.in_production, finished.shipping) == (
        DetailState.COMPLETE,
        DetailState.COMPLETE,
    )
    # Its shipment callbacks, and no second stage callback: the order stayed Complete.
    assert _event_types(order) == ["shipments.shipment#Processing", "shipments.shipment#Shipped"]
    assert list(order.charges.values_list("id", "total_cost")) == charges


def test_a_reprint_is_priced_for_another_shipping_method_by_the_items_it_reprints() -> None:
    order = OrderFactory.create(complete=True)
    lost = ShipmentFactory.create(order=order, shipped=True)
    done = shipment_resubmit(
        shipment_id=lost.id, labs=["us1"], cancel_option=CancelOption.KEEP_ORIGINAL
    )
    reprint = _new_shipment(done)

    plan = shipment_method_plan(shipment=reprint, shipping_method="Express")

    # Staff's updateShippingMethod plans with the items the reprint makes (they stay on the
    # shipment that shipped), not "The shipment has no items."
    assert not isinstance(plan, str), plan
    assert plan.lab_code == "us1" and plan.shipping_method == "Express"


def test_a_reprint_resubmitted_is_a_reprint_of_the_same_shipped_shipment() -> None:
    order = OrderFactory.create(complete=True)
    lost = ShipmentFactory.create(order=order, shipped=True)
    first = _new_shipment(
        shipment_resubmit(
            shipment_id=lost.id, labs=["us1"], cancel_option=CancelOption.KEEP_ORIGINAL
        )
    )

    done = shipment_resubmit(shipment_id=first.id, labs=["gb1"])

    assert done.successful, done.message
    again = _new_shipment(done)
    assert done.message.startswith(f"Reprinted as {again.public_id} at gb1. Original cancelled.")
    assert again.reprint_of_id == lost.id
    assert Shipment.objects.get(id=first.id).status == ShipmentStatus.CANCELLED
    assert list(lost.items.all()) != [] and list(again.items.all()) == []


def _failed_at_its_lab(order: Order, *, lab_code: str = "gb1") -> Shipment:
    """A shipment its lab reported failed, as the production step records it."""
    shipment = ShipmentFactory.create(order=order, submitted=True, lab_code=lab_code)
    Shipment.objects.filter(id=shipment.id).update(lab_ended_at=timezone.now())
    OrderIssue.objects.create(
        order=order,
        object_id=shipment.public_id,
        error_code="order.shipments.LabError",
        description="Simulated production failure at lab gb1.",
    )
    shipment.refresh_from_db()
    return shipment


@pytest.mark.parametrize("option", [CancelOption.KEEP_ORIGINAL, CancelOption.CANCEL_ORIGINAL])
def test_a_lab_failed_shipment_resubmitted_either_way_is_closed_and_its_order_completes(
    settings: Any, option: str
) -> None:
    settings.LAB_SIMULATOR_SECONDS = 0.2
    order = OrderFactory.create(
        pipeline_step=PipelineStep.FAILED, in_production=DetailState.ERROR, **PREPARED
    )
    failed = _failed_at_its_lab(order)

    done = shipment_resubmit(shipment_id=failed.id, labs=["us1"], cancel_option=option)

    assert done.successful, done.message
    assert done.message.startswith("Resubmitted as ")
    new = _new_shipment(done)
    assert new.reprint_of_id is None
    assert Shipment.objects.get(id=failed.id).status == ShipmentStatus.CANCELLED
    row = Order.objects.get(id=order.id)
    assert (row.pipeline_step, row.stage) == (PipelineStep.PRODUCTION, Stage.IN_PROGRESS)
    assert row.in_production == DetailState.IN_PROGRESS
    assert not OrderIssue.objects.filter(order=order).exists()
    assert _event_types(order) == ["shipments.shipment#Cancelled", "shipments.shipment#Processing"]

    finished = run_in_process(order.public_id)

    assert (finished.stage, finished.pipeline_step) == (Stage.COMPLETE, PipelineStep.DONE)
    assert (finished.in_production, finished.shipping) == (
        DetailState.COMPLETE,
        DetailState.COMPLETE,
    )
    assert _event_types(order)[2:] == [
        "shipments.shipment#Shipped",
        "status.stage.changed#Complete",
    ]


def test_in_production_stays_error_while_another_lab_failed_shipment_waits() -> None:
    order = OrderFactory.create(
        pipeline_step=PipelineStep.FAILED, in_production=DetailState.ERROR, **PREPARED
    )
    one = _failed_at_its_lab(order)  # with the order's item
    OrderItemFactory.create(order=order)
    other = _failed_at_its_lab(order)  # with the second

    first = shipment_resubmit(
        shipment_id=one.id, labs=["us1"], cancel_option=CancelOption.KEEP_ORIGINAL
    )

    assert first.successful, first.message
    assert Order.objects.get(id=order.id).in_production == DetailState.ERROR
    second = shipment_resubmit(
        shipment_id=other.id, labs=["us1"], cancel_option=CancelOption.KEEP_ORIGINAL
    )
    assert second.successful, second.message
    assert Order.objects.get(id=order.id).in_production == DetailState.IN_PROGRESS
