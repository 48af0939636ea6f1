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
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from common.leases import ClaimLost, Heartbeat, claim_token_new, lease_seconds, lease_until
from merchants.models import Merchant
from orders.models import Asset, AssetStatus, Order, OrderFile, PipelineStep
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


# The claim's columns as a move or an action leaves them: no worker holds the order.
CLAIM_RELEASED: dict[str, None] = {"claimed_until": None, "claim_token": None}


def orders_due_unclaimed() -> Q:
    now = timezone.now()
    return Q(pipeline_step__in=ACTIVE_STEPS, due_at__lte=now) & (
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )


def order_claim(*, order_id: int, step: str | None = None) -> Order | None:
    """The order, claimed for its current step (only if that is ``step``, when given), with
    its environment and merchant; or None if it is not due, owned or locked elsewhere, or
    deferred because its merchant has its share of downloads running (the download claim,
    below). The claim writes its lease and token alone: the state machine shows the step as
    started."""
    if step is not None and step not in ACTIVE_STEPS:
        return None
    claim = (lease_until(), claim_token_new())
    # A task message that names its step takes only that step's way to its claim.
    if step != PipelineStep.DOWNLOAD:
        steps = [step] if step else [s for s in ACTIVE_STEPS if s != PipelineStep.DOWNLOAD]
        order = _claimed(order_id=order_id, steps=steps, claim=claim)
        if order is not None or step is not None:
            return order
    return _download_claim(order_id=order_id, claim=claim)


# A claim as it is written: the end of its lease and its token.
Claim = tuple[datetime, int]


def _due_locked(*, order_id: int, steps: Sequence[str]) -> Order | None:
    """The order with its environment and merchant if it is due and unclaimed at one of
    ``steps``, its row locked until the transaction ends; None when it is not, or when another
    transaction holds its row (skipped, not waited for). The environment's and merchant's rows
    are read, not locked."""
    return (
        Order.objects.select_for_update(skip_locked=True, no_key=True, of=("self",))
        .select_related("environment__merchant")
        .filter(orders_due_unclaimed(), id=order_id, pipeline_step__in=steps)
        .first()
    )


def _claim_write(order: Order, claim: Claim, **fields: Any) -> Order:
    """Write ``claim`` (with ``fields``) to the locked order's row and to the instance."""
    written = {"claimed_until": claim[0], "claim_token": claim[1], **fields}
    Order.objects.filter(id=order.id).update(**written)
    for name, value in written.items():
        setattr(order, name, value)
    return order


def _claimed(*, order_id: int, steps: Sequence[str], claim: Claim) -> Order | None:
    """Claim the order (``claim``: its lease and token) if it is due, unclaimed and at one of
    ``steps``; the order as the claim left it, with its environment and merchant, or None."""
    with transaction.atomic():
        order = _due_locked(order_id=order_id, steps=steps)
        return None if order is None else _claim_write(order, claim)


def order_claim_held(order: Order) -> QuerySet[Order]:
    """The order's row as long as our claim on its step holds (none once it is lost): what a
    step's writes to the row update. The lease's renewals leave it there."""
    return Order.objects.filter(
        id=order.id, pipeline_step=order.pipeline_step, claim_token=order.claim_token
    )


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
    renewed = order_claim_held(order).update(claimed_until=until)
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
        return bool(held.update(claimed_until=lease_until()))

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
    """The merchant's orders claimed at the Download step (their ``due_at`` passed when they
    were claimed, which keeps the count on the partial index of due orders)."""
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


def _download_claim(*, order_id: int, claim: Claim) -> Order | None:
    """The order, if it is due and unclaimed at the Download step, claimed within its
    merchant's share (fewer than ``DOWNLOADS_PER_MERCHANT`` of its orders
    ``downloads_running``, no longer deferred), or else deferred (``download_deferral``) and
    None.

    The merchant's row is locked (waited for: its other claims are short) before the order's
    and until the claim commits, so two workers cannot both take the last slot; the downloads
    running are counted after it, so claims taken meanwhile count. The lock blocks no insert
    that refers to the merchant.
    """
    with transaction.atomic():
        due = Order.objects.filter(
            orders_due_unclaimed(), id=order_id, pipeline_step=PipelineStep.DOWNLOAD
        )
        merchant = (
            Merchant.objects.select_for_update(no_key=True)
            .filter(id__in=due.values("environment__merchant_id"))
            .values_list("id", flat=True)
            .first()
        )
        if merchant is None:
            return None
        order = _due_locked(order_id=order_id, steps=[PipelineStep.DOWNLOAD])
        if order is None:
            return None
        now = timezone.now()
        if downloads_running(merchant, now) >= settings.DOWNLOADS_PER_MERCHANT:
            Order.objects.filter(id=order.id).update(**download_deferral(now))
            return None
        return _claim_write(order, claim, download_deferred_at=None)


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
    waiting = _waiting_woken(merchant_id, timezone.now())
    for order_id in waiting[1:] if hand_over else waiting:
        # A task message for one taken meanwhile finds it claimed: harmless.
        order_enqueue(order_id=order_id, step=PipelineStep.DOWNLOAD)
    return waiting


def _waiting_woken(merchant_id: int, now: datetime) -> list[int]:
    """``downloads_wake``'s orders chosen and made due: their ids. Two wakes at once may wake
    an order twice, or one more than the free slots: its claim then defers it again."""
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
    if waiting:
        deferred.filter(id__in=waiting).update(due_at=now, swept_at=now)  # queued just below
    return waiting
