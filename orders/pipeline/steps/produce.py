"""Steps 5 to 7: submit each shipment to its lab, then follow production and shipping."""

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from labs.connectors import (
    LAB_CANCELLED,
    LabConnector,
    LabOrder,
    LabProgress,
    LabResult,
    lab_connector,
)
from orders.charges import refund_write
from orders.document import order_document_write
from orders.events import shipment_changed
from orders.issues import LAB_CANCELLED as LAB_CANCELLED_ISSUE
from orders.issues import LAB_ERROR as LAB_ERROR_ISSUE
from orders.issues import SUBMISSION_FAILED
from orders.lab_orders import lab_order
from orders.models import Order, OrderIssue, Shipment, ShipmentStatus
from orders.parts import ShipmentParts
from orders.pipeline.claims import (
    ClaimLost,
    order_claim_check,
    order_claim_renew,
    order_claimed_transaction,
)
from orders.pipeline.lanes import lab_busy_retry, lab_call_place
from orders.selectors import order_shipment_parts


def _connector(parts: ShipmentParts, shipment: Shipment, *, sandbox: bool) -> LabConnector:
    code = shipment.lab_code
    return lab_connector(lab_code=code, lab=parts.labs.get(code), sandbox=sandbox)


def _lab_place(connector: LabConnector, lab_code: str) -> AbstractContextManager[bool]:
    """Whether the step may call the lab now: a real lab's calls are limited per lab
    (``orders.pipeline.lanes.lab_call_place``); the simulator, which waits on nothing, is not."""
    return nullcontext(True) if connector.simulated else lab_call_place(lab_code)


def order_shipments_submit(*, order: Order) -> tuple[bool | None, datetime | None]:
    """Submit every shipment not yet submitted.

    Returns (True, None) when all are submitted, (None, retry time) while a lab refuses and
    attempts remain or while a lab's calls are all taken (``_lab_place``: no attempt counted),
    (False, None) when a lab refused every attempt or refused for good (an unsuccessful answer
    that is not ``retryable``, e.g. Site Flow's 4xx). A refused shipment has one
    ``order.shipments.SubmissionFailed`` issue, replaced at each attempt (not appended).

    Each submission is recorded as intended on the shipment before the lab is called
    (``SUBMIT_OPERATION``), and the lab's answer with the reference clears it. A shipment
    still marked so was sent by a run that never recorded the answer (a worker killed during
    the call, a lab that failed after storing it): the lab's order for it is looked up first
    (``LabConnector.find``) and adopted, so no second lab order is asked for. A lab must still
    treat the shipment id as the idempotency key of a submission, for the lab that cannot say.
    """
    now = timezone.now()
    retry_at: datetime | None = None
    sandbox = order.environment.is_sandbox
    parts = order_shipment_parts(order=order)
    for shipment in parts.shipments:
        if shipment.submitted_at is not None:
            continue
        connector = _connector(parts, shipment, sandbox=sandbox)
        payload = lab_order(shipment, parts)
        order_claim_check(order)  # no lab call for an order another worker has taken over
        with _lab_place(connector, shipment.lab_code) as placed:
            result = _submitted(connector, shipment, payload) if placed else None
        if result is None:  # the lab's calls are all taken: no attempt, asked again soon
            busy = now + lab_busy_retry()
            retry_at = min(retry_at or busy, busy)
            continue
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


# The intent of a submission whose answer is not recorded yet (``Shipment.lab_operation``).
SUBMIT_OPERATION = "submit"


def _submitted(connector: LabConnector, shipment: Shipment, payload: LabOrder) -> LabResult:
    """The lab's answer to the shipment's submission: the lab's order adopted when an earlier
    run's submission reached the lab unanswered (its intent still recorded), else the lab
    asked, with the intent recorded first."""
    if shipment.lab_operation == SUBMIT_OPERATION:
        found = connector.find(payload)
        if found is not None:
            return found
    _submission_intent_record(shipment)
    return connector.submit(payload)


def _submission_intent_record(shipment: Shipment) -> None:
    """Record on the shipment (not yet submitted) that it is being sent to its lab."""
    Shipment.objects.filter(id=shipment.id, submitted_at=None).update(
        lab_operation=SUBMIT_OPERATION, lab_operation_since=timezone.now()
    )
    shipment.lab_operation = SUBMIT_OPERATION


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
        order_document_write(order.id)
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
            Shipment.objects.filter(id=shipment.id, status=ShipmentStatus.PROCESSING).update(
                submitted_at=submitted_at,
                lab_order_reference=reference,
                simulated=connector.simulated,
                lab_operation="",
                lab_operation_since=None,
            )
            # The document shows the issues, not the submission: written when one went.
            cleared, _ = OrderIssue.objects.filter(
                order=order, object_id=shipment.public_id
            ).delete()
            if cleared:
                order_document_write(order.id)
    except BaseException as exc:
        cancelled = Shipment.objects.filter(id=shipment.id, status=ShipmentStatus.CANCELLED)
        if isinstance(exc, ClaimLost) and cancelled.exists():
            connector.cancel(replace(lab_order(shipment, parts), reference=reference))
        raise  # otherwise the worker that took over submits again (same id) and records it


@dataclass
class Tracked:
    """What one round of asking the labs found (``order_shipments_track``)."""

    any_shipped: bool = False
    all_shipped: bool = True
    next_check: datetime | None = None  # when to ask again (None: nothing left to ask)
    shipped_now: list[Shipment] = field(default_factory=list)
    # Ended by their labs just now (cancelled: status Cancelled; failed: still Processing).
    cancelled_now: list[Shipment] = field(default_factory=list)
    failed_now: list[Shipment] = field(default_factory=list)
    # A lab order its lab ended still holds items (not resubmitted yet): the order cannot
    # complete until staff resubmit or cancel it.
    stranded: bool = False


def order_shipments_track(*, order: Order) -> Tracked:
    """Ask each lab where its shipment stands; record production, dispatch and a lab's own
    cancel or failure (inside the caller's transaction, with the order's document).

    The caller records the ``Shipped`` events once it has moved the order on, so each event
    shows the order as it then is (``shipping: InProgress``), and the events of lab orders the
    labs ended (``shipments.shipment#Cancelled``, ``details.inProduction#Error``). A lab order
    its lab ended is recorded once (its ``lab_ended_at``, with one ``LabCancelled`` or
    ``LabError`` issue) and never asked about again.

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
    tracked = Tracked()
    parts = order_shipment_parts(order=order)
    for shipment in parts.shipments:
        if shipment.status == ShipmentStatus.SHIPPED:
            tracked.any_shipped = True
            continue
        if shipment.lab_ended_at is not None:  # failed at its lab: waits for staff
            tracked.all_shipped = False
            tracked.stranded = True
            continue
        assert shipment.submitted_at is not None
        planned = replace(
            lab_order(shipment, parts),
            carrier_name=shipment.carrier_name,
            carrier_service=shipment.carrier_service,
        )
        connector = _connector(parts, shipment, sandbox=sandbox)
        with _lab_place(connector, shipment.lab_code) as placed:
            progress = (
                connector.progress(planned, submitted_at=shipment.submitted_at, now=now)
                if placed
                else None
            )
        if progress is None:  # the lab's calls are all taken: asked again soon
            tracked.all_shipped = False
            busy = now + lab_busy_retry()
            tracked.next_check = min(tracked.next_check or busy, busy)
            continue
        if progress.ended == LAB_CANCELLED and shipment.lab_operation == "cancel":
            # A cancel of ours whose answer is awaited: the lab made it, and it is recorded as
            # the cancel it is (refunded) by its caller or the late answer's job, not as the
            # lab's own (``orders.shipments.shipment_lab_answer_reconcile``).
            tracked.all_shipped = False
            busy = now + lab_busy_retry()
            tracked.next_check = min(tracked.next_check or busy, busy)
            continue
        if progress.ended:
            order_locked()
            tracked.all_shipped = False
            recorded = _lab_end_record(order, shipment, progress, now=now)
            if recorded is None:  # a cancel of ours began since the shipment was read
                busy = now + lab_busy_retry()
                tracked.next_check = min(tracked.next_check or busy, busy)
                continue
            tracked.stranded = True
            if recorded:
                cancelled = progress.ended == LAB_CANCELLED
                (tracked.cancelled_now if cancelled else tracked.failed_now).append(shipment)
            continue
        produced = bool(progress.in_production_at and shipment.in_production_at is None)
        if produced:
            shipment.in_production_at = progress.in_production_at
        if produced or progress.shipped_at:
            order_locked()
        if progress.shipped_at and _shipped_record(shipment, progress, produced=produced):
            tracked.shipped_now.append(shipment)
        elif produced:
            shipment.save(update_fields=["in_production_at"])
        if progress.shipped_at:
            tracked.any_shipped = True
            continue
        tracked.all_shipped = False
        if progress.next_check_at is not None:
            wanted = progress.next_check_at
            tracked.next_check = min(tracked.next_check or wanted, wanted)
    if tracked.all_shipped and _lab_cancelled_with_items(order):
        tracked.all_shipped = False
        tracked.stranded = True
    if tracked.shipped_now or tracked.cancelled_now or tracked.failed_now:
        # What the labs did shows on the order's document (shipments shipped with their
        # tracking, cancelled, issues): written here, under the order's lock taken above, so
        # that a caller outside the state machine (whose moves and events write it again)
        # leaves it true too.
        order_document_write(order.id)
    return tracked


def _lab_cancelled_with_items(order: Order) -> bool:
    """Whether a lab order its lab cancelled still holds items (cancelled shipments are not
    among those tracked): asked only when everything else has shipped."""
    return Shipment.objects.filter(
        order=order,
        status=ShipmentStatus.CANCELLED,
        lab_ended_at__isnull=False,
        items__isnull=False,
    ).exists()


def _lab_end_record(
    order: Order, shipment: Shipment, progress: LabProgress, *, now: datetime
) -> bool | None:
    """Record that the lab ended the lab order on its side, once: a cancel makes the shipment
    ``Cancelled`` with a ``LabCancelled`` issue, a failure leaves it ``Processing`` with a
    ``LabError`` issue; either is no longer followed. False when it was recorded already (or
    the shipment is no longer processing). The instance shows what was written.

    A cancel the lab reports is not its own while a cancel of ours awaits its answer: that is
    read from the row as it is now (under the order's lock, the condition of the write), not
    from the instance, which was read before the labs were asked, when the merchant's cancel
    may not have begun. Then nothing is written and the answer is None: the cancel, or the
    job that settles its late answer, records it refunded."""
    cancelled = progress.ended == LAB_CANCELLED
    written: dict[str, object] = {"lab_ended_at": now}
    if cancelled:
        written["status"] = ShipmentStatus.CANCELLED
    processing = Shipment.objects.filter(
        id=shipment.id, status=ShipmentStatus.PROCESSING, lab_ended_at__isnull=True
    )
    ours = processing.filter(lab_operation="cancel")
    changed = (processing.exclude(lab_operation="cancel") if cancelled else processing).update(
        **written
    )
    if not changed:
        return None if cancelled and ours.exists() else False
    for name, value in written.items():
        setattr(shipment, name, value)
    if cancelled:
        code = LAB_CANCELLED_ISSUE
        description = progress.message or "The lab cancelled this lab order."
    else:
        code = LAB_ERROR_ISSUE
        description = progress.message or f"Lab {shipment.lab_code} reported the lab order failed."
    OrderIssue.objects.update_or_create(
        order=order,
        object_id=shipment.public_id,
        error_code=code,
        defaults={"description": description},
    )
    return True


def _shipped_record(shipment: Shipment, progress: LabProgress, *, produced: bool) -> bool:
    """Record the shipment as shipped, with its production time too when ``produced`` just now,
    only if it is still processing (checked and written atomically); False when it is no longer
    processing. The instance shows what was written."""
    shipped = {
        "status": ShipmentStatus.SHIPPED,
        "dispatch_date": progress.shipped_at,
        "carrier_name": progress.carrier_name or shipment.carrier_name,
        "carrier_service": progress.carrier_service or shipment.carrier_service,
        "tracking_number": progress.tracking_number,
        "tracking_url": progress.tracking_url,
    }
    written = {**shipped, "in_production_at": shipment.in_production_at} if produced else shipped
    processing = Shipment.objects.filter(id=shipment.id, status=ShipmentStatus.PROCESSING)
    if not processing.update(**written):
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
