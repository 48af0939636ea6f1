"""Staff operations on one shipment at its lab: cancel, hold, unhold, new address, new method.

Each runs in three steps so that a slow lab holds no row lock: the intent is recorded on the
shipment (``lab_operation``, with what it asks, ``lab_operation_change``; it also keeps a second
change from reaching the lab meanwhile), the lab is called outside any transaction, and its
answer is recorded under the order's row lock, with the shipment callback. The same steps serve
the order actions after submission (``orders.actions``).

A lab that gives no answer in time (the web request's budget spent, a timeout, a connection
lost after sending), or one that says nothing of the change (a 2xx without the lab order), may
have made the change all the same. Its intent is then kept, marked
unanswered (``shipment_lab_answer_await``: the caller is told it is pending), and a job on the
``labs`` queue asks the lab what it did (``shipment_lab_answer_reconcile``,
``LabConnector.operation_done``) and records that through the same records a timely answer
uses: a cancel made becomes ``Cancelled`` with its refund and callbacks, a hold held, a new
carrier or address recorded; one not made is dropped. The lab answers' sweep queues the job
again for every intent still unanswered, and for one a killed process left
(``shipments_lab_answers_due``).
"""

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from common.sweeping import sweep_batch_mark
from common.tasks import task_enqueue_on_commit
from labs.allocation import Infeasible, PlannedShipment, UnknownCurrency, plan_at_lab
from labs.capabilities import capabilities_listed
from labs.connectors import LabConnector, LabOrder, LabResult, connector_for
from labs.connectors.siteflow import SiteflowConnector, carrier_alias_resolve
from orders.charges import refund_write, shipping_adjustment_write
from orders.document import order_document_write
from orders.events import order_stage_changed, shipment_changed
from orders.issues import LAB_ANSWER_PENDING, LAB_ANSWER_UNKNOWN
from orders.lab_orders import lab_order
from orders.models import (
    Order,
    OrderIssue,
    OrderItem,
    PipelineStep,
    Shipment,
    ShipmentStatus,
    Stage,
)
from orders.parts import items_shipment_id
from orders.payment_balance import (
    order_cancelled_settle,
    order_payment_settle,
    payment_raise_refusal,
)
from orders.payments import payment_sessions_expire_write
from orders.pipeline.lanes import lab_call_place
from orders.pipeline.state_machine import order_transition
from orders.pipeline.steps.allocate import order_basket, order_cost
from orders.representation import order_recipient, shipment_address, shipment_recipient

# An intent older than this is left over from a process that died during its lab call.
LAB_OPERATION_STALE = timedelta(minutes=5)
# A change whose lab cannot say what it did for this long after it was sent (a site that answers
# 404 for a deleted order, or is down) is no longer awaited: the shipment takes changes again,
# and staff are asked to check it at the lab (``LAB_ANSWER_UNKNOWN``).
LAB_ANSWER_WAIT = timedelta(hours=6)
BUSY_MESSAGE = "Another change to this shipment is in progress at its lab; try again in a moment."
# The operations whose unanswered intents are settled by asking the lab (a resubmission's
# cancel and a submission are resumed by their own jobs).
LAB_OPERATIONS_RECONCILED = ("cancel", "hold", "unhold", "updateAddress", "updateShippingMethod")
LAB_ANSWER_RECONCILE_TASK = "orders.tasks.shipment_lab_answer_reconcile_task"
_OPERATION_WORDS = {
    "cancel": "cancel",
    "hold": "hold",
    "unhold": "release of its hold",
    "updateAddress": "new address",
    "updateShippingMethod": "new shipping method",
}

LabCall = Callable[[LabConnector, LabOrder], LabResult]
# What an operation asks, recorded with its intent (``Shipment.lab_operation_change``).
Change = Mapping[str, Any]


@dataclass(frozen=True)
class ShipmentOperationResult:
    """What a staff operation did: ``shipment`` is the row as it is afterwards."""

    successful: bool
    message: str
    shipment: Shipment


# --- the three steps, shared with the order actions ----------------------------------------


def shipment_lab_call_begin(
    *, shipment: Shipment, operation: str, change: Change | None = None
) -> datetime | None:
    """Record that ``operation`` (asking ``change``) is being sent to the shipment's lab; the
    token to end it with, or None when another operation is under way. An operation whose
    answer is being asked of the lab (``LAB_OPERATIONS_RECONCILED``) is never taken over: it
    ends when the lab has said what it did."""
    now = timezone.now()
    stale = Q(lab_operation_since__lt=now - LAB_OPERATION_STALE) & ~Q(
        lab_operation__in=LAB_OPERATIONS_RECONCILED
    )
    if not Shipment.objects.filter(Q(lab_operation="") | stale, id=shipment.id).update(
        lab_operation=operation,
        lab_operation_since=now,
        lab_operation_change=None if change is None else dict(change),
        lab_operation_unanswered_at=None,
    ):
        return None
    return now


def shipment_lab_call_end(*, shipment: Shipment, token: datetime) -> None:
    """Clear our intent (not a later one that took over a stale intent of ours)."""
    Shipment.objects.filter(id=shipment.id, lab_operation_since=token).update(
        lab_operation="",
        lab_operation_since=None,
        lab_operation_change=None,
        lab_operation_unanswered_at=None,
    )


def shipment_lab_answer_await(
    *, order: Order, shipment: Shipment, token: datetime, operation: str, merchant: bool
) -> str:
    """The lab did not confirm ``operation`` in time (inside the transaction that records the
    answers, under the order's lock): our intent is kept, marked unanswered, and the lab is
    asked what it did once this commits (``shipment_lab_answer_reconcile``). For a change the
    merchant asked, the order shows it pending (a ``LabAnswerPending`` issue on the shipment)
    until that is recorded. What to tell the caller."""
    Shipment.objects.filter(id=shipment.id, lab_operation_since=token).update(
        lab_operation_unanswered_at=timezone.now()
    )
    told = (
        f"Pending: lab {shipment.lab_code} did not confirm the "
        f"{_OPERATION_WORDS.get(operation, operation)} in time. The lab is being asked whether "
        "it made it, and what it did is recorded then (a callback follows any change)."
    )
    if merchant:
        OrderIssue.objects.update_or_create(
            order=order,
            object_id=shipment.public_id,
            error_code=LAB_ANSWER_PENDING,
            defaults={"description": told},
        )
    task_enqueue_on_commit(LAB_ANSWER_RECONCILE_TASK, shipment.id)
    return told


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
    change: Callable[[Shipment], Change] = lambda shipment: {},
) -> ShipmentOperationResult:
    """Check, record the intent (with what it asks, ``change``), call the lab, record its
    answer (``record`` runs under the order's row lock, only when the lab agreed, and says
    whether the order's stage changed). No answer in time: pending, the lab asked later."""
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
    token = shipment_lab_call_begin(
        shipment=current, operation=operation, change={**change(current), "by": "staff"}
    )
    if token is None:
        return ShipmentOperationResult(False, BUSY_MESSAGE, _fresh(current))
    try:
        outcome = lab_call(connector, lab_order(current), call)
        with transaction.atomic():
            order = Order.objects.select_for_update().get(id=current.order_id)
            locked = Shipment.objects.select_related("order__environment").get(id=current.id)
            if outcome.unanswered:
                pending = shipment_lab_answer_await(
                    order=order, shipment=locked, token=token, operation=operation, merchant=False
                )
                return ShipmentOperationResult(False, pending, _fresh(current))
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


# --- what each operation the lab made records (a timely answer, or a late one) ---------------


def shipment_cancel_record(*, order: Order, shipment: Shipment) -> bool:
    """The lab cancelled the shipment (under the order's lock): ``Cancelled``, its items and
    shipping refunded, and the order cancelled (settled, its payment pages expired) when no
    shipment of it is left. Whether the order's stage changed."""
    shipment.status = ShipmentStatus.CANCELLED
    shipment.save(update_fields=["status"])
    refund_write(order=order, shipments=[shipment])
    live = Shipment.objects.filter(order=order).exclude(status=ShipmentStatus.CANCELLED)
    if not live.exists() and order.stage != Stage.CANCELLED:
        order_transition(
            order=order, step=PipelineStep.CANCELLED, due_at=None, stage=Stage.CANCELLED
        )
        order_cancelled_settle(order=order)
        payment_sessions_expire_write(order=order)
        return True
    order.last_updated = timezone.now()
    order.save(update_fields=["last_updated"])
    return False


def _hold_record(order: Order, locked: Shipment) -> None:
    locked.held_since = timezone.now()
    locked.save(update_fields=["held_since"])


def _unhold_record(order: Order, locked: Shipment) -> None:
    if locked.held_since is not None:
        held = (timezone.now() - locked.held_since).total_seconds()
        locked.held_seconds += max(held, 0.0)
    locked.held_since = None
    locked.save(update_fields=["held_since", "held_seconds"])


def _recipient_record(
    order: Order, locked: Shipment, recipient: Mapping[str, Any], *, whole: bool
) -> None:
    """The lab holds ``recipient`` for the shipment: the order's address follows when this is
    its one shipment (its whole recipient too when the merchant asked, ``whole``); the
    shipment keeps the recipient its lab holds unless that is the order's."""
    if _only_shipment(order):
        columns = {**ORDER_ADDRESS_COLUMNS, **(ORDER_CONTACT_COLUMNS if whole else {})}
        for column, key in columns.items():
            value = (
                recipient["address"].get(key)
                if column in ORDER_ADDRESS_COLUMNS
                else recipient.get(key)
            )
            setattr(order, column, value or "")
        order.last_updated = timezone.now()
        order.save(update_fields=[*columns, "last_updated"])
    held = {**recipient, "address": dict(recipient["address"])}
    locked.recipient = None if held == order_recipient(order) else held
    locked.save(update_fields=["recipient"])


def _method_record(order: Order, locked: Shipment, planned: PlannedShipment) -> None:
    """The lab ships by ``planned``'s method: its carrier and price recorded, a cheaper one's
    difference refunded, and the order's method follows once every shipment of it that is
    not cancelled goes by that method."""
    shipments_method_record(order=order, planned=[(locked, planned)])
    order_payment_settle(order=order, cost=order_cost(order))
    _order_method_follow(order, planned.shipping_method)


def _order_method_follow(order: Order, shipping_method: str) -> None:
    others = Shipment.objects.filter(order=order).exclude(status=ShipmentStatus.CANCELLED)
    if not others.exclude(shipping_method=shipping_method).exists():
        order.shipping_method = shipping_method
        order.last_updated = timezone.now()
        order.save(update_fields=["shipping_method", "last_updated"])


def _carrier_record(
    order: Order, locked: Shipment, *, shipping_method: str, carrier_alias: str
) -> None:
    carrier = carrier_alias_resolve(carrier_alias, shipping_method=shipping_method)
    locked.shipping_method = shipping_method
    locked.carrier_name, locked.carrier_service = carrier.name, carrier.service
    locked.save(update_fields=["shipping_method", "carrier_name", "carrier_service"])
    if _only_shipment(order):
        order.shipping_method = shipping_method
        order.last_updated = timezone.now()
        order.save(update_fields=["shipping_method", "last_updated"])


# --- operations ------------------------------------------------------------------------------


def shipment_cancel(*, shipment: Shipment) -> ShipmentOperationResult:
    """Cancel the shipment at its lab, refund its items and shipping, and cancel the order
    when no shipment of it is left."""
    return _operate(
        shipment=shipment,
        operation="cancel",
        call=lambda connector, payload: connector.cancel(payload),
        record=lambda order, locked: shipment_cancel_record(order=order, shipment=locked),
    )


def shipment_hold(*, shipment: Shipment) -> ShipmentOperationResult:
    """Stop the shipment's production at its lab until ``shipment_unhold``."""
    return _operate(
        shipment=shipment,
        operation="hold",
        call=lambda connector, payload: connector.hold(payload),
        record=_hold_record,
        check=lambda s: "The shipment is already on hold." if s.is_held else None,
    )


def shipment_unhold(*, shipment: Shipment) -> ShipmentOperationResult:
    """Release a hold: the lab resumes where it stopped."""
    return _operate(
        shipment=shipment,
        operation="unhold",
        call=lambda connector, payload: connector.unhold(payload),
        record=_unhold_record,
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
        _recipient_record(order, locked, held, whole=False)

    return _operate(
        shipment=shipment,
        operation="updateAddress",
        call=call,
        record=record,
        change=lambda s: {"recipient": {**shipment_recipient(s), "address": new_address}},
    )


ORDER_ADDRESS_COLUMNS = {
    "address_line1": "line1",
    "address_line2": "line2",
    "address_postal_or_zip_code": "postalOrZipCode",
    "address_country_code": "countryCode",
    "address_town_or_city": "townOrCity",
    "address_state_or_county": "stateOrCounty",
}
ORDER_CONTACT_COLUMNS = {
    "recipient_name": "name",
    "recipient_email": "email",
    "recipient_phone": "phoneNumber",
}


def shipment_method_plan(*, shipment: Shipment, shipping_method: str) -> PlannedShipment | str:
    """The shipment delivered by ``shipping_method`` from its own lab, carrier and price as the
    engine gives them now; or why its lab cannot deliver it so."""
    order = shipment.order
    country = shipment_address(shipment)["countryCode"]
    # A reprint makes the items of the shipment it reprints (which keeps them).
    items = list(
        OrderItem.objects.filter(shipment_id=items_shipment_id(shipment))
        .prefetch_related("assets")
        .order_by("position")
    )
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
        _method_record(order, locked, planned)

    return _operate(
        shipment=shipment,
        operation="updateShippingMethod",
        call=lambda connector, payload: connector.update_shipping_method(payload, shipping_method),
        record=record,
        check=check,
        change=lambda s: {"shippingMethod": shipping_method},
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
        _carrier_record(order, locked, shipping_method=shipping_method, carrier_alias=carrier_alias)

    return _operate(
        shipment=shipment,
        operation="updateShippingMethod",
        call=call,
        record=record,
        check=check,
        change=lambda s: {"shippingMethod": shipping_method, "carrierAlias": carrier_alias},
    )


# --- late answers -----------------------------------------------------------------------------


def _late_record(order: Order, locked: Shipment, operation: str, change: Change) -> bool:
    """Record ``operation``, which the lab made, through what its timely answer records;
    whether the order's stage changed."""
    if operation == "cancel":
        return shipment_cancel_record(order=order, shipment=locked)
    if operation == "hold":
        _hold_record(order, locked)
    elif operation == "unhold":
        _unhold_record(order, locked)
    elif operation == "updateAddress":
        whole = change.get("by") == "merchant"
        _recipient_record(order, locked, change["recipient"], whole=whole)
    elif operation == "updateShippingMethod" and change.get("carrierAlias"):
        method, alias = str(change["shippingMethod"]), str(change["carrierAlias"])
        _carrier_record(order, locked, shipping_method=method, carrier_alias=alias)
    elif operation == "updateShippingMethod":
        method = str(change["shippingMethod"])
        planned = shipment_method_plan(shipment=locked, shipping_method=method)
        if isinstance(planned, str):  # the engine no longer prices it: the method alone
            locked.shipping_method = method
            locked.save(update_fields=["shipping_method"])
            _order_method_follow(order, method)
        else:
            _method_record(order, locked, planned)
    return False


def shipment_lab_answer_reconcile(*, shipment_id: int) -> str:
    """Settle a change whose lab answer never came: ask the lab what it did
    (``LabConnector.operation_done``) and record that, once, under the order's lock, with the
    callbacks a timely answer sends; the intent ends and the order's pending issue goes. Says
    what it found: ``made``, ``not made``, ``unknown`` (the lab cannot say now, or the call may
    still be acted on: asked again by the sweep), ``given up`` (the lab could not say for
    ``LAB_ANSWER_WAIT``: the intent ends, so the shipment is not locked for ever, with a
    ``LabAnswerUnknown`` issue for staff in place of the pending one), ``none`` (nothing to
    settle: an intent still awaiting its own answer, or none)."""
    shipment = Shipment.objects.select_related("order__environment").filter(id=shipment_id).first()
    if shipment is None or shipment.lab_operation not in LAB_OPERATIONS_RECONCILED:
        return "none"
    token, operation = shipment.lab_operation_since, shipment.lab_operation
    now = timezone.now()
    assert token is not None
    if shipment.lab_operation_unanswered_at is None and token > now - LAB_OPERATION_STALE:
        return "none"  # its caller is still waiting for the lab's answer
    change: Change = shipment.lab_operation_change or {}
    connector = shipment_connector(shipment)
    # A real lab's calls from workers are limited per lab; the simulator waits on nothing.
    place: AbstractContextManager[bool] = (
        nullcontext(True) if connector.simulated else lab_call_place(shipment.lab_code)
    )
    with place as placed:
        made = (
            connector.operation_done(
                replace(
                    lab_order(shipment),
                    carrier_name=shipment.carrier_name,
                    carrier_service=shipment.carrier_service,
                ),
                operation,
                change,
            )
            if placed
            else None
        )
    settled = token + timedelta(seconds=connector.answer_window_seconds())
    if made is None and timezone.now() - token >= LAB_ANSWER_WAIT:
        return _lab_answer_give_up(shipment, token=token, operation=operation, change=change)
    if made is None or (not made and timezone.now() < settled):
        return "unknown"
    with transaction.atomic():
        ended = _pending_intent_end(shipment, token=token)
        if ended is None:
            return "none"  # settled meanwhile
        order, locked = ended
        if made and locked.status == ShipmentStatus.PROCESSING:
            stage_changed = _late_record(order, locked, operation, change)
            shipment_changed(order=order, shipment=locked)  # with the order's document
            if stage_changed:
                order_stage_changed(order=order)
        else:  # no event: the document without the pending issue written here
            order_document_write(order.id)
    return "made" if made else "not made"


def _pending_intent_end(shipment: Shipment, *, token: datetime) -> tuple[Order, Shipment] | None:
    """In the caller's transaction, under the order's row lock: the shipment's intent
    ``token`` ends and the order's ``LabAnswerPending`` issue for it goes; the locked order and
    shipment, or None when the intent was settled meanwhile (nothing changed)."""
    order = Order.objects.select_for_update().get(id=shipment.order_id)
    locked = Shipment.objects.select_related("order__environment").get(id=shipment.id)
    if locked.lab_operation_since != token:
        return None
    shipment_lab_call_end(shipment=locked, token=token)
    OrderIssue.objects.filter(
        order=order, object_id=locked.public_id, error_code=LAB_ANSWER_PENDING
    ).delete()
    return order, locked


def _lab_answer_give_up(
    shipment: Shipment, *, token: datetime, operation: str, change: Change
) -> str:
    """The lab could not say what it did with ``operation`` for ``LAB_ANSWER_WAIT``: under the
    order's lock, the intent ends (the shipment takes changes again) and the order's pending
    issue is replaced by a ``LabAnswerUnknown`` one, which staff see (the admin's "needs
    attention"); nothing is recorded as made."""
    with transaction.atomic():
        ended = _pending_intent_end(shipment, token=token)
        if ended is None:
            return "none"  # settled meanwhile
        order, locked = ended
        by = "the merchant" if change.get("by") == "merchant" else "staff"
        OrderIssue.objects.update_or_create(
            order=order,
            object_id=locked.public_id,
            error_code=LAB_ANSWER_UNKNOWN,
            defaults={
                "description": f"Lab {locked.lab_code} never said whether it made the "
                f"{_OPERATION_WORDS.get(operation, operation)} {by} asked at "
                f"{token.isoformat(timespec='seconds')} (lab order "
                f"{locked.lab_order_reference or '-'}); it is no longer awaited, and staff "
                "check the lab order at its lab."
            },
        )
        order.last_updated = timezone.now()
        order.save(update_fields=["last_updated"])
        order_document_write(order.id)
    return "given up"


def shipments_lab_answers_due(*, batch: int) -> list[int]:
    """The shipments whose change awaits its lab's answer (unanswered in time, or left by a
    process that died during the call: its intent older than ``LAB_OPERATION_STALE``) and
    that the sweep has not queued since, marked as queued (``common.sweeping``: each change is
    queued once, and again only once its message is presumed lost)."""
    stale = timezone.now() - LAB_OPERATION_STALE
    awaiting = (
        Shipment.objects.exclude(lab_operation="")
        .filter(lab_operation__in=LAB_OPERATIONS_RECONCILED)
        .filter(Q(lab_operation_unanswered_at__isnull=False) | Q(lab_operation_since__lt=stale))
    )
    return sweep_batch_mark(
        awaiting,
        swept_field="swept_at",
        due_field="lab_operation_since",
        claim_field=None,
        batch=batch,
    )
