"""Claiming an order's current step for a worker, with conditional updates: the state
machine's (``orders.pipeline.state_machine``) half that takes, renews and defers claims.

A worker owns an order while ``claimed_until`` is in the future; ``claim_token`` names its
claim (``common.leases``). The lease is short (``PIPELINE_CLAIM_SECONDS``) and renewed by a
heartbeat while the step runs (``order_claim_kept``), so a worker that dies holds the order no
longer than that. The state machine's move on succeeds only for the claim holder and the
expected step (``order_claim_held``), so a step re-run by a second worker (after a crash or a
duplicated message) cannot move the order twice.

The download claim keeps merchants fair to each other. A download waits on the merchant's own
asset host, and a host that answers slowly holds a download thread for up to the download
deadline, attempt after attempt. So that one merchant cannot fill every download thread, at
most ``DOWNLOADS_PER_MERCHANT`` of a merchant's orders download at once (claimed at the Download
step). A further order of that merchant is not run and holds no thread: it is deferred by a
due time in its row (``DOWNLOAD_DEFER_SECONDS``), and made due again, oldest first, as soon as
one of the merchant's downloads ends (``downloads_wake``). Other merchants' orders never wait
for it. Only orders the share deferred (``download_deferred_at``) are woken: an order waiting
for its retry after a failed step keeps its wait.
"""

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from common.claim_statements import ClaimStatements, ClaimTables
from common.db import rows_update
from common.leases import ClaimLost, Heartbeat, claim_token_new, lease_seconds, lease_until
from merchants.models import Environment, Merchant
from orders.models import (
    Asset,
    AssetStatus,
    DetailState,
    Order,
    OrderFile,
    OrderItem,
    PipelineStep,
)
from orders.pipeline.scheduling import order_enqueue

ACTIVE_STEPS = (
    PipelineStep.HELD,
    PipelineStep.AWAITING_PAYMENT,
    PipelineStep.DOWNLOAD,
    PipelineStep.ALLOCATE,
    PipelineStep.PREPARE,
    PipelineStep.SUBMIT,
    PipelineStep.PRODUCTION,
)


# The detail a step shows as started while it runs (``GET`` sees it), set as the step is
# claimed to run (``order_claim(start=True)``): on PostgreSQL by the claim statement itself
# (with ``last_updated`` when it changes), elsewhere by the state machine right after.
STARTED_DETAILS: dict[str, str] = {
    PipelineStep.DOWNLOAD: "download_assets",
    PipelineStep.ALLOCATE: "allocate_production_location",
    PipelineStep.PREPARE: "print_ready_assets_prepared",
    PipelineStep.SUBMIT: "in_production",
}


# The claim's columns as a move or an action leaves them: no worker holds the order.
CLAIM_RELEASED: dict[str, None] = {"claimed_until": None, "claim_token": None}

# The claims' statements written by hand (``common.claim_statements``: where they pay).
_STATEMENTS = ClaimStatements(
    ClaimTables(
        order=Order,
        environment=Environment,
        merchant=Merchant,
        asset=Asset,
        item=OrderItem,
        order_file=OrderFile,
        started=STARTED_DETAILS,
        in_progress=DetailState.IN_PROGRESS,
        download=PipelineStep.DOWNLOAD,
        to_download=AssetStatus.IN_PROGRESS,
    )
)


def orders_due_unclaimed() -> Q:
    now = timezone.now()
    return Q(pipeline_step__in=ACTIVE_STEPS, due_at__lte=now) & (
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )


def order_claim(*, order_id: int, step: str | None = None, start: bool = False) -> Order | None:
    """The order, claimed for its current step (only if that is ``step``, when given), with
    its environment and merchant; or None if it is not due, owned elsewhere, or deferred
    because its merchant has its share of downloads running (the download claim, below).

    ``start`` (the state machine about to run the step): on PostgreSQL the same statement shows
    the step's ``STARTED_DETAILS`` as InProgress; elsewhere the caller writes it."""
    if step is not None and step not in ACTIVE_STEPS:
        return None
    claim = (lease_until(), claim_token_new())
    # A task message that names its step takes only that step's way to its claim.
    if step != PipelineStep.DOWNLOAD:
        steps = [step] if step else [s for s in ACTIVE_STEPS if s != PipelineStep.DOWNLOAD]
        order = _claimed(order_id=order_id, steps=steps, claim=claim, start=start)
        if order is not None or step is not None:
            return order
    return _download_claim(order_id=order_id, claim=claim, start=start)


# A claim as it is written: the end of its lease and its token.
Claim = tuple[datetime, int]


def _download_claimed(
    *, order_id: int, merchant_id: int, claim: Claim, now: datetime, start: bool
) -> Order | None:
    """The Download order claimed (no longer deferred) if fewer than its share of the
    merchant's downloads are running, or else deferred (``download_deferral``) and None; the
    merchant's row is locked by the caller, so the count and the claim cannot be overtaken.
    The count, and the claim or the deferral, happen together or not at all."""

    def portable() -> Order | None:
        due = Order.objects.filter(
            orders_due_unclaimed(), id=order_id, pipeline_step=PipelineStep.DOWNLOAD
        )
        if downloads_running(merchant_id, now) >= settings.DOWNLOADS_PER_MERCHANT:
            due.update(**download_deferral(now))
            return None
        claimed = due.update(
            claimed_until=claim[0], claim_token=claim[1], download_deferred_at=None
        )
        return _orm_claimed(claimed, order_id)

    parameters = {
        "merchant": merchant_id,
        "now": now,
        "share": settings.DOWNLOADS_PER_MERCHANT,
        "deferred_to": download_deferral(now)["due_at"],
        "order": order_id,
        "until": claim[0],
        "token": claim[1],
    }
    return cast(
        Order | None, _STATEMENTS.download_claimed(parameters, started=start, portable=portable)
    )


def _claimed(*, order_id: int, steps: Sequence[str], claim: Claim, start: bool) -> Order | None:
    """Claim the order (``claim``: its lease and token) if it is due, unclaimed and at one of
    ``steps``; the order read as the claim left it, with its environment and merchant, or
    None. The order returned is the row the claim wrote, never an older read of it."""

    def portable() -> Order | None:
        claimed = Order.objects.filter(
            orders_due_unclaimed(), id=order_id, pipeline_step__in=steps
        ).update(claimed_until=claim[0], claim_token=claim[1])
        return _orm_claimed(claimed, order_id)

    parameters = {
        "until": claim[0],
        "token": claim[1],
        "order": order_id,
        "steps": list(steps),
        "now": timezone.now(),
    }
    return cast(
        Order | None, _STATEMENTS.order_claimed(parameters, started=start, portable=portable)
    )


def _orm_claimed(claimed: int, order_id: int) -> Order | None:
    """After an ORM claim that updated ``claimed`` rows: the order with its environment and
    merchant, or None."""
    if not claimed:
        return None
    return Order.objects.select_related("environment__merchant").get(id=order_id)


def order_claim_held(order: Order) -> dict[str, Any]:
    """The order's row as long as our claim on its step holds: the condition of a step's
    writes to the row, for ``common.db.rows_update``. The lease's renewals leave it true."""
    return {
        "id": order.id,
        "pipeline_step": order.pipeline_step,
        "claim_token": order.claim_token,
    }


# A claim younger than this is not renewed by ``order_claim_renew(unless_fresh=True)``.
CLAIM_FRESH = timedelta(seconds=1)


def order_claim_renew(*, order: Order, unless_fresh: bool = False) -> None:
    """Extend our claim between the units of a long step (each download, each rendering), or
    raise ``ClaimLost``: a step outlasting the claim must not be run by two workers at once.

    Inside a transaction the update also locks the order row until it commits, as the actions
    do, so a cancel either waits for the write or has already happened.

    ``unless_fresh`` (between the units of a step, outside a transaction): a claim taken or
    renewed less than ``CLAIM_FRESH`` ago is left as it is, with no statement and so no lock
    (renewing it would move its end by less than that; a cancel meanwhile is found by the next
    renewal or by the step's move, which then raises ``ClaimLost``). Not for the renewal that
    opens ``order_claimed_transaction``, which must take the lock.
    """
    order_claim_check(order)
    now = timezone.now()
    period = timedelta(seconds=lease_seconds())
    claimed = order.claimed_until
    fresh = claimed is not None and claimed > now and claimed - now > period - CLAIM_FRESH
    if unless_fresh and fresh:
        return
    until = now + period
    renewed = rows_update(Order, order_claim_held(order), {"claimed_until": until})
    if not renewed:
        raise ClaimLost(f"{order.public_id}: claim on step {order.pipeline_step} lost")
    order.claimed_until = until


# The heartbeats of the claims running in this process, by claim token.
_KEPT: dict[int, Heartbeat] = {}
_KEPT_LOCK = threading.Lock()


@contextmanager
def order_claim_kept(order: Order) -> Iterator[None]:
    """Run the block with our claim on the order's current step renewed by a heartbeat
    (``common.leases.Heartbeat``) every third of the lease, however long the block's download,
    rendering or lab call takes. A renewal that finds the claim gone makes
    ``order_claim_check`` (and so ``order_claim_renew``) raise ``ClaimLost``."""
    held = order_claim_held(order)
    token = order.claim_token
    assert token is not None, "a claimed order has a claim token"

    def renew() -> bool:
        return bool(rows_update(Order, held, {"claimed_until": lease_until()}))

    with Heartbeat(renew, name=f"{order.public_id} {order.pipeline_step}") as heartbeat:
        with _KEPT_LOCK:
            _KEPT[token] = heartbeat
        try:
            yield
        finally:
            with _KEPT_LOCK:
                _KEPT.pop(token, None)


def order_claim_check(order: Order) -> None:
    """Raise ``ClaimLost`` when the heartbeat of our claim on the order found it gone (no
    statement: before a lab call or a long piece of work, which must not start for an order
    another worker has taken over)."""
    heartbeat = _KEPT.get(order.claim_token) if order.claim_token is not None else None
    if heartbeat is not None:
        heartbeat.check()


@contextmanager
def order_claimed_transaction(*, order: Order, renewed: bool = True) -> Iterator[None]:
    """A transaction that starts by renewing our claim (``order_claim_renew``), which locks
    the order row before the step writes any other row of the order: the actions lock it
    first too, then its items, shipments and charges, so a step and an action on one order wait
    for each other and never deadlock. ``renewed=False``: the step renews it itself, later but
    before its first write (production, which asks the labs first).

    On a rollback the claim in memory is the database's again (the renewal, and any move the
    step made, rolled back), so the state machine can still find the order by it."""
    claim = order.claimed_until, order.claim_token
    try:
        with transaction.atomic():
            if renewed:
                order_claim_renew(order=order)
            yield
    except BaseException:
        order.claimed_until, order.claim_token = claim
        raise


# --- the download claim: each merchant's share of the downloads ---------------------------


def downloads_running(merchant_id: int, now: datetime) -> int:
    """The merchant's orders claimed at the Download step (counted as the download claim's
    statement counts them)."""
    return Order.objects.filter(
        environment__merchant_id=merchant_id,
        pipeline_step=PipelineStep.DOWNLOAD,
        due_at__lte=now,
        claimed_until__gt=now,
    ).count()


def download_deferral(now: datetime) -> dict[str, datetime]:
    """The fields that defer a Download order that found its merchant's share taken."""
    return {
        "due_at": now + timedelta(seconds=settings.DOWNLOAD_DEFER_SECONDS),
        "download_deferred_at": now,
    }


def _download_claim(*, order_id: int, claim: Claim, start: bool) -> Order | None:
    """The order, if it is due and unclaimed at the Download step, claimed within its
    merchant's share (fewer than ``DOWNLOADS_PER_MERCHANT`` of its orders
    ``downloads_running``), or else deferred (``download_deferral``) and None.

    The merchant's row is locked before the downloads running are counted and the order
    claimed, and until the claim commits, so two workers cannot both take the last slot.
    """
    with transaction.atomic():
        merchant_id = _STATEMENTS.download_merchant_locked(order_id=order_id, now=timezone.now())
        if merchant_id is None:
            return None
        # After the lock: claims taken meanwhile count.
        return _download_claimed(
            order_id=order_id, merchant_id=merchant_id, claim=claim, now=timezone.now(), start=start
        )


def _has_due_download() -> Q:
    """Orders with an asset or file whose next attempt is due: a deferred order, not one
    waiting for its retry backoff."""
    now = timezone.now()
    due_attempt = Q(status=AssetStatus.IN_PROGRESS) & (
        Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)
    )
    return Q(Exists(Asset.objects.filter(due_attempt, item__order=OuterRef("pk")))) | Q(
        Exists(OrderFile.objects.filter(due_attempt, order=OuterRef("pk")))
    )


def downloads_wake(*, merchant_id: int, hand_over: bool = False) -> list[int]:
    """After one of the merchant's downloads ended: make its longest-deferred orders due now,
    as many as it has free download slots, and queue them; their ids.

    ``hand_over``: the first of them is not queued; the caller runs it next itself (the slot
    its download freed goes straight to the merchant's next order, without a broker round
    trip). Left unrun (the run ended first), it is due and unclaimed and marked as queued, so
    the sweeper queues it once a claim period has passed, as it would after a lost message.

    Never wakes more than the merchant's free slots, nor an order claimed meanwhile or
    waiting for its own retry."""
    now = timezone.now()
    waiting = _STATEMENTS.downloads_woken(
        {"merchant": merchant_id, "now": now, "share": settings.DOWNLOADS_PER_MERCHANT},
        portable=lambda: _waiting_woken(merchant_id, now),
    )
    for order_id in waiting[1:] if hand_over else waiting:
        # A task message for one taken meanwhile finds it claimed: harmless.
        order_enqueue(order_id=order_id, step=PipelineStep.DOWNLOAD)
    return waiting


def _waiting_woken(merchant_id: int, now: datetime) -> list[int]:
    """The portable way of ``downloads_wake``'s statement: the same orders chosen and made
    due."""
    deferred = Order.objects.filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now),
        environment__merchant_id=merchant_id,
        pipeline_step=PipelineStep.DOWNLOAD,
        due_at__gt=now,
        download_deferred_at__isnull=False,
    )
    # The longest-deferred first, as many as could be woken at most: most often none, and then
    # the merchant's running downloads need no count.
    waiting = list(
        deferred.filter(_has_due_download())
        .order_by("id")
        .values_list("id", flat=True)[: settings.DOWNLOADS_PER_MERCHANT]
    )
    if waiting:
        free = settings.DOWNLOADS_PER_MERCHANT - downloads_running(merchant_id, now)
        waiting = waiting[: max(free, 0)]
    deferred.filter(id__in=waiting).update(due_at=now, swept_at=now)  # queued just below
    return waiting
