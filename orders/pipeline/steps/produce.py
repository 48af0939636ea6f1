"""Steps 5 to 7: submit each shipment to its lab, then follow production and shipping."""

from dataclasses import replace
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from common.db import rows_update
from labs.connectors import LabConnector, LabProgress, lab_connector
from orders.charges import refund_write
from orders.events import shipment_changed
from orders.issues import SUBMISSION_FAILED
from orders.lab_orders import lab_order
from orders.models import Order, OrderIssue, Shipment, ShipmentStatus
from orders.parts import ShipmentParts
from orders.pipeline.claims import ClaimLost, order_claim_renew, order_claimed_transaction
from orders.selectors import order_shipment_parts


def _connector(parts: ShipmentParts, shipment: Shipment, *, sandbox: bool) -> LabConnector:
    code = shipment.lab_code
    return lab_connector(lab_code=code, lab=parts.labs.get(code), sandbox=sandbox)


def order_shipments_submit(*, order: Order) -> tuple[bool | None, datetime | None]:
    """Submit every shipment not yet submitted.

    Returns (True, None) when all are submitted, (None, retry time) while a lab refuses and
    attempts remain, (False, None) when a lab refused every attempt or refused for good (an
    unsuccessful answer that is not ``retryable``, e.g. Site Flow's 4xx). A refused shipment has one
    ``order.shipments.SubmissionFailed`` issue, replaced at each attempt (not appended). A lab
    must treat the shipment id as the idempotency key of a submission: a crash between its
    answer and our commit makes us submit again.
    """
    now = timezone.now()
    retry_at: datetime | None = None
    sandbox = order.environment.is_sandbox
    parts = order_shipment_parts(order=order)
    for shipment in parts.shipments:
        if shipment.submitted_at is not None:
            continue
        connector = _connector(parts, shipment, sandbox=sandbox)
        result = connector.submit(lab_order(shipment, parts))
        if result.successful:
            shipment_submission_record(
                order=order,
                shipment=shipment,
                reference=result.reference,
                submitted_at=now,
                connector=connector,
                parts=parts,
            )
            continue
        attempts = _refusal_record(order, shipment, result.message, final=not result.retryable)
        if attempts >= settings.LAB_SUBMIT_ATTEMPTS or not result.retryable:
            return False, None
        delay = timedelta(
            seconds=min(settings.ASSET_RETRY_BASE_SECONDS * 2 ** (attempts - 1), 3600)
        )
        retry_at = min(retry_at or now + delay, now + delay)
    if retry_at is not None:
        return None, retry_at
    return True, None


def _refusal_record(order: Order, shipment: Shipment, message: str, *, final: bool) -> int:
    """Count a refused submission (under our claim) and say so in the shipment's one issue;
    ``final``: the lab refused for good, no attempt follows."""
    with order_claimed_transaction(order=order):
        attempts = shipment.submit_attempts + 1
        Shipment.objects.filter(id=shipment.id).update(submit_attempts=attempts)
        limit = settings.LAB_SUBMIT_ATTEMPTS
        progress = (
            f"after {attempts} attempt(s)"
            if attempts >= limit or final
            else f"(attempt {attempts} of {limit})"
        )
        OrderIssue.objects.update_or_create(
            order=order,
            object_id=shipment.public_id,
            error_code=SUBMISSION_FAILED,
            defaults={
                "description": f"Lab {shipment.lab_code} refused shipment "
                f"{shipment.public_id} {progress}: {message}"
            },
        )
    shipment.submit_attempts = attempts
    return attempts


def shipment_submission_record(
    *,
    order: Order,
    shipment: Shipment,
    reference: str,
    submitted_at: datetime,
    connector: LabConnector,
    parts: ShipmentParts | None = None,
) -> None:
    """Record an accepted submission under our claim and the order's row lock (as the actions
    take it): a cancel either sees the submission and cancels at the lab, or came first, and
    then the lab order is withdrawn here (``parts``: as ``lab_order`` takes them)."""
    try:
        with order_claimed_transaction(order=order):
            rows_update(
                Shipment,
                {"id": shipment.id, "status": ShipmentStatus.PROCESSING},
                {"submitted_at": submitted_at, "lab_order_reference": reference},
            )
            OrderIssue.objects.filter(order=order, object_id=shipment.public_id).delete()
    except BaseException as exc:
        cancelled = Shipment.objects.filter(id=shipment.id, status=ShipmentStatus.CANCELLED)
        if isinstance(exc, ClaimLost) and cancelled.exists():
            connector.cancel(replace(lab_order(shipment, parts), reference=reference))
        raise  # otherwise the worker that took over submits again (same id) and records it


def order_shipments_track(*, order: Order) -> tuple[bool, bool, datetime | None, list[Shipment]]:
    """Ask each lab where its shipment stands; record production and dispatch (inside the
    caller's transaction).

    Returns (any shipped, all shipped, when to ask again, the shipments shipped just now). The
    caller records their ``Shipped`` events once it has moved the order on, so each event shows
    the order as it then is (``shipping: InProgress``).

    Asking a lab holds no lock; before its first write to a shipment, the step renews its claim,
    which locks the order row first, as the actions lock it before its shipments: a cancel
    racing the step waits for it, or the step for the cancel, and neither deadlocks. An order
    whose shipments have not moved is not locked while the labs are asked.
    """
    locked = False

    def order_locked() -> None:
        nonlocal locked
        if not locked:
            order_claim_renew(order=order)
            locked = True

    now = timezone.now()
    sandbox = order.environment.is_sandbox
    any_shipped = False
    all_shipped = True
    next_check: datetime | None = None
    shipped_now: list[Shipment] = []
    parts = order_shipment_parts(order=order)
    for shipment in parts.shipments:
        if shipment.status == ShipmentStatus.SHIPPED:
            any_shipped = True
            continue
        assert shipment.submitted_at is not None
        planned = replace(
            lab_order(shipment, parts),
            carrier_name=shipment.carrier_name,
            carrier_service=shipment.carrier_service,
        )
        progress = _connector(parts, shipment, sandbox=sandbox).progress(
            planned, submitted_at=shipment.submitted_at, now=now
        )
        produced = bool(progress.in_production_at and shipment.in_production_at is None)
        if produced:
            shipment.in_production_at = progress.in_production_at
        if produced or progress.shipped_at:
            order_locked()
        if progress.shipped_at and _shipped_record(shipment, progress, produced=produced):
            shipped_now.append(shipment)
        elif produced:
            shipment.save(update_fields=["in_production_at"])
        if progress.shipped_at:
            any_shipped = True
            continue
        all_shipped = False
        if progress.next_check_at is not None:
            next_check = min(next_check or progress.next_check_at, progress.next_check_at)
    return any_shipped, all_shipped, next_check, shipped_now


def _shipped_record(shipment: Shipment, progress: LabProgress, *, produced: bool) -> bool:
    """Record the shipment as shipped, with its production time too when ``produced`` just now
    (one UPDATE); False when it is no longer processing. The instance shows what was written."""
    shipped = {
        "status": ShipmentStatus.SHIPPED,
        "dispatch_date": progress.shipped_at,
        "carrier_name": progress.carrier_name or shipment.carrier_name,
        "carrier_service": progress.carrier_service or shipment.carrier_service,
        "tracking_number": progress.tracking_number,
        "tracking_url": progress.tracking_url,
    }
    written = {**shipped, "in_production_at": shipment.in_production_at} if produced else shipped
    if not rows_update(Shipment, {"id": shipment.id, "status": ShipmentStatus.PROCESSING}, written):
        return False
    for name, value in shipped.items():
        setattr(shipment, name, value)
    return True


def submitted_shipments_withdraw(*, order: Order) -> tuple[list[Shipment], list[Shipment]]:
    """Ask the labs to cancel the shipments already submitted, once another shipment of the
    order was refused for good (outside any transaction: these are lab calls).

    Why cancel rather than carry on with them: the order can no longer be delivered as the
    merchant placed it, and the merchant sees it as failed (``inProduction: Error``). Left at
    their labs, those shipments would be made, shipped and charged without anyone following
    them (the order no longer reaches the tracking step), so they are withdrawn and refunded
    instead; the merchant can place the order again. Returns (cancelled, kept): ``kept`` are
    the ones a lab would not cancel (production started, or no cancel capability), which are
    then followed to dispatch as usual (see ``submission_failure_record``).
    """
    sandbox = order.environment.is_sandbox
    cancelled: list[Shipment] = []
    kept: list[Shipment] = []
    parts = order_shipment_parts(order=order)
    for shipment in parts.shipments:
        if shipment.submitted_at is None:
            continue
        result = _connector(parts, shipment, sandbox=sandbox).cancel(lab_order(shipment, parts))
        (cancelled if result.successful else kept).append(shipment)
    return cancelled, kept


def submission_failure_record(
    *, order: Order, cancelled: list[Shipment], kept: list[Shipment]
) -> None:
    """Record the withdrawal of ``cancelled`` (inside the caller's transaction, before it moves
    the order on): each becomes ``Cancelled`` with a shipment event, and what was charged for
    them is refunded. When some shipments could not be withdrawn (``kept``), the shipments
    never submitted are cancelled and refunded too, so the order can follow the kept ones to
    dispatch; otherwise they stay as they are (not at any lab) and the order fails, still
    cancellable by the merchant, which refunds the rest."""
    withdrawn = list(cancelled)
    if kept:  # the shipments never submitted, at no lab
        withdrawn += (
            Shipment.objects.filter(order=order, submitted_at=None)
            .exclude(status=ShipmentStatus.CANCELLED)
            .order_by("created", "id")
        )
    changed = []
    for shipment in withdrawn:
        if Shipment.objects.filter(id=shipment.id, status=ShipmentStatus.PROCESSING).update(
            status=ShipmentStatus.CANCELLED
        ):
            shipment.status = ShipmentStatus.CANCELLED
            changed.append(shipment)
    if changed:
        refund_write(order=order, shipments=changed)
    for shipment in changed:
        shipment_changed(order=order, shipment=shipment)
