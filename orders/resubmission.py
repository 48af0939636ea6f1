"""Resubmitting a shipment: the order's side of a bulk resubmission, one call per shipment.

A shipment (a lab order) is sent again as a new shipment of the same order (the same items,
their print-ready files reused), to the cheapest of the allowed labs. A shipped one (a parcel
lost or damaged) is sent again only with ``KeepOriginal``, as a **reprint**: the new shipment
makes the items of the shipped one (``Shipment.reprint_of``), which keeps them and stays
shipped; a reprint sent again is a reprint of the same shipment. Its steps, each safe to run
again:

1. **plan** at the allowed labs: the cheapest plan that makes every item of the shipment at
   one lab (the engine of ``labs.allocation``);
2. **cancel** the original at its lab as the cancel option says (``CancelOption``), through
   the shipments' lab-call protocol (``orders.shipments``: the intent recorded, the lab
   called outside any transaction, its answer recorded under the order's row lock, the
   intent cleared with it);
3. **record** the resubmission (``ShipmentResubmission``: the new shipment's id, lab and
   prices, at most one per original) before the lab is asked: the intent of the submission;
4. **submit** the new lab order to the recipient the original's lab holds, whole
   (``orders.representation.shipment_recipient``: a shipment whose lab refused a new
   recipient goes on to the old one); once accepted, under the order's row lock, the new
   shipment is written with the items moved to it (a reprint's stay where they are) and the
   original's recipient, the original's issues cleared, an original its lab cancelled or
   failed closed (``Cancelled``: it is followed no more, and the order completes once its
   other shipments have shipped), ``inProduction`` shown ``InProgress`` again where it was
   ``Error`` for nothing but lab orders now resubmitted, the shipment callback sent, and a
   Failed or Done order moved back to Production by the state machine (``order_transition``)
   to follow its new lab order to Shipped. A Complete order's stage stays Complete (the state
   machine sends no second stage callback), and the reprint's ``Shipped`` callback follows.

A resubmission never charges the merchant again: the new lab's cost is the service's,
recorded in ``ShipmentResubmission.plan`` (shown to staff) and never written as a charge of
the order. An order that is cancelled (by its merchant, or by staff cancelling its last
shipment) is not resubmitted.

A worker killed anywhere resumes by reconciling with the lab rather than failing: a cancel
intent of ours left unrecorded is sent again, and a cancel the lab already made counts as done
(the connector asks the lab where its order stands before believing a refusal); a recorded
resubmission whose answer was not is looked up at the new lab by its shipment id
(``LabConnector.find``) and the lab's order adopted, so the lab is not asked for a second one.

Public functions:

- ``shipment_resubmit(*, shipment_id, labs=(), cancel_option=CANCEL_ORIGINAL,
  shipping_method="") -> Resubmission``: resubmit one shipment at the cheapest of ``labs``
  (every active lab when empty), by ``shipping_method`` (the shipment's own when empty). Never
  raises for a refusal: the answer says whether it was resubmitted ("Resubmitted as ..." or
  "Reprinted as ..."), why not (a shipped one with another option than ``KeepOriginal``:
  ``ALREADY_SHIPPED``), and the new shipment's id. Calling it again for the same shipment
  answers "Already resubmitted as ...".
- ``shipments_standing(*, shipments) -> dict[int, ShipmentStanding]``: what stands in the way
  of resubmitting each of the shipments (loaded with their orders by the caller), for a review
  before any is resubmitted.
- ``shipment_resubmission_offer(*, shipment, labs=(), shipping_method="")``: the lab a
  resubmission would go to now and its cost (``ResubmissionOffer``), or why no allowed lab
  can make it: the very plan ``shipment_resubmit`` makes first.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from common.chunks import chunks
from common.ids import PREFIXES, format_id, new_id
from labs.allocation import AllocationPlan, Infeasible, plan_basket
from labs.catalogue import CatalogueSnapshot, catalogue_snapshot
from labs.connectors import LabConnector, LabOrder, LabResult
from orders.document import order_changed
from orders.events import shipment_changed
from orders.issues import LAB_ERROR, PRINT_READY_FAILED, SUBMISSION_FAILED
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
from orders.parts import items_shipment_id
from orders.pipeline.state_machine import order_transition
from orders.pipeline.steps.allocate import order_basket
from orders.pipeline.steps.prepare import order_print_files_restore
from orders.representation import shipment_address
from orders.shipments import (
    BUSY_MESSAGE,
    lab_call,
    shipment_connector,
    shipment_lab_call_begin,
    shipment_lab_call_end,
)

RESUBMISSION_CANCEL = "cancel (resubmission)"
ALREADY_SHIPPED = "Already shipped: use KeepOriginal to reprint"
ORDER_CANCELLED = "Order cancelled: a cancelled order is not resubmitted."
NO_ALLOWED_LAB = "No allowed lab"  # how the refusal of a shipment no allowed lab makes begins


@dataclass(frozen=True)
class Resubmission:
    """What ``shipment_resubmit`` did: ``message`` says what happened or why not."""

    successful: bool
    message: str
    new_shipment_id: int | None = None


@dataclass(frozen=True)
class ShipmentStanding:
    """One shipment as a resubmission would find it: ``shipped``, ``order_cancelled``, and
    already resubmitted (accepted by the new lab) as ``resubmitted_as``."""

    shipped: bool
    order_cancelled: bool
    resubmitted_as: int | None = None


@dataclass(frozen=True)
class ResubmissionOffer:
    """Where a resubmission would go now: the cheapest allowed lab and what it charges the
    service (its prices for the items and shipping, no tax, in ``currency``)."""

    lab_code: str
    currency: str
    cost: Decimal


def shipments_standing(*, shipments: Iterable[Shipment]) -> dict[int, ShipmentStanding]:
    """Each of ``shipments`` (their orders loaded) as a resubmission would find it, by id."""
    shipments = list(shipments)
    resubmitted: dict[int, int] = {}
    for piece in chunks(sorted({shipment.id for shipment in shipments})):
        resubmitted.update(
            ShipmentResubmission.objects.filter(
                original_id__in=piece, submitted_at__isnull=False
            ).values_list("original_id", "new_shipment_id")
        )
    return {
        shipment.id: ShipmentStanding(
            shipped=shipment.status == ShipmentStatus.SHIPPED,
            order_cancelled=shipment.order.stage == Stage.CANCELLED,
            resubmitted_as=resubmitted.get(shipment.id),
        )
        for shipment in shipments
    }


def shipment_resubmittable(*, shipment: Shipment, cancel_option: str) -> bool:
    """Whether the shipment's own state lets ``cancel_option`` resubmit it: a shipped one is
    reprinted with ``KeepOriginal`` alone (nothing is left to cancel at its lab)."""
    return shipment.status != ShipmentStatus.SHIPPED or cancel_option == CancelOption.KEEP_ORIGINAL


def _candidates(labs: Sequence[str], catalogue: CatalogueSnapshot) -> list[str]:
    """``labs``, else every active lab."""
    return list(labs) or list(catalogue.lab_codes)


def shipment_resubmission_offer(
    *, shipment: Shipment, labs: Sequence[str] = (), shipping_method: str = ""
) -> ResubmissionOffer | str:
    """The lab ``shipment_resubmit`` would send the shipment to now, with its cost; else the
    sentence saying why no allowed lab can make it."""
    plan, why = _cheapest_plan(shipment=shipment, labs=labs, shipping_method=shipping_method)
    if plan is None:
        return why
    (planned,) = plan.shipments
    return ResubmissionOffer(planned.lab_code, plan.currency, plan.items_cost + plan.shipping_cost)


def shipment_resubmit(
    *,
    shipment_id: int,
    labs: Sequence[str] = (),
    cancel_option: str = CancelOption.CANCEL_ORIGINAL,
    shipping_method: str = "",
) -> Resubmission:
    """Resubmit one shipment (see the module's docstring); safe to call again for the same one."""
    record = ShipmentResubmission.objects.filter(original_id=shipment_id).first()
    resumed = record is not None  # recorded by an earlier call: its lab call may have happened
    notes: list[str] = []
    if record is None:
        shipment = (
            Shipment.objects.select_related("order__environment").filter(id=shipment_id).first()
        )
        if shipment is None:
            return Resubmission(
                False, f"No shipment {format_id(PREFIXES['shipment'], shipment_id)}."
            )
        if not shipment_resubmittable(shipment=shipment, cancel_option=cancel_option):
            return Resubmission(False, ALREADY_SHIPPED)
        if shipment.order.stage == Stage.CANCELLED:
            return Resubmission(False, ORDER_CANCELLED)
        plan, why = _cheapest_plan(shipment=shipment, labs=labs, shipping_method=shipping_method)
        if plan is None:
            return Resubmission(False, why)
        go_on, note = _cancel_original(shipment, cancel_option)
        if not go_on:
            return Resubmission(False, note)
        if note:
            notes.append(note)
        (planned,) = plan.shipments
        record, _ = ShipmentResubmission.objects.get_or_create(
            original_id=shipment.id,
            defaults={
                "new_shipment_id": new_id(),
                "lab_code": planned.lab_code,
                "lab_country_code": planned.lab_country_code,
                "shipping_method": planned.shipping_method,
                "carrier_name": planned.carrier_name,
                "carrier_service": planned.carrier_service,
                "plan": _plan_prices(plan),
            },
        )
    new_public_id = format_id(PREFIXES["shipment"], record.new_shipment_id)
    if record.submitted_at is not None:
        return Resubmission(
            True, f"Already resubmitted as {new_public_id}.", record.new_shipment_id
        )
    if resumed and cancel_option != CancelOption.KEEP_ORIGINAL:  # cancelled by the earlier call
        cancelled = Shipment.objects.filter(id=shipment_id, status=ShipmentStatus.CANCELLED)
        if cancelled.exists():
            notes.append("Original cancelled.")
    return _submit(record, notes, resumed=resumed)


def _cheapest_plan(
    *, shipment: Shipment, labs: Sequence[str], shipping_method: str
) -> tuple[AllocationPlan | None, str]:
    """The cheapest plan that makes all the shipment's items at one of ``labs`` (every active
    lab when empty), each priced against the same catalogue snapshot."""
    catalogue = catalogue_snapshot()
    candidates = _candidates(labs, catalogue)
    order = shipment.order
    items = list(
        OrderItem.objects.filter(shipment_id=items_shipment_id(shipment))
        .prefetch_related("assets")
        .order_by("position")
    )
    if not items:
        return None, "The shipment has no items."
    basket = order_basket(order, items)
    best: AllocationPlan | None = None
    why = ""
    for code in candidates:
        try:
            plan = plan_basket(
                items=basket,
                country_code=shipment_address(shipment)["countryCode"],
                shipping_method=shipping_method or shipment.shipping_method,
                currency=order.currency,
                catalogue=catalogue,
                lab_codes=[code],
                sandbox=order.environment.is_sandbox,
            )
        except Infeasible as infeasible:
            why = "; ".join(
                f.description for fs in infeasible.failures_by_item_key.values() for f in fs
            )
            continue
        except ValueError as exc:
            why = str(exc)
            continue
        if best is None or plan.total_cost < best.total_cost:
            best = plan
    if best is None:
        labs = ", ".join(candidates) or "no lab"
        why = why.rstrip(".") or "no offer"  # the engine's sentence keeps no full stop of its own
        return None, f"{NO_ALLOWED_LAB} ({labs}) can make the shipment: {why}."
    return best, ""


def _cancel_original(shipment: Shipment, option: str) -> tuple[bool, str]:
    """Cancel the original at its lab as ``option`` says; (may go on, note for the message)."""
    if option == CancelOption.KEEP_ORIGINAL or shipment.status == ShipmentStatus.CANCELLED:
        return True, ""
    if shipment.submitted_at is not None:
        connector = shipment_connector(shipment)
        # An intent of ours left by a killed worker is taken over (the job's claim makes this
        # worker the only one on the row); the lab takes a second cancel as the first.
        Shipment.objects.filter(id=shipment.id, lab_operation=RESUBMISSION_CANCEL).update(
            lab_operation=""
        )
        token = shipment_lab_call_begin(shipment=shipment, operation=RESUBMISSION_CANCEL)
        if token is None:
            return option != CancelOption.CANCEL_ORIGINAL, f"Original kept: {BUSY_MESSAGE}"
        try:
            result = lab_call(connector, lab_order(shipment), lambda c, p: c.cancel(p))
        except BaseException:
            shipment_lab_call_end(shipment=shipment, token=token)
            raise
        if not result.successful:
            shipment_lab_call_end(shipment=shipment, token=token)
            why = result.message or f"Lab {shipment.lab_code} refused to cancel."
            if option == CancelOption.CANCEL_ORIGINAL:
                return False, f"The original lab order could not be cancelled: {why}"
            return True, f"Original kept (not cancelled: {why})."
        # The lab's answer and the end of the intent are recorded together: a worker killed
        # before this commits leaves the intent, and the next run sends the cancel again.
        _original_cancel_record(shipment, token=token)
        return True, "Original cancelled."
    _original_cancel_record(shipment, token=None)
    return True, "Original cancelled."


def _original_cancel_record(shipment: Shipment, *, token: datetime | None) -> None:
    """The original cancelled, under the order's row lock, with its callback; our intent
    (``token``) ended in the same transaction."""
    with transaction.atomic():
        order = Order.objects.select_for_update().get(id=shipment.order_id)
        if token is not None:
            shipment_lab_call_end(shipment=shipment, token=token)
        if Shipment.objects.filter(id=shipment.id, status=ShipmentStatus.PROCESSING).update(
            status=ShipmentStatus.CANCELLED
        ):
            shipment.status = ShipmentStatus.CANCELLED
            shipment_changed(order=order, shipment=shipment)


def _plan_prices(plan: AllocationPlan) -> dict[str, object]:
    (planned,) = plan.shipments
    return {
        "currency": plan.currency,
        "total": str(plan.total_cost),
        "items": {line.key: [str(line.total_cost), str(line.tax)] for line in plan.item_lines},
        "shipping": [str(planned.shipping_cost), str(planned.shipping_tax)],
    }


def _submit(record: ShipmentResubmission, notes: list[str], *, resumed: bool) -> Resubmission:
    """Submit the recorded resubmission at its lab (``resumed``: recorded by an earlier call,
    whose lab call may have reached the lab: its order there is adopted if it has one), and
    record the new shipment once the lab accepted it."""
    original = Shipment.objects.select_related("order__environment").get(id=record.original_id)
    order = original.order
    new_public_id = format_id(PREFIXES["shipment"], record.new_shipment_id)
    missing = _print_files_missing(order)
    if missing:
        return Resubmission(False, " ".join([*notes, missing]))
    payload = replace(
        lab_order(original),
        shipment_id=new_public_id,
        lab_code=record.lab_code,
        shipping_method=record.shipping_method,
        reference="",
        held_since=None,
        held_seconds=0.0,
        carrier_name=record.carrier_name,
        carrier_service=record.carrier_service,
    )
    probe = Shipment(order=order, lab_code=record.lab_code)
    connector = shipment_connector(probe)
    result: LabResult | None = None
    if resumed:  # its earlier call may have reached the lab: the lab's order is adopted
        found = lab_call(connector, payload, _lab_order_found)
        result = found if found.successful else None
    if result is None:
        result = lab_call(connector, payload, lambda c, p: c.submit(p))
    now = timezone.now()
    if not result.successful:
        message = result.message or f"Lab {record.lab_code} refused the shipment."
        with order_changed(order.id):  # the issue is on the order's document
            OrderIssue.objects.update_or_create(
                order=order,
                object_id=original.public_id,
                error_code=SUBMISSION_FAILED,
                defaults={
                    "description": f"Lab {record.lab_code} refused the resubmission of "
                    f"{original.public_id} as {new_public_id}: {message}"
                },
            )
        return Resubmission(False, " ".join([*notes, f"Lab {record.lab_code} refused: {message}"]))
    with transaction.atomic():
        order = Order.objects.select_for_update().select_related("environment").get(id=order.id)
        locked = ShipmentResubmission.objects.select_for_update().get(id=record.id)
        if locked.submitted_at is not None:
            return Resubmission(
                True, f"Already resubmitted as {new_public_id}.", locked.new_shipment_id
            )
        original = Shipment.objects.get(id=original.id)  # as it stands under the lock
        reprint = _reprints(original)
        new = Shipment.objects.create(
            id=locked.new_shipment_id,
            order=order,
            lab_code=locked.lab_code,
            lab_country_code=locked.lab_country_code,
            shipping_method=locked.shipping_method,
            carrier_name=locked.carrier_name,
            carrier_service=locked.carrier_service,
            lab_order_reference=result.reference,
            submitted_at=now,
            recipient=original.recipient,
            reprint_of_id=items_shipment_id(original) if reprint else None,
        )
        if not reprint:
            OrderItem.objects.filter(shipment=original).update(shipment=new)
        locked.submitted_at = now
        locked.save(update_fields=["submitted_at"])
        OrderIssue.objects.filter(
            Q(object_id=original.public_id) | Q(object_id=new_public_id), order=order
        ).delete()
        closed = _lab_ended_close(original)
        shown = _in_production_reopened(order) if original.lab_ended_at is not None else {}
        if order.pipeline_step in (PipelineStep.FAILED, PipelineStep.DONE):
            # The order has a lab order to follow again.
            order_transition(order=order, step=PipelineStep.PRODUCTION, due_at=now, **shown)
        else:
            for name, value in {"last_updated": now, **shown}.items():
                setattr(order, name, value)
            order.save(update_fields=["last_updated", *shown])
        if closed:
            shipment_changed(order=order, shipment=original)
        shipment_changed(order=order, shipment=new)
    done = "Reprinted" if reprint else "Resubmitted"
    message = " ".join(
        [f"{done} as {new_public_id} at {locked.lab_code}.", *notes, _cost_note(locked)]
    )
    return Resubmission(True, message, locked.new_shipment_id)


def _reprints(original: Shipment) -> bool:
    """Whether the new shipment is a reprint: of a shipped shipment (which keeps its items),
    or of a reprint (which has none of its own)."""
    return original.status == ShipmentStatus.SHIPPED or original.reprint_of_id is not None


def _lab_ended_close(original: Shipment) -> bool:
    """Close an original its lab failed (still ``Processing``, no longer followed) once it is
    resubmitted, whatever the cancel option: made ``Cancelled`` (the instance too), so that
    the order no longer waits for it. True when it was closed here (a lab-cancelled or
    cancelled original is closed already)."""
    if original.lab_ended_at is None:
        return False
    closed = Shipment.objects.filter(id=original.id, status=ShipmentStatus.PROCESSING).update(
        status=ShipmentStatus.CANCELLED
    )
    if closed:
        original.status = ShipmentStatus.CANCELLED
    return bool(closed)


def _in_production_reopened(order: Order) -> dict[str, str]:
    """``in_production`` InProgress again (the new lab order's progress) when it shows Error
    and no lab order it stands for is left (its LabError and SubmissionFailed issues all gone
    with the resubmissions): the fields to write, or none."""
    if order.in_production != DetailState.ERROR:
        return {}
    failing = OrderIssue.objects.filter(order=order, error_code__in=[LAB_ERROR, SUBMISSION_FAILED])
    return {} if failing.exists() else {"in_production": DetailState.IN_PROGRESS}


def _lab_order_found(connector: LabConnector, payload: LabOrder) -> LabResult:
    """The lab's order for the payload's shipment id, as accepted; unsuccessful without one."""
    return connector.find(payload) or LabResult(False, message="The lab has no such order.")


def _print_files_missing(order: Order) -> str:
    """A late resubmission (retention deleted the order's files) downloads and renders them
    again first: "" when they are there, else why they cannot be made again."""
    if order_print_files_restore(order=order, claimed=False):
        return ""
    issue = (
        OrderIssue.objects.filter(order=order, error_code=PRINT_READY_FAILED)
        .order_by("-id")
        .first()
    )
    return issue.description if issue else "The print files could not be made again."


def _cost_note(record: ShipmentResubmission) -> str:
    """The row's sentence on money: the lab's cost is the service's, never the merchant's."""
    if not record.plan:
        return "No charge to the merchant."
    return (
        f"Lab cost {record.lab_cost} {record.plan['currency']} (the service's); "
        "no charge to the merchant."
    )
