"""Staff operations on one shipment at its lab: cancel, hold, unhold, new address, new method.

Each runs in three steps so that a slow lab holds no row lock: the intent is recorded on the
shipment (``lab_operation``, which also keeps a second change from reaching the lab meanwhile),
the lab is called outside any transaction, and its answer is recorded under the order's row
lock, with the shipment callback. The same steps serve the order actions after submission
(``orders.actions``).
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from labs.allocation import Infeasible, PlannedShipment, UnknownCurrency, plan_at_lab
from labs.capabilities import capabilities_listed
from labs.connectors import LabConnector, LabOrder, LabResult, connector_for
from labs.connectors.siteflow import SiteflowConnector, carrier_alias_resolve
from orders.charges import refund_write, shipping_adjustment_write
from orders.events import order_stage_changed, shipment_changed
from orders.lab_orders import lab_order
from orders.models import Order, PipelineStep, Shipment, ShipmentStatus, Stage
from orders.payment_balance import (
    order_cancelled_settle,
    order_payment_settle,
    payment_raise_refusal,
)
from orders.pipeline.state_machine import order_transition
from orders.pipeline.steps.allocate import order_basket, order_cost
from orders.representation import order_recipient, shipment_address, shipment_recipient

# An intent older than this is left over from a process that died during its lab call.
LAB_OPERATION_STALE = timedelta(minutes=5)
BUSY_MESSAGE = "Another change to this shipment is in progress at its lab; try again in a moment."

LabCall = Callable[[LabConnector, LabOrder], LabResult]


@dataclass(frozen=True)
class ShipmentOperationResult:
    """What a staff operation did: ``shipment`` is the row as it is afterwards."""

    successful: bool
    message: str
    shipment: Shipment


# --- the three steps, shared with the order actions ----------------------------------------


def shipment_lab_call_begin(*, shipment: Shipment, operation: str) -> datetime | None:
    """Record that ``operation`` is being sent to the shipment's lab; the token to end it
    with, or None when another operation is under way."""
    now = timezone.now()
    free = Q(lab_operation="") | Q(lab_operation_since__lt=now - LAB_OPERATION_STALE)
    if not Shipment.objects.filter(free, id=shipment.id).update(
        lab_operation=operation, lab_operation_since=now
    ):
        return None
    return now


def shipment_lab_call_end(*, shipment: Shipment, token: datetime) -> None:
    """Clear our intent (not a later one that took over a stale intent of ours)."""
    Shipment.objects.filter(id=shipment.id, lab_operation_since=token).update(
        lab_operation="", lab_operation_since=None
    )


def lab_call(connector: LabConnector, payload: LabOrder, call: LabCall) -> LabResult:
    """Ask the lab; a lab that cannot be reached or answers nonsense is a refusal with a
    message, never an error of ours."""
    try:
        return call(connector, payload)
    except Exception as exc:
        return LabResult(False, message=f"Lab {connector.lab_code} could not be reached: {exc}")


# --- reads ---------------------------------------------------------------------------------


def shipment_connector(shipment: Shipment) -> LabConnector:
    return connector_for(lab_code=shipment.lab_code, sandbox=shipment.order.environment.is_sandbox)


def shipment_capabilities(shipment: Shipment) -> list[str]:
    """What the shipment's lab can do to it, in the vocabulary's order."""
    return capabilities_listed(shipment_connector(shipment).capabilities)


def without_nulls(value: Any) -> Any:
    """``value`` with every null-valued key removed, at every depth."""
    if isinstance(value, Mapping):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [without_nulls(v) for v in value]
    return value


def shipment_lab_json(*, shipment: Shipment, include_nulls: bool = True) -> dict[str, Any]:
    """The JSON the shipment's lab connector sends (or would send) to submit it."""
    data = shipment_connector(shipment).map_to_json(lab_order(shipment), include_nulls=True)
    return data if include_nulls else without_nulls(data)


# --- operations ----------------------------------------------------------------------------


def _refusal(shipment: Shipment, operation: str, connector: LabConnector) -> str | None:
    """Why the operation cannot be sent to the lab at all, or None."""
    if shipment.status == ShipmentStatus.CANCELLED:
        return "The shipment is cancelled."
    if shipment.status == ShipmentStatus.SHIPPED:
        return "The shipment has been shipped."
    if shipment.submitted_at is None:
        return "The shipment is not at a lab yet."
    if not connector.supports(operation):
        return f"Lab {shipment.lab_code} does not support {operation}."
    return None


def _lab_state_check(shipment: Shipment, connector: LabConnector) -> str | None:
    """Ask the lab where the shipment stands (outside any transaction), record a start of
    production, and say why nothing can change any more once it has shipped."""
    assert shipment.submitted_at is not None
    progress = connector.progress(
        replace(
            lab_order(shipment),
            carrier_name=shipment.carrier_name,
            carrier_service=shipment.carrier_service,
        ),
        submitted_at=shipment.submitted_at,
        now=timezone.now(),
    )
    if progress.in_production_at is not None and shipment.in_production_at is None:
        shipment.in_production_at = progress.in_production_at
        Shipment.objects.filter(id=shipment.id, in_production_at__isnull=True).update(
            in_production_at=progress.in_production_at
        )
    if progress.shipped_at is not None:
        return "The shipment has been shipped."
    return None


def _operate(
    *,
    shipment: Shipment,
    operation: str,
    call: LabCall,
    record: Callable[[Order, Shipment], bool | None],
    check: Callable[[Shipment], str | None] = lambda shipment: None,
) -> ShipmentOperationResult:
    """Check, record the intent, call the lab, record its answer (``record`` runs under the
    order's row lock, only when the lab agreed, and says whether the order's stage changed)."""
    current = Shipment.objects.select_related("order__environment").get(id=shipment.id)
    connector = shipment_connector(current)
    refusal = (
        _refusal(current, operation, connector)
        or check(current)
        or _lab_state_check(current, connector)
    )
    if refusal is None and operation != "hold" and current.in_production_at is not None:
        refusal = "The lab has started producing the shipment."
    if refusal is not None:
        return ShipmentOperationResult(False, refusal, _fresh(current))
    token = shipment_lab_call_begin(shipment=current, operation=operation)
    if token is None:
        return ShipmentOperationResult(False, BUSY_MESSAGE, _fresh(current))
    try:
        outcome = lab_call(connector, lab_order(current), call)
        with transaction.atomic():
            order = Order.objects.select_for_update().get(id=current.order_id)
            locked = Shipment.objects.select_related("order__environment").get(id=current.id)
            shipment_lab_call_end(shipment=locked, token=token)
            if outcome.successful and locked.status == ShipmentStatus.PROCESSING:
                stage_changed = record(order, locked)
                shipment_changed(order=order, shipment=locked)
                if stage_changed:
                    order_stage_changed(order=order)
    except BaseException:
        shipment_lab_call_end(shipment=current, token=token)
        raise
    if not outcome.successful:
        message = outcome.message or f"Lab {current.lab_code} refused to {operation}."
        return ShipmentOperationResult(False, message, _fresh(current))
    return ShipmentOperationResult(True, "", _fresh(current))


def _fresh(shipment: Shipment) -> Shipment:
    return Shipment.objects.select_related("order__environment").get(id=shipment.id)


def _only_shipment(order: Order) -> bool:
    return Shipment.objects.filter(order=order).count() == 1


def shipment_cancel(*, shipment: Shipment) -> ShipmentOperationResult:
    """Cancel the shipment at its lab, refund its items and shipping, and cancel the order
    when no shipment of it is left."""

    def record(order: Order, locked: Shipment) -> bool:
        locked.status = ShipmentStatus.CANCELLED
        locked.save(update_fields=["status"])
        refund_write(order=order, shipments=[locked])
        live = Shipment.objects.filter(order=order).exclude(status=ShipmentStatus.CANCELLED)
        if not live.exists() and order.stage != Stage.CANCELLED:
            order_transition(
                order=order, step=PipelineStep.CANCELLED, due_at=None, stage=Stage.CANCELLED
            )
            order_cancelled_settle(order=order)
            return True
        order.last_updated = timezone.now()
        order.save(update_fields=["last_updated"])
        return False

    return _operate(
        shipment=shipment,
        operation="cancel",
        call=lambda connector, payload: connector.cancel(payload),
        record=record,
    )


def shipment_hold(*, shipment: Shipment) -> ShipmentOperationResult:
    """Stop the shipment's production at its lab until ``shipment_unhold``."""

    def record(order: Order, locked: Shipment) -> None:
        locked.held_since = timezone.now()
        locked.save(update_fields=["held_since"])

    return _operate(
        shipment=shipment,
        operation="hold",
        call=lambda connector, payload: connector.hold(payload),
        record=record,
        check=lambda s: "The shipment is already on hold." if s.is_held else None,
    )


def shipment_unhold(*, shipment: Shipment) -> ShipmentOperationResult:
    """Release a hold: the lab resumes where it stopped."""

    def record(order: Order, locked: Shipment) -> None:
        if locked.held_since is not None:
            held = (timezone.now() - locked.held_since).total_seconds()
            locked.held_seconds += max(held, 0.0)
        locked.held_since = None
        locked.save(update_fields=["held_since", "held_seconds"])

    return _operate(
        shipment=shipment,
        operation="unhold",
        call=lambda connector, payload: connector.unhold(payload),
        record=record,
        check=lambda s: None if s.is_held else "The shipment is not on hold.",
    )


def shipment_update_address(
    *, shipment: Shipment, address: Mapping[str, Any]
) -> ShipmentOperationResult:
    """Send the lab order to ``address``, with the name, email and phone its lab holds
    (``shipment_recipient``); the order's recipient address follows when the order has this
    one shipment. The shipment keeps the recipient its lab now holds unless that is the
    order's."""
    new_address = {
        key: address.get(key) or ""
        for key in ("line1", "line2", "postalOrZipCode", "countryCode", "townOrCity")
    } | {"stateOrCounty": address.get("stateOrCounty") or ""}

    def call(connector: LabConnector, payload: LabOrder) -> LabResult:
        return connector.update_address(payload, {**payload.recipient, "address": new_address})

    def record(order: Order, locked: Shipment) -> None:
        held = {**shipment_recipient(locked), "address": new_address}
        if _only_shipment(order):
            for column, key in ORDER_ADDRESS_COLUMNS.items():
                setattr(order, column, new_address[key])
            order.last_updated = timezone.now()
            order.save(update_fields=[*ORDER_ADDRESS_COLUMNS, "last_updated"])
        locked.recipient = None if held == order_recipient(order) else held
        locked.save(update_fields=["recipient"])

    return _operate(shipment=shipment, operation="updateAddress", call=call, record=record)


ORDER_ADDRESS_COLUMNS = {
    "address_line1": "line1",
    "address_line2": "line2",
    "address_postal_or_zip_code": "postalOrZipCode",
    "address_country_code": "countryCode",
    "address_town_or_city": "townOrCity",
    "address_state_or_county": "stateOrCounty",
}


def shipment_method_plan(*, shipment: Shipment, shipping_method: str) -> PlannedShipment | str:
    """The shipment delivered by ``shipping_method`` from its own lab, carrier and price as the
    engine gives them now; or why its lab cannot deliver it so."""
    order = shipment.order
    country = shipment_address(shipment)["countryCode"]
    items = list(shipment.items.prefetch_related("assets").order_by("position"))
    if not items:
        return "The shipment has no items."
    try:
        plan = plan_at_lab(
            items=order_basket(order, items),
            lab_code=shipment.lab_code,
            country_code=country,
            shipping_method=shipping_method,
            currency=order.currency,
        )
    except Infeasible as infeasible:
        failures = [f for found in infeasible.failures_by_item_key.values() for f in found]
        if all(f.code in ("MethodNotOffered", "NotShippedToCountry") for f in failures):
            return f"Lab {shipment.lab_code} does not ship {shipping_method} to {country}."
        return " ".join(f.description for f in failures)
    except UnknownCurrency as unknown:
        return str(unknown)
    [planned] = plan.shipments
    return planned


def shipments_method_record(
    *, order: Order, planned: Sequence[tuple[Shipment, PlannedShipment]]
) -> None:
    """Record what the labs agreed to: each shipment's new method and carrier, and a Shipping
    charge adjustment to the engine's new price (inside the caller's transaction)."""
    for shipment, plan in planned:
        shipment.shipping_method = plan.shipping_method
        shipment.carrier_name = plan.carrier_name
        shipment.carrier_service = plan.carrier_service
        shipment.save(update_fields=["shipping_method", "carrier_name", "carrier_service"])
    shipping_adjustment_write(
        order=order,
        repriced=[(shipment, plan.shipping_cost, plan.shipping_tax) for shipment, plan in planned],
    )


def shipment_update_shipping_method(
    *, shipment: Shipment, shipping_method: str
) -> ShipmentOperationResult:
    """Ship the lab order by another method, with the carrier and price the engine gives for
    its lab and destination (the charge adjusted); the order's method follows once every
    shipment of it that is not cancelled goes by that method."""
    current = Shipment.objects.select_related("order__environment").get(id=shipment.id)
    planned = shipment_method_plan(shipment=current, shipping_method=shipping_method)

    def check(s: Shipment) -> str | None:
        if isinstance(planned, str):
            return planned
        cost = order_cost(s.order)
        return payment_raise_refusal(order=s.order, cost=cost, planned=[(s, planned)])

    def record(order: Order, locked: Shipment) -> None:
        assert not isinstance(planned, str)
        shipments_method_record(order=order, planned=[(locked, planned)])
        # A cheaper method: the difference refunded.
        order_payment_settle(order=order, cost=order_cost(order))
        others = Shipment.objects.filter(order=order).exclude(status=ShipmentStatus.CANCELLED)
        if not others.exclude(shipping_method=shipping_method).exists():
            order.shipping_method = shipping_method
            order.last_updated = timezone.now()
            order.save(update_fields=["shipping_method", "last_updated"])

    return _operate(
        shipment=shipment,
        operation="updateShippingMethod",
        call=lambda connector, payload: connector.update_shipping_method(payload, shipping_method),
        record=record,
        check=check,
    )


def shipment_update_carrier(
    *, shipment: Shipment, shipping_method: str, carrier_alias: str
) -> ShipmentOperationResult:
    """Ship a Site Flow lab order with the site's carrier ``carrier_alias`` at
    ``shipping_method`` (the back-office's bulk shipping update); other labs refuse. The
    shipment shows the carrier and service the alias stands for (``carrier_alias_resolve``)."""

    def check(s: Shipment) -> str | None:
        if not isinstance(shipment_connector(s), SiteflowConnector):
            return f"Lab {s.lab_code} is not a Site Flow lab."
        return None

    def call(connector: LabConnector, payload: LabOrder) -> LabResult:
        assert isinstance(connector, SiteflowConnector)
        return connector.update_carrier(payload, carrier_alias)

    def record(order: Order, locked: Shipment) -> None:
        carrier = carrier_alias_resolve(carrier_alias, shipping_method=shipping_method)
        locked.shipping_method = shipping_method
        locked.carrier_name, locked.carrier_service = carrier.name, carrier.service
        locked.save(update_fields=["shipping_method", "carrier_name", "carrier_service"])
        if _only_shipment(order):
            order.shipping_method = shipping_method
            order.last_updated = timezone.now()
            order.save(update_fields=["shipping_method", "last_updated"])

    return _operate(
        shipment=shipment, operation="updateShippingMethod", call=call, record=record, check=check
    )
