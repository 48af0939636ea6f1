"""Shipment operations as the pipeline sees them: a held shipment does not ship while the
order's other shipment does; a cancelled one is no longer followed."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from labs.connectors import LabResult
from labs.connectors.simulator import SimulatorConnector
from orders.actions import order_cancel, order_update_shipping_method
from orders.models import Order, Shipment, ShipmentStatus
from orders.pipeline.steps.produce import order_shipments_track
from orders.shipments import shipment_cancel, shipment_hold, shipment_unhold
from tests.support.orders import order_at_labs

pytestmark = pytest.mark.usefixtures("catalogue")


def track(order: Order) -> list[str]:
    """Follow production once, as the pipeline does; the ids shipped just now."""
    with transaction.atomic():
        tracked = order_shipments_track(order=Order.objects.get(id=order.id))
    return [s.public_id for s in tracked.shipped_now]


def test_a_held_shipment_does_not_ship_while_the_other_does(
    sandbox_api: APIClient, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.LAB_SIMULATOR_SECONDS = 60
    order = order_at_labs(sandbox_api, two_shipments=True)
    first, second = Shipment.objects.filter(order=order).order_by("lab_code")
    assert shipment_hold(shipment=second).successful
    # Both were submitted two minutes ago; the hold came one second after submission.
    now = timezone.now()
    Shipment.objects.filter(order=order).update(submitted_at=now - timedelta(seconds=120))
    Shipment.objects.filter(id=second.id).update(held_since=now - timedelta(seconds=119))

    assert track(order) == [first.public_id]
    assert track(order) == []
    assert Shipment.objects.get(id=second.id).status == ShipmentStatus.PROCESSING
    assert Shipment.objects.get(id=second.id).in_production_at is None

    released = shipment_unhold(shipment=second)

    assert released.successful
    assert released.shipment.held_seconds == pytest.approx(119, abs=5)
    assert track(order) == []  # resumes where it stopped: a minute still to go
    Shipment.objects.filter(id=second.id).update(held_seconds=0)
    assert track(order) == [second.public_id]


def test_a_cancelled_shipment_is_no_longer_followed(sandbox_api: APIClient, settings) -> None:  # type: ignore[no-untyped-def]
    settings.LAB_SIMULATOR_SECONDS = 60
    order = order_at_labs(sandbox_api, two_shipments=True)
    first, second = Shipment.objects.filter(order=order).order_by("lab_code")

    assert shipment_cancel(shipment=first).successful
    Shipment.objects.filter(order=order).update(
        submitted_at=timezone.now() - timedelta(seconds=120)
    )

    assert track(order) == [second.public_id]
    assert Shipment.objects.get(id=first.id).status == ShipmentStatus.CANCELLED


def test_an_operation_in_production_other_than_hold_is_refused(sandbox_api: APIClient) -> None:
    order = order_at_labs(sandbox_api)
    shipment = Shipment.objects.get(order=order)
    Shipment.objects.filter(id=shipment.id).update(in_production_at=timezone.now())

    cancelled = shipment_cancel(shipment=shipment)
    held = shipment_hold(shipment=shipment)

    assert (cancelled.successful, cancelled.message) == (
        False,
        "The lab has started producing the shipment.",
    )
    assert held.successful
    assert cancelled.shipment.status == ShipmentStatus.PROCESSING


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("through", ["order cancel", "shipment cancel", "order update"])
def test_the_lab_is_called_outside_any_transaction_with_the_intent_recorded(
    sandbox_api: APIClient, monkeypatch: pytest.MonkeyPatch, through: str
) -> None:
    order = order_at_labs(sandbox_api)
    shipment = Shipment.objects.get(order=order)
    seen: list[tuple[bool, str]] = []

    def lab(self: SimulatorConnector, payload: object, *args: object) -> LabResult:
        intent = Shipment.objects.get(id=shipment.id).lab_operation
        seen.append((transaction.get_connection().in_atomic_block, intent))
        return LabResult(True)

    monkeypatch.setattr(SimulatorConnector, "cancel", lab)
    monkeypatch.setattr(SimulatorConnector, "update_shipping_method", lab)

    if through == "order cancel":
        assert order_cancel(order=order).outcome == "Cancelled"
    elif through == "shipment cancel":
        assert shipment_cancel(shipment=shipment).successful
    else:
        result = order_update_shipping_method(order=order, shipping_method="Express")
        assert result.outcome == "Updated"

    operation = "updateShippingMethod" if through == "order update" else "cancel"
    assert seen == [(False, operation)]
    assert Shipment.objects.get(id=shipment.id).lab_operation == ""
