"""The fulfilment state machine: the one writer of an order's step, stage, due time and claim.

The state is ``Order.pipeline_step`` with the order's ``stage``, a due time (``due_at``) and a
claim (``claimed_until``, the end of its lease, and ``claim_token``). Every change of them is
one of the moves in ``TRANSITIONS`` and is written here, in one of two ways:

- **a worker's move** (``order_advance``): the order is claimed for its due step
  (``orders.pipeline.claims``), the step runs, and the move to what comes next is a conditional
  update that holds only while the claim does; the step's final writes and the callback event
  it causes commit together with the move;
- **a row-locked transition** (``order_transition``): an action, a payment, a shipment
  operation or a resubmission moves the order inside its own transaction, under the order's
  row lock; a worker's claim is dropped with it, so that worker's own move finds its claim lost
  and rolls back.

A move not in ``TRANSITIONS`` raises ``MoveRefused`` and writes nothing. These are its moves::

    (created)   --in a pause window-------------> Held           (stage OnHold)
                --card payment first------------> AwaitingPayment (stage AwaitingPayment)
                --otherwise---------------------> Download       (stage InProgress)
    Held        --window over or submitted now--> Download       (stage OnHold -> InProgress)
                --the same, payment required-----> AwaitingPayment (stage AwaitingPayment)
                --submitted now-----------------> Held, due now
    AwaitingPayment --authorised (dashboard)----> Download       (``order_transition``)
                --a raise paid for--------------> Submit         (``order_transition``)
                --PAYMENT_WAIT_DAYS over--------> Cancelled      (stage Cancelled)
    Download    --all assets stored-------------> Allocate       (downloadAssets Complete)
                --an asset still retrying-------> Download later
                --an asset failed 10 times------> Failed         (downloadAssets Error)
    Allocate    --a plan, shipments, charges----> Prepare
                --out of stock at every lab-----> Allocate later (ItemUnavailable issues)
                --no lab can make it------------> Failed         (allocate... Error)
    Prepare     --every print file rendered-----> Submit
                --a file cannot be rendered-----> Failed         (printReady... Error)
    Submit      --cost above what was paid------> AwaitingPayment (the difference asked for)
    Submit      --print files deleted (a late
                  submission), made again-------> Submit on (or Failed: printReady... Error,
                                                   the originals gone too)
                --every shipment accepted-------> Production
                --a lab refused for now---------> Submit later
                --refused for good--------------> Production (kept shipments) or Failed
    Production  --every shipment shipped--------> Done           (stage Complete; an order
                                                   Complete already, following a reprint,
                                                   stays so without a second stage callback)
                --some shipped------------------> Production later (shipping InProgress)
                --a lab cancelled or failed its
                  lab order, nothing else to
                  follow------------------------> Failed (LabCancelled / LabError issues;
                                                   stage stays; a resubmission follows again)
    Failed, Done --a shipment resubmitted-------> Production     (``orders.resubmission``; a
                  or reprinted                      Done order keeps its stage Complete)
    Failed      --staff retry, after correcting--> the step that failed: Download, Allocate,
                  (``orders.retry``)                Prepare or Submit, due now
    Download    --staff correct an asset's URL---> Download, due now (``orders.retry``)
    (a working step) --staff run it now---------> the same step, due now (``order_run_now``)
    (any open step) --cancel action, or the last shipment cancelled--> Cancelled
    (any active step) --the step raised---------> the same step, due in ``ERROR_RETRY``

Each active step also moves to itself (due later: a retry, a wait, a step that raised).

Every step is idempotent: it skips work already done (assets downloaded, shipments created,
shipments submitted). The steps' work is in ``orders.pipeline.steps``.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from orders.document import order_document_write
from orders.events import (
    downloads_complete,
    order_stage_changed,
    shipment_changed,
    step_failed,
)
from orders.models import DetailState, Order, PipelineStep, Stage
from orders.payment_balance import order_cancelled_settle, order_payment_settle
from orders.payments import payment_due_by, payment_issue, payment_sessions_expire_write
from orders.pipeline.claims import (
    CLAIM_RELEASED,
    ClaimLost,
    downloads_wake,
    order_claim,
    order_claim_held,
    order_claim_kept,
    order_claimed_transaction,
)
from orders.pipeline.routing import pipeline_queue
from orders.pipeline.scheduling import order_enqueue_on_commit, order_follow_up
from orders.pipeline.steps.allocate import allocation_retry_at, order_allocate, order_cost
from orders.pipeline.steps.download import order_assets_download, order_downloads_due_now
from orders.pipeline.steps.prepare import order_assets_prepare, order_print_files_restore
from orders.pipeline.steps.produce import (
    order_shipments_submit,
    order_shipments_track,
    submission_failure_record,
    submitted_shipments_withdraw,
)

logger = logging.getLogger(__name__)
ERROR_RETRY = timedelta(seconds=60)
# The most steps one run of the task takes an order through (Allocate, Prepare, Submit and
# Production run on the same queue).
INLINE_STEPS = 4

Step = PipelineStep
# Where an order not yet written starts (``order_first_state``).
CREATED = ""

# The detail a step shows as started while it runs (``GET`` sees it), written here once the
# step is claimed to run (``_advance_once``), with ``last_updated`` when it changes.
STARTED_DETAILS: dict[str, str] = {
    Step.DOWNLOAD: "download_assets",
    Step.ALLOCATE: "allocate_production_location",
    Step.PREPARE: "print_ready_assets_prepared",
    Step.SUBMIT: "in_production",
}


@dataclass(frozen=True)
class Move:
    """One move of the state machine: from ``source`` to ``target``, and why."""

    source: str
    target: str
    cause: str


# Cancelling (an action, or the last shipment cancelled) is open until the order is done
# (AwaitingPayment's own move to Cancelled is in the table).
_CANCELLABLE = (
    Step.HELD, Step.DOWNLOAD, Step.ALLOCATE, Step.PREPARE, Step.SUBMIT, Step.PRODUCTION,
    Step.FAILED,
)  # fmt: skip

TRANSITIONS: tuple[Move, ...] = (
    Move(CREATED, Step.HELD, "created in the merchant's pause window"),
    Move(CREATED, Step.AWAITING_PAYMENT, "created by a merchant who pays by card first"),
    Move(CREATED, Step.DOWNLOAD, "created"),
    Move(Step.HELD, Step.DOWNLOAD, "pause window over, or submitted now"),
    Move(Step.HELD, Step.AWAITING_PAYMENT, "released, with a payment to authorise first"),
    Move(Step.AWAITING_PAYMENT, Step.DOWNLOAD, "payment authorised"),
    Move(Step.AWAITING_PAYMENT, Step.SUBMIT, "a raise paid for: its lab work goes on"),
    Move(Step.AWAITING_PAYMENT, Step.CANCELLED, "payment wait over, or cancelled"),
    Move(Step.DOWNLOAD, Step.DOWNLOAD, "an asset retried later, deferred or woken by the share"),
    Move(Step.DOWNLOAD, Step.ALLOCATE, "every asset and file stored"),
    Move(Step.DOWNLOAD, Step.FAILED, "an asset or file failed for good"),
    Move(Step.ALLOCATE, Step.ALLOCATE, "out of stock at every lab: tried again later"),
    Move(Step.ALLOCATE, Step.PREPARE, "planned: shipments and charges written"),
    Move(Step.ALLOCATE, Step.FAILED, "no lab can make it"),
    Move(Step.PREPARE, Step.SUBMIT, "every print file rendered"),
    Move(Step.PREPARE, Step.PREPARE, "the step raised"),
    Move(Step.PREPARE, Step.FAILED, "a print file cannot be rendered"),
    Move(Step.SUBMIT, Step.SUBMIT, "a lab refused for now: tried again later"),
    Move(Step.SUBMIT, Step.AWAITING_PAYMENT, "its cost rose beyond what was paid for it"),
    Move(Step.SUBMIT, Step.PRODUCTION, "every shipment accepted, or some kept after a refusal"),
    Move(Step.SUBMIT, Step.FAILED, "refused for good, no shipment kept"),
    Move(Step.PRODUCTION, Step.PRODUCTION, "not every shipment shipped yet"),
    Move(Step.PRODUCTION, Step.DONE, "every shipment shipped"),
    Move(Step.PRODUCTION, Step.FAILED, "labs ended the lab orders left: waits for staff"),
    Move(Step.FAILED, Step.PRODUCTION, "a shipment resubmitted: a lab order to follow again"),
    *(
        Move(Step.FAILED, step, "staff run the failed step again")
        for step in (Step.DOWNLOAD, Step.ALLOCATE, Step.PREPARE, Step.SUBMIT)
    ),
    Move(Step.DONE, Step.PRODUCTION, "a shipment resubmitted: a lab order to follow again"),
    *(Move(step, Step.CANCELLED, "cancelled") for step in _CANCELLABLE),
    Move(Step.HELD, Step.HELD, "submitted now (due at once), or the step raised"),
    Move(Step.AWAITING_PAYMENT, Step.AWAITING_PAYMENT, "the step raised"),
)
_MOVES = frozenset((move.source, move.target) for move in TRANSITIONS)
assert len(_MOVES) == len(TRANSITIONS), "each move once in the table"


class MoveRefused(Exception):
    """A move that is not in ``TRANSITIONS``: nothing was written."""


def _move_checked(order: Order, target: str) -> None:
    if (order.pipeline_step, target) not in _MOVES:
        raise MoveRefused(f"{order.public_id}: no move from {order.pipeline_step} to {target}")


def order_first_state(
    *, held_until: datetime | None, held: bool, pay_first: bool
) -> dict[str, Any]:
    """The step, stage and due time a new order is written with (its move from ``CREATED``):
    held in the pause window (until ``held_until``; None: until submitted by hand), waiting
    for its payment (due when the wait is over: the step then cancels it if still unpaid), or
    due at once for its download."""
    now = timezone.now()
    if held:
        return {"stage": Stage.ON_HOLD, "pipeline_step": Step.HELD, "due_at": held_until}
    if pay_first:
        return {
            "stage": Stage.AWAITING_PAYMENT,
            "pipeline_step": Step.AWAITING_PAYMENT,
            "due_at": payment_due_by(now),
        }
    return {"stage": Stage.IN_PROGRESS, "pipeline_step": Step.DOWNLOAD, "due_at": now}


def order_move_on(*, order: Order, step: str, due_at: datetime | None, **fields: Any) -> None:
    """A worker's move: record the next step (or the same one, due later) and release the
    claim, only while our claim on the order's step holds.

    Atomic by itself: a step may call it alone, with no transaction around it. Raises
    ``ClaimLost`` when the order is no longer ours (inside a transaction: so that it rolls
    back), ``MoveRefused`` for a move not in ``TRANSITIONS``.
    """
    _move_checked(order, step)
    now = timezone.now()
    moved = dict(pipeline_step=step, due_at=due_at, last_updated=now, **CLAIM_RELEASED, **fields)
    with transaction.atomic():
        changed = order_claim_held(order).update(**moved)
        if not changed:
            raise ClaimLost(f"{order.public_id}: claim on step {order.pipeline_step} lost")
        order_document_write(order.id)
    _set(order, moved)


def order_transition(*, order: Order, step: str, due_at: datetime | None, **fields: Any) -> None:
    """A row-locked transition: move ``order`` (its row locked by the caller with
    ``select_for_update``, inside the caller's transaction) to ``step`` due at ``due_at``, with
    ``fields`` (``stage``, a detail) changed too; any worker's claim is dropped.

    Raises ``MoveRefused`` (nothing written) for a move not in ``TRANSITIONS``."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("order_transition runs inside the transaction that locked the order.")
    _move_checked(order, step)
    moved = dict(
        pipeline_step=step, due_at=due_at, last_updated=timezone.now(), **CLAIM_RELEASED, **fields
    )
    Order.objects.filter(id=order.id).update(**moved)
    order_document_write(order.id)
    _set(order, moved)


def _set(order: Order, fields: dict[str, Any]) -> None:
    for name, value in fields.items():
        setattr(order, name, value)


def _mark(order: Order, **fields: str) -> None:
    """Show a detail as started (visible to GET while the step runs)."""
    changed = {k: v for k, v in fields.items() if getattr(order, k) != v}
    if changed:
        with transaction.atomic():
            order_claim_held(order).update(last_updated=timezone.now(), **changed)
            order_document_write(order.id)
        for name, value in changed.items():
            setattr(order, name, value)


def _step_finished(order: Order, *, detail: str, ok: bool, next_step: str) -> None:
    """Move on to ``next_step`` (due now) with ``detail`` Complete, or stop the order as Failed
    with ``detail`` Error."""
    if ok:
        order_move_on(
            order=order, step=next_step, due_at=timezone.now(), **{detail: DetailState.COMPLETE}
        )
    else:
        order_move_on(
            order=order, step=PipelineStep.FAILED, due_at=None, **{detail: DetailState.ERROR}
        )
        step_failed(order=order, detail=detail)


@transaction.atomic
def _release_hold(order: Order) -> None:
    now = timezone.now()
    if payment_issue(order) is not None:  # card billing, not authorised while held
        order_move_on(
            order=order,
            step=PipelineStep.AWAITING_PAYMENT,
            due_at=payment_due_by(now),
            stage=Stage.AWAITING_PAYMENT,
            held_until=None,
        )
    else:
        order_move_on(
            order=order,
            step=PipelineStep.DOWNLOAD,
            due_at=now,
            stage=Stage.IN_PROGRESS,
            held_until=None,
        )
    order_stage_changed(order=order)


def order_payment_wait_end(*, order: Order) -> bool:
    """Under the order's lock, once its payments cover what it costs (its issue gone): an
    order waiting at the AwaitingPayment step goes on, a new one to its download, one that
    waited at its submit step for a raise to be paid to its submission. True when it moved."""
    if order.pipeline_step != PipelineStep.AWAITING_PAYMENT or payment_issue(order) is not None:
        return False
    prepared = order.print_ready_assets_prepared == DetailState.COMPLETE
    step = PipelineStep.SUBMIT if prepared else PipelineStep.DOWNLOAD
    order_transition(order=order, step=step, due_at=timezone.now(), stage=Stage.IN_PROGRESS)
    order_stage_changed(order=order)
    order_enqueue_on_commit(order_id=order.id, step=step)
    return True


@transaction.atomic
def _payment_expire(order: Order) -> None:
    """Due only when the payment wait is over (authorising moves the order on first)."""
    # An order that waited for a raise to be paid was paid before: its charges are credited
    # and what it paid goes back.
    order_cancelled_settle(order=order)
    payment_sessions_expire_write(order=order)
    order_move_on(order=order, step=PipelineStep.CANCELLED, due_at=None, stage=Stage.CANCELLED)
    order_stage_changed(order=order)


def _download(order: Order) -> None:
    """The download's last record and the move it leads to commit together (and fail together:
    the attempt is then made again when the step is retried)."""
    last_record = order_assets_download(order=order)
    with order_claimed_transaction(order=order):
        state, next_at = last_record()
        _download_finish(order, state, next_at)


def _download_finish(order: Order, state: str, next_at: datetime | None) -> None:
    if state == DetailState.IN_PROGRESS:
        order_move_on(order=order, step=PipelineStep.DOWNLOAD, due_at=next_at)
        return
    ok = state == DetailState.COMPLETE
    _step_finished(order, detail="download_assets", ok=ok, next_step=PipelineStep.ALLOCATE)
    if ok:
        downloads_complete(order=order)


def _allocate(order: Order) -> None:
    with order_claimed_transaction(order=order):
        allocated = order_allocate(order=order)
        if allocated is None:  # out of stock everywhere for now: wait, and try again
            retry_at = allocation_retry_at(order=order, now=timezone.now())
            order_move_on(order=order, step=PipelineStep.ALLOCATE, due_at=retry_at)
        else:
            _step_finished(
                order,
                detail="allocate_production_location",
                ok=allocated,
                next_step=PipelineStep.PREPARE,
            )


def _prepare(order: Order) -> None:
    if order_assets_prepare(order=order):  # the move alone: atomic by itself
        order_move_on(
            order=order,
            step=PipelineStep.SUBMIT,
            due_at=timezone.now(),
            print_ready_assets_prepared=DetailState.COMPLETE,
        )
        return
    with transaction.atomic():  # the move to Failed and its error event together
        _step_finished(
            order, detail="print_ready_assets_prepared", ok=False, next_step=PipelineStep.SUBMIT
        )


def _payment_awaited(order: Order) -> bool:
    """A card order whose cost rose beyond what its merchant paid waits for the difference
    before any lab work (its issue asks for it; ``orders.payment_balance``)."""
    if order.payment_authorised_at is None:  # not paid by card: nothing to compare
        return False
    with order_claimed_transaction(order=order):
        if not order_payment_settle(order=order, cost=order_cost(order)):
            return False
        order_move_on(
            order=order,
            step=PipelineStep.AWAITING_PAYMENT,
            due_at=payment_due_by(timezone.now()),
            stage=Stage.AWAITING_PAYMENT,
        )
        order_stage_changed(order=order)
    return True


def _submit(order: Order) -> None:
    if _payment_awaited(order):
        return
    if not order_print_files_restore(order=order):
        with transaction.atomic():
            _step_finished(
                order, detail="print_ready_assets_prepared", ok=False, next_step=PipelineStep.SUBMIT
            )
        return
    submitted, retry_at = order_shipments_submit(order=order)
    # Accepted, or refused for now: the move alone, atomic by itself.
    if submitted:
        now = timezone.now()
        order_move_on(order=order, step=PipelineStep.PRODUCTION, due_at=now, submitted_at=now)
        return
    if submitted is None:
        order_move_on(order=order, step=PipelineStep.SUBMIT, due_at=retry_at)
        return
    # Refused for good: the shipments already at other labs are withdrawn, not abandoned; the
    # failure, the move and its event commit together.
    cancelled, kept = submitted_shipments_withdraw(order=order)
    with order_claimed_transaction(order=order):  # our claim, the order row locked first
        submission_failure_record(order=order, cancelled=cancelled, kept=kept)
        if kept:  # made at their labs anyway: follow them to dispatch
            now = timezone.now()
            order_move_on(
                order=order,
                step=PipelineStep.PRODUCTION,
                due_at=now,
                submitted_at=now,
                in_production=DetailState.ERROR,
            )
        else:
            order_move_on(
                order=order,
                step=PipelineStep.FAILED,
                due_at=None,
                in_production=DetailState.ERROR,
            )
        step_failed(order=order, detail="in_production")


def _produce(order: Order) -> None:
    # The order row is locked (our claim renewed) once a shipment has news to write.
    with order_claimed_transaction(order=order, renewed=False):
        tracked = order_shipments_track(order=order)
        any_shipped, all_shipped, next_check = (
            tracked.any_shipped,
            tracked.all_shipped,
            tracked.next_check,
        )
        # An order Complete already follows a reprint (``orders.resubmission``): its stage and
        # its shipping stay as they are, and no second stage callback is sent.
        completed = order.stage == Stage.COMPLETE
        if tracked.shipped_now and not completed:
            # The Shipped events show the order as shipping (recorded after this move).
            _mark(order, shipping=DetailState.IN_PROGRESS)
        if tracked.failed_now:
            _mark(order, in_production=DetailState.ERROR)
        for shipment in tracked.shipped_now + tracked.cancelled_now:
            shipment_changed(order=order, shipment=shipment)
        if tracked.failed_now:
            step_failed(order=order, detail="in_production")
        if tracked.stranded and next_check is None:
            # Every lab order left has shipped or was ended by its lab: the order waits for
            # staff to resubmit (which follows it again) or cancel it; its stage stays.
            order_move_on(
                order=order,
                step=PipelineStep.FAILED,
                due_at=None,
                **({"shipping": DetailState.IN_PROGRESS} if any_shipped and not completed else {}),
            )
        elif all_shipped:
            # An order that lost a shipment at submission keeps showing inProduction: Error.
            produced = order.in_production != DetailState.ERROR
            order_move_on(
                order=order,
                step=PipelineStep.DONE,
                due_at=None,
                in_production=DetailState.COMPLETE if produced else DetailState.ERROR,
                shipping=DetailState.COMPLETE,
                stage=Stage.COMPLETE,
            )
            if not completed:
                order_stage_changed(order=order)
        elif any_shipped and not completed:
            order_move_on(
                order=order,
                step=PipelineStep.PRODUCTION,
                due_at=next_check,
                shipping=DetailState.IN_PROGRESS,
            )
        else:
            order_move_on(order=order, step=PipelineStep.PRODUCTION, due_at=next_check)


STEPS: dict[str, Callable[[Order], None]] = {
    PipelineStep.HELD: _release_hold,
    PipelineStep.AWAITING_PAYMENT: _payment_expire,
    PipelineStep.DOWNLOAD: _download,
    PipelineStep.ALLOCATE: _allocate,
    PipelineStep.PREPARE: _prepare,
    PipelineStep.SUBMIT: _submit,
    PipelineStep.PRODUCTION: _produce,
}


def order_advance(
    *, order_id: int, step: str | None = None, follow_up: bool = False
) -> datetime | None:
    """Run the order's due step (only if it is ``step``, when given); return when it is due
    next (None: not ours, not due, or finished).

    ``follow_up`` (the task's run): a next step due at once on the same queue runs here, claimed
    as a queued task's run would claim it (``INLINE_STEPS`` at most in one run: an order goes from
    allocation to the lab without a broker round trip between steps); a next step on another
    queue, or due soon, is queued on its own queue.
    A download step, however it ends, frees a download slot of the merchant: its deferred
    orders are woken (``orders.pipeline.claims.downloads_wake``). In a task's run, with steps
    left, the first of them is handed the slot: its download runs next in this run, not queued.
    """
    runs_left = INLINE_STEPS if follow_up else 1
    original = order_id
    answer: datetime | None = None
    while True:
        runs_left -= 1
        ran, handed = _advance_once(order_id=order_id, step=step, hand_over=runs_left > 0)
        order = None if ran is None else ran[1]
        inline = ran is not None and _runs_inline(ran, runs_left=runs_left)
        if order is not None and order.due_at is not None and follow_up and not inline:
            order_follow_up(order_id=order.id, step=order.pipeline_step, due_at=order.due_at)
        if order_id == original:
            answer = None if order is None else order.due_at
        if order is not None and inline:
            step = order.pipeline_step
        elif handed is not None:  # the merchant's next download, in this run
            order_id, step = handed, PipelineStep.DOWNLOAD
        else:
            return answer


def _runs_inline(ran: tuple[str, Order], *, runs_left: int) -> bool:
    """Whether the order's next step runs on in this run: due now, on the queue of the step
    that ran, and steps left."""
    ran_step, order = ran
    step = order.pipeline_step
    return (
        runs_left > 0
        and order.due_at is not None
        and step != ran_step
        and pipeline_queue(step) == pipeline_queue(ran_step)
        and order.due_at <= timezone.now()
    )


def _advance_once(
    *, order_id: int, step: str | None, hand_over: bool = False
) -> tuple[tuple[str, Order] | None, int | None]:
    """Claim and run one step: the step run and the order as it left it (None when nothing
    ran to its end: not ours, not due, claim lost, or the step failed and is due again later),
    and the merchant's next order handed the download slot (``hand_over``, after a download)."""
    order = order_claim(order_id=order_id, step=step)
    if order is None:
        return None, None
    ran = order.pipeline_step
    outcome: tuple[str, Order] | None = None
    try:
        if ran in STARTED_DETAILS:  # shown once: a retry of the step finds it shown
            _mark(order, **{STARTED_DETAILS[ran]: DetailState.IN_PROGRESS})
        with order_claim_kept(order):  # the lease renewed while the step runs
            STEPS[ran](order)
        outcome = ran, order
    except ClaimLost:
        logger.warning(
            "Order %s: claim lost during %s; another worker carries on", order.public_id, ran
        )
    except Exception:
        logger.exception("Order %s: step %s failed; retrying later", order.public_id, ran)
        if order.claim_token is not None:  # released as it was, due again later
            Order.objects.filter(id=order.id, claim_token=order.claim_token).update(
                **CLAIM_RELEASED, due_at=timezone.now() + ERROR_RETRY
            )
    finally:
        woken = []
        if ran == PipelineStep.DOWNLOAD:
            woken = downloads_wake(merchant_id=order.environment.merchant_id, hand_over=hand_over)
    return outcome, woken[0] if woken and hand_over else None


def order_failed_step_reopen(*, order: Order, step: str, detail: str) -> None:
    """Failed --staff retry--> ``step`` due now, its ``detail`` shown InProgress again: a
    row-locked transition (``order`` locked by the caller, ``orders.retry``), its task
    message queued once it commits. ``MoveRefused`` when the order is not at the Failed step."""
    order_transition(
        order=order, step=step, due_at=timezone.now(), **{detail: DetailState.IN_PROGRESS}
    )
    order_enqueue_on_commit(order_id=order.id, step=step)


def order_download_restart(*, order: Order) -> None:
    """Download --staff corrected an asset's URL--> Download due now: a row-locked transition
    (``order`` locked by the caller, ``orders.retry``) that drops a worker's claim, so a
    download of the old URL running now records nothing; queued once it commits."""
    order_transition(order=order, step=PipelineStep.DOWNLOAD, due_at=timezone.now())
    order_enqueue_on_commit(order_id=order.id, step=PipelineStep.DOWNLOAD)


# The steps staff may run now ("Run the due pipeline step now"): the working steps. A held
# order is released by "Submit now"; an order awaiting payment is due only when its wait is
# over, and its step would cancel it.
RUN_NOW_STEPS = (
    PipelineStep.DOWNLOAD,
    PipelineStep.ALLOCATE,
    PipelineStep.PREPARE,
    PipelineStep.SUBMIT,
    PipelineStep.PRODUCTION,
)


@transaction.atomic
def order_run_now(*, order_id: int) -> str | None:
    """Staff's "Run the due pipeline step now": the order's working step (``RUN_NOW_STEPS``)
    made due now, with, at the Download step, every asset and file still to download (a wait
    for the backoff is over), and queued once this commits, so a worker runs it at once.
    Returns that step, or None, with nothing written, when the order is at no working step or
    a worker is running its step now (its own move decides what comes next)."""
    order = Order.objects.select_for_update().filter(id=order_id).first()
    now = timezone.now()
    if order is None or order.pipeline_step not in RUN_NOW_STEPS:
        return None
    if order.claimed_until is not None and order.claimed_until > now:
        return None
    step = order.pipeline_step
    _move_checked(order, step)
    if step == PipelineStep.DOWNLOAD:
        order_downloads_due_now(order=order, now=now)
    # Marked as queued (``swept_at``), queued just below: the sweeper does not queue it too.
    Order.objects.filter(id=order.id).update(due_at=now, swept_at=now, **CLAIM_RELEASED)
    order_enqueue_on_commit(order_id=order.id, step=step)
    return step


@transaction.atomic
def order_submit_now(*, order: Order) -> bool:
    """Submit a held order at once (the dashboard's or admin's manual submission).

    False when the order is not held, or is already due (submitted, or its window expired):
    the hold is released once, by the step, whoever queued it first.
    """
    now = timezone.now()
    changed = (
        Order.objects.filter(id=order.id, pipeline_step=PipelineStep.HELD)
        .exclude(due_at__lte=now)
        .update(due_at=now)
    )
    if changed:
        order_enqueue_on_commit(order_id=order.id, step=PipelineStep.HELD)
    return bool(changed)
