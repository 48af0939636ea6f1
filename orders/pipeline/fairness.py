"""Fairness between merchants at the download step.

A download waits on the merchant's own asset host, and a host that answers slowly holds a
download thread for up to the download deadline, attempt after attempt. So that one merchant
cannot fill every download thread, at most ``DOWNLOADS_PER_MERCHANT`` of a merchant's orders
download at once (claimed at the Download step). A further order of that merchant is not run
and holds no thread: it is deferred by a due time in its row (``DOWNLOAD_DEFER_SECONDS``), and
made due again, oldest first, as soon as one of the merchant's downloads ends. Other merchants'
orders never wait for it. Only orders the share deferred (``download_deferred_at``) are woken:
an order waiting for its retry after a failed step keeps its wait.
"""

from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from merchants.models import Merchant
from orders.models import Asset, AssetStatus, Order, OrderFile, PipelineStep
from orders.pipeline.scheduling import order_enqueue


def _downloading(merchant_id: int, now: datetime) -> int:
    """The merchant's orders claimed at the Download step (their ``due_at`` passed when they
    were claimed, which keeps the scan on the partial index of due orders)."""
    return Order.objects.filter(
        environment__merchant_id=merchant_id,
        pipeline_step=PipelineStep.DOWNLOAD,
        due_at__lte=now,
        claimed_until__gt=now,
    ).count()


def download_claim(*, due: QuerySet[Order], claim: Callable[[], Order | None]) -> Order | None:
    """The due Download order in ``due`` (one row, or none) as ``claim`` claims it, unless its
    merchant has its share of downloads running; then it is deferred and the answer is None.

    The merchant's row is locked while its downloads are counted and the claim is taken, so two
    workers cannot both take the last slot.
    """
    with transaction.atomic():
        merchant_id = (
            Merchant.objects.select_for_update(no_key=True)
            .filter(id__in=due.values("environment__merchant_id"))
            .values_list("id", flat=True)
            .first()
        )
        if merchant_id is None:
            return None
        now = timezone.now()  # after the lock: claims taken while this waited are counted
        if _downloading(merchant_id, now) >= settings.DOWNLOADS_PER_MERCHANT:
            deferred_to = now + timedelta(seconds=settings.DOWNLOAD_DEFER_SECONDS)
            due.update(due_at=deferred_to, download_deferred_at=now)
            return None
        return claim()


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
    as many as it has free download slots, and ring for them; their ids.

    ``hand_over``: the first of them is not rung for; the caller runs it next itself (the slot
    its download freed goes straight to the merchant's next order, without a broker round
    trip). Left unrun (the run ended first), it is due and unclaimed and marked as rung for,
    so the sweeper queues it once a claim period has passed, as it would after a lost doorbell."""
    now = timezone.now()
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
        free = settings.DOWNLOADS_PER_MERCHANT - _downloading(merchant_id, now)
        waiting = waiting[: max(free, 0)]
    deferred.filter(id__in=waiting).update(due_at=now, swept_at=now)  # rung for just below
    for order_id in waiting[1:] if hand_over else waiting:
        # A doorbell for one taken meanwhile finds it claimed: harmless.
        order_enqueue(order_id=order_id, step=PipelineStep.DOWNLOAD)
    return waiting
