"""The four order actions and their availability, one rule for both.

An order is open while it is OnHold or InProgress. A shipment can still be changed or cancelled
until its lab starts production: an action asks the lab first (``lab_state_refresh``), while
``GET .../actions`` shows what the service has recorded (``actions_available``: a start of
production from the pipeline's last check or an action's or staff operation's last question,
and the labs' capabilities), so no request for it waits on a lab. Before
any shipment is at a lab, a new method or destination re-plans the order with the engine, so its
shipments and charges are what a quote gives; while shipments are being submitted, changes wait;
after submission each change goes through the lab's connector and each shipment reports its
own result. Those lab calls happen outside the order's transaction (the intent is recorded on
each shipment, the lab called, its answer recorded under the order's lock, see
``orders.shipments``), so a slow lab holds no row lock. A lab that does not answer in time
leaves its shipment's change pending: the answer says so for that shipment (the outcome is the
one for the order as it stands, unchanged there: ``FailedToCancel``, ``FailedToUpdate`` or
``PartiallyUpdated``), the order carries a ``LabAnswerPending`` issue on it, and what the lab
did is recorded later, with its callbacks (``orders.shipments.shipment_lab_answer_reconcile``).

A card order's cost stays within what its merchant paid (``orders.payment_balance``): a
re-planned order that costs more asks for the difference before it goes to a lab, one that
costs less is refunded the difference, and a change to shipments already at their labs that
would cost more is refused.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from common.errors import ValidationFailed
from labs.allocation import methods_available
from labs.connectors import LabResult, connector_for
from labs.selectors import labs_capabilities
from orders.charges import refund_write
from orders.document import order_changed
from orders.events import order_stage_changed, shipment_changed
from orders.issues import SHIPMENT_NOT_AVAILABLE, SHIPMENT_UPDATE_FAILED
from orders.lab_orders import lab_order
from orders.models import (
    Charge,
    ChargeType,
    Order,
    OrderItem,
    PipelineStep,
    Shipment,
    ShipmentStatus,
    Stage,
)
from orders.payment_balance import (
    order_cancelled_settle,
    order_payment_settle,
    payment_raise_refusal,
)
from orders.payments import payment_sessions_expire_write
from orders.pipeline.state_machine import order_payment_wait_end, order_transition
from orders.pipeline.steps.allocate import order_allocate, order_basket, order_cost
from orders.representation import order_recipient
from orders.shipments import (
    BUSY_MESSAGE,
    Change,
    LabCall,
    lab_call,
    shipment_lab_answer_await,
    shipment_lab_call_begin,
    shipment_lab_call_end,
    shipment_method_plan,
    shipments_method_record,
)

# An order awaiting payment is open as well: it can be changed or cancelled until it is paid.
OPEN_STAGES = (Stage.ON_HOLD, Stage.AWAITING_PAYMENT, Stage.IN_PROGRESS)


@dataclass(frozen=True)
class ShipmentResult:
    shipment_id: str
    successful: bool
    error_code: str | None = None
    description: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "shipmentId": self.shipment_id,
            "successful": self.successful,
            "errorCode": self.error_code,
            "description": self.description,
        }


@dataclass(frozen=True)
class ActionResult:
    outcome: str
    shipment_results: tuple[ShipmentResult, ...] = ()


def _changeable(shipment: Shipment) -> bool:
    return shipment.status == ShipmentStatus.PROCESSING and shipment.in_production_at is None


def _live_shipments(order: Order) -> list[Shipment]:
    return [s for s in order.shipments.all() if s.status != ShipmentStatus.CANCELLED]


def lab_state_refresh(order: Order) -> None:
    """Ask the labs whether submitted shipments have started production, and record it, so an
    action follows the labs' real state rather than the pipeline's last poll (and
    ``actions_available`` shows it from then on)."""
    now = timezone.now()
    sandbox = order.environment.is_sandbox
    for shipment in _live_shipments(order):
        if shipment.submitted_at is None or not _changeable(shipment):
            continue
        connector = connector_for(lab_code=shipment.lab_code, sandbox=sandbox)
        progress = connector.progress(
            lab_order(shipment), submitted_at=shipment.submitted_at, now=now
        )
        if progress.in_production_at is not None:
            shipment.in_production_at = progress.in_production_at
            Shipment.objects.filter(id=shipment.id, in_production_at__isnull=True).update(
                in_production_at=progress.in_production_at
            )


def _changes_possible(order: Order) -> bool:
    """What each change action checks first (after ``lab_state_refresh``): the order is open
    and some shipment, if it has any, is not in production yet (else ActionNotAvailable)."""
    shipments = _live_shipments(order)
    return order.stage in OPEN_STAGES and (not shipments or any(_changeable(s) for s in shipments))


def actions_available(order: Order) -> dict[str, bool]:
    """What ``GET .../actions`` shows: whether each action would do what it is asked, as far
    as the service knows, read from the database alone (no lab is asked: a lab whose site
    hangs delays no one's GET). ``cancel`` would cancel: the order is open and no shipment is
    recorded in production, shipped or at a lab that cannot cancel (else it would be
    FailedToCancel or ActionNotAvailable); a change would reach at least one shipment (one not
    at a lab yet, or at a lab that can make the change)."""
    is_open = order.stage in OPEN_STAGES
    shipments = _live_shipments(order)
    capabilities = labs_capabilities(codes={s.lab_code for s in shipments})

    def takes(shipment: Shipment, capability: str) -> bool:
        if not _changeable(shipment):
            return False
        if shipment.submitted_at is None:
            return True
        return capability in capabilities[shipment.lab_code]

    def change(capability: str) -> bool:
        return is_open and (not shipments or any(takes(s, capability) for s in shipments))

    return {
        "cancel": is_open and all(takes(s, "cancel") for s in shipments),
        "changeRecipientDetails": change("updateAddress"),
        "changeShippingMethod": change("updateShippingMethod"),
        "changeMetaData": True,
    }


def _touch(order: Order, *fields: str) -> None:
    order.last_updated = timezone.now()
    order.save(update_fields=[*fields, "last_updated"])


def _lock(order: Order) -> Order:
    return Order.objects.select_for_update().get(pk=order.pk)


def _fresh(order: Order) -> Order:
    return Order.objects.select_related("environment").get(pk=order.pk)


@dataclass
class _LabStep:
    """One shipment in an action after lab submission: either its result is known without the
    lab (``result``), or its lab is to be called under the intent recorded as ``token``."""

    shipment: Shipment
    result: ShipmentResult | None = None
    token: datetime | None = None
    lab_result: LabResult | None = None
    to_call: bool = False


def _labs_call(order: Order, steps: list[_LabStep], call: LabCall) -> None:
    """Call the labs of the steps that need it, outside any transaction (a slow lab holds
    no row lock); a shipment whose intent could not be recorded is busy."""
    sandbox = order.environment.is_sandbox
    for step in steps:
        if not step.to_call:
            continue
        if step.token is None:
            step.lab_result = LabResult(False, message=BUSY_MESSAGE)
            continue
        connector = connector_for(lab_code=step.shipment.lab_code, sandbox=sandbox)
        step.lab_result = lab_call(connector, lab_order(step.shipment), call)


def _intents_end(steps: list[_LabStep]) -> None:
    for step in steps:
        if step.token is not None:
            shipment_lab_call_end(shipment=step.shipment, token=step.token)


def _answers_take(locked: Order, steps: list[_LabStep], *, operation: str) -> None:
    """Under the order's lock: each intent ends with its lab's answer, except where no answer
    came in time: that change is left pending (``shipment_lab_answer_await``), and its result
    says so."""
    for step in steps:
        if step.token is None:
            continue
        if step.lab_result is not None and step.lab_result.unanswered:
            told = shipment_lab_answer_await(
                order=locked,
                shipment=step.shipment,
                token=step.token,
                operation=operation,
                merchant=True,
            )
            step.lab_result = LabResult(False, message=told, unanswered=True)
        else:
            shipment_lab_call_end(shipment=step.shipment, token=step.token)


def order_cancel(*, order: Order) -> ActionResult:
    """Cancel the whole order: locally before lab submission, else lab by lab (the intent
    recorded, the labs called outside the transaction, their answers recorded)."""
    lab_state_refresh(_fresh(order))
    with order_changed(order.id):
        locked = _lock(order)
        if locked.stage not in OPEN_STAGES:
            return ActionResult("ActionNotAvailable")
        shipments = _live_shipments(locked)
        if any(not _changeable(s) for s in shipments):
            return ActionResult("FailedToCancel")
        steps = [_LabStep(s) for s in shipments]
        if all(s.submitted_at is None for s in shipments):
            return _cancel_record(locked, steps)
        for step in steps:
            if step.shipment.submitted_at is not None:
                step.to_call = True
                step.token = shipment_lab_call_begin(
                    shipment=step.shipment, operation="cancel", change={"by": "merchant"}
                )
    try:
        _labs_call(locked, steps, lambda connector, payload: connector.cancel(payload))
        with order_changed(order.id):
            locked = _lock(order)
            _answers_take(locked, steps, operation="cancel")
            return _cancel_record(locked, steps)
    except BaseException:
        _intents_end(steps)
        raise


def _cancel_record(locked: Order, steps: list[_LabStep]) -> ActionResult:
    """Record the labs' answers to a cancel under the order's lock: a shipment not at a lab
    when the cancel began is cancelled here unless it reached its lab meanwhile."""
    results: list[ShipmentResult] = []
    cancelled: list[Shipment] = []
    for step in steps:
        shipment = step.shipment
        outcome = step.lab_result
        if outcome is None:
            submitted = Shipment.objects.filter(id=shipment.id, submitted_at__isnull=False)
            outcome = (
                LabResult(False, message="The shipment reached its lab meanwhile; try again.")
                if submitted.exists()
                else LabResult(True)
            )
        successful = outcome.successful and bool(
            Shipment.objects.filter(id=shipment.id, status=ShipmentStatus.PROCESSING).update(
                status=ShipmentStatus.CANCELLED
            )
        )
        if successful:
            shipment.status = ShipmentStatus.CANCELLED
            cancelled.append(shipment)
        results.append(
            ShipmentResult(
                shipment.public_id,
                successful,
                None if successful else SHIPMENT_UPDATE_FAILED,
                outcome.message or None,
            )
        )
    if not all(r.successful for r in results):
        # Some labs cancelled: those shipments are refunded and reported, the order goes on.
        _touch(locked)
        if cancelled:
            refund_write(order=locked, shipments=cancelled)
        for shipment in cancelled:
            shipment_changed(order=locked, shipment=shipment)
        return ActionResult("FailedToCancel", tuple(results))
    order_transition(order=locked, step=PipelineStep.CANCELLED, due_at=None, stage=Stage.CANCELLED)
    order_cancelled_settle(order=locked)
    payment_sessions_expire_write(order=locked)
    for shipment in cancelled:
        shipment_changed(order=locked, shipment=shipment)
    order_stage_changed(order=locked)
    return ActionResult("Cancelled", tuple(results))


def _update_steps(
    order: Order,
    *,
    operation: str,
    change: Change,
    refusal: Callable[[Shipment], str | None] = lambda shipment: None,
) -> list[_LabStep]:
    """Under the order's lock: each live shipment's result when it is known without its lab,
    and the intent (asking ``change``) recorded for those whose lab is to be asked.
    ``refusal`` says why a shipment cannot take the change at all (its lab is then not
    asked)."""
    steps: list[_LabStep] = []
    submitting = order.pipeline_step == PipelineStep.SUBMIT
    for shipment in _live_shipments(order):
        step = _LabStep(shipment)
        refused = refusal(shipment) if _changeable(shipment) else None
        if refused is not None:
            step.result = ShipmentResult(shipment.public_id, False, SHIPMENT_UPDATE_FAILED, refused)
        elif shipment.submitted_at is None and submitting:
            step.result = ShipmentResult(
                shipment.public_id,
                False,
                SHIPMENT_UPDATE_FAILED,
                "The shipment is being submitted to its lab; try again in a moment.",
            )
        elif not _changeable(shipment):
            step.result = ShipmentResult(
                shipment.public_id, False, SHIPMENT_NOT_AVAILABLE,
                "The shipment is already in production or shipped.",
            )  # fmt: skip
        elif shipment.submitted_at is None:
            step.result = ShipmentResult(shipment.public_id, True)
        else:
            step.to_call = True
            step.token = shipment_lab_call_begin(
                shipment=shipment, operation=operation, change={**change, "by": "merchant"}
            )
        steps.append(step)
    return steps


def _update_outcome(steps: list[_LabStep]) -> tuple[str, tuple[ShipmentResult, ...]]:
    """Each shipment's result, and the outcome that follows from how many succeeded."""
    results: list[ShipmentResult] = []
    for step in steps:
        if step.result is not None:
            results.append(step.result)
            continue
        outcome = step.lab_result or LabResult(False)
        results.append(
            ShipmentResult(
                step.shipment.public_id,
                outcome.successful,
                None if outcome.successful else SHIPMENT_UPDATE_FAILED,
                outcome.message or None,
            )
        )
    succeeded = sum(r.successful for r in results)
    if not results or succeeded == len(results):
        return "Updated", tuple(results)
    if succeeded == 0:
        return "FailedToUpdate", tuple(results)
    return "PartiallyUpdated", tuple(results)


def _update_after_labs(
    order: Order,
    steps: list[_LabStep],
    *,
    operation: str,
    call: LabCall,
    record: Callable[[Order, set[str]], None],
) -> ActionResult:
    """Call the labs outside any transaction, then record their answers under the order's
    lock (``record`` gets the ids of the shipments that took the change, unless none did)."""
    try:
        _labs_call(order, steps, call)
        with order_changed(order.id):
            locked = _lock(order)
            _answers_take(locked, steps, operation=operation)
            outcome, results = _update_outcome(steps)
            if outcome != "FailedToUpdate":
                record(locked, {r.shipment_id for r in results if r.successful})
            return ActionResult(outcome, results)
    except BaseException:
        _intents_end(steps)
        raise


def _check_deliverable(order: Order, *, country_code: str, shipping_method: str, path: str) -> None:
    """Refuse a change that leaves no lab able to deliver the order by its method.

    When nothing can be delivered at all right now (an item out of stock everywhere), the
    change is let through: the order's own ItemUnavailable issue already says why.
    """
    items = list(order.items.prefetch_related("assets").order_by("position"))
    methods = methods_available(
        items=order_basket(order, items),
        country_code=country_code,
        sandbox=order.environment.is_sandbox,
    )
    if methods and shipping_method not in methods:
        raise ValidationFailed.single(
            path,
            "MethodNotOffered",
            f"{shipping_method} delivery to {country_code} is not offered for this order "
            f"(available: {', '.join(methods)}).",
        )


def _before_labs(order: Order) -> bool:
    """No shipment is at a lab or on its way to one: the order can be planned afresh."""
    return order.pipeline_step != PipelineStep.SUBMIT and all(
        s.submitted_at is None for s in _live_shipments(order)
    )


def _replan(order: Order, *, path: str) -> tuple[ShipmentResult, ...]:
    """Allocate an allocated order again for its new destination or method, so its shipments
    and charges are what a quote for them gives. Unallocated orders are planned by the pipeline.
    """
    if not Shipment.objects.filter(order=order).exists():
        return ()
    Charge.objects.filter(
        order=order, charge_type__in=[ChargeType.ITEM, ChargeType.SHIPPING]
    ).delete()
    OrderItem.objects.filter(order=order).update(shipment=None)
    Shipment.objects.filter(order=order).delete()
    if not order_allocate(order=order):
        raise ValidationFailed.single(
            path, "ItemUnavailable", "No lab can make and deliver every item of the order so."
        )
    return tuple(ShipmentResult(s.public_id, True) for s in Shipment.objects.filter(order=order))


def order_update_shipping_method(*, order: Order, shipping_method: str) -> ActionResult:
    lab_state_refresh(_fresh(order))
    with order_changed(order.id):
        locked = _lock(order)
        if not _changes_possible(locked):
            return ActionResult("ActionNotAvailable")
        if _before_labs(locked):
            _check_deliverable(
                locked,
                country_code=locked.address_country_code,
                shipping_method=shipping_method,
                path="shippingMethod",
            )
            locked.shipping_method = shipping_method
            _touch(locked, "shipping_method")
            results = _replan(locked, path="shippingMethod")
            order_payment_settle(order=locked, cost=order_cost(locked))
            order_payment_wait_end(order=locked)  # a part paid before may cover it now
            return ActionResult("Updated", results)
        # Each shipment stays at its lab: the engine prices the new method there, and a lab
        # that does not deliver so is not asked (its result says so; the basket as a whole,
        # which other labs could make, is no longer the question).
        planned = {
            s.id: shipment_method_plan(shipment=s, shipping_method=shipping_method)
            for s in _live_shipments(locked)
            if _changeable(s)
        }
        unpaid = payment_raise_refusal(
            order=locked,
            cost=order_cost(locked),
            planned=[
                (s, plan)
                for s in _live_shipments(locked)
                if not isinstance(plan := planned.get(s.id, ""), str)
            ],
        )
        if unpaid is not None:  # no lab is asked: every shipment says why
            planned = {shipment_id: unpaid for shipment_id in planned}
        steps = _update_steps(
            locked,
            operation="updateShippingMethod",
            change={"shippingMethod": shipping_method},
            refusal=lambda s: found if isinstance(found := planned.get(s.id), str) else None,
        )

    def record(locked: Order, ok: set[str]) -> None:
        """What the labs were told, recorded: each shipment that took the method gets the
        carrier and price the engine gave for it, one charge adjusting the shipping."""
        shipments_method_record(
            order=locked,
            planned=[
                (shipment, plan)
                for shipment in _live_shipments(locked)
                if shipment.public_id in ok and not isinstance(plan := planned[shipment.id], str)
            ],
        )
        locked.shipping_method = shipping_method
        _touch(locked, "shipping_method")
        # A cheaper method: the difference refunded.
        order_payment_settle(order=locked, cost=order_cost(locked))

    return _update_after_labs(
        locked,
        steps,
        operation="updateShippingMethod",
        call=lambda connector, payload: connector.update_shipping_method(payload, shipping_method),
        record=record,
    )


RECIPIENT_FIELDS = {
    "recipient_name": ("name",),
    "recipient_email": ("email",),
    "recipient_phone": ("phoneNumber",),
    "address_line1": ("address", "line1"),
    "address_line2": ("address", "line2"),
    "address_postal_or_zip_code": ("address", "postalOrZipCode"),
    "address_country_code": ("address", "countryCode"),
    "address_town_or_city": ("address", "townOrCity"),
    "address_state_or_county": ("address", "stateOrCounty"),
}


def order_update_recipient(*, order: Order, recipient: dict[str, Any]) -> ActionResult:
    lab_state_refresh(_fresh(order))

    def set_recipient(locked: Order) -> None:
        for column, path in RECIPIENT_FIELDS.items():
            value: Any = recipient
            for key in path:
                value = (value or {}).get(key)
            setattr(locked, column, value or "")
        _touch(locked, *RECIPIENT_FIELDS)

    with order_changed(order.id):
        locked = _lock(order)
        if not _changes_possible(locked):
            return ActionResult("ActionNotAvailable")
        _check_deliverable(
            locked,
            country_code=recipient["address"]["countryCode"],
            shipping_method=locked.shipping_method,
            path="address.countryCode",
        )
        if _before_labs(locked):
            set_recipient(locked)
            results = _replan(locked, path="address.countryCode")
            order_payment_settle(order=locked, cost=order_cost(locked))
            order_payment_wait_end(order=locked)  # a part paid before may cover it now
            return ActionResult("Updated", results)
        steps = _update_steps(
            locked, operation="updateAddress", change={"recipient": _recipient_whole(recipient)}
        )

    def record(locked: Order, ok: set[str]) -> None:
        # Each shipment keeps the whole recipient its lab holds: one whose lab refused keeps
        # the one it had (the order's, until now: name, email, phone and address together),
        # written on it before the order's changes.
        kept = order_recipient(locked)
        for refused in _live_shipments(locked):
            if refused.public_id not in ok and refused.recipient is None:
                Shipment.objects.filter(id=refused.id).update(recipient=kept)
        set_recipient(locked)
        # Shipments that took the new recipient follow the order's again.
        ids = [s.id for s in _live_shipments(locked) if s.public_id in ok]
        Shipment.objects.filter(id__in=ids).update(recipient=None)

    return _update_after_labs(
        locked,
        steps,
        operation="updateAddress",
        call=lambda connector, payload: connector.update_address(payload, recipient),
        record=record,
    )


def _recipient_whole(recipient: dict[str, Any]) -> dict[str, Any]:
    """The recipient as an order stores it (``order_recipient``: every part, blanks empty)."""
    address = recipient.get("address") or {}
    keys = ("line1", "line2", "postalOrZipCode", "countryCode", "townOrCity", "stateOrCounty")
    return {
        "name": recipient.get("name") or "",
        "email": recipient.get("email") or "",
        "phoneNumber": recipient.get("phoneNumber") or "",
        "address": {key: address.get(key) or "" for key in keys},
    }


def order_update_metadata(*, order: Order, metadata: dict[str, Any]) -> ActionResult:
    """Replace the metadata entirely; allowed at any time, even after completion."""
    with order_changed(order.id):
        locked = _lock(order)
        locked.metadata = metadata
        _touch(locked, "metadata")
    return ActionResult("Updated")
