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
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from orders.models import Asset, AssetStatus, Order, OrderFile, PipelineStep
from orders.pipeline.scheduling import order_enqueue
from orders.selectors import JoinedRead

# The merchant's orders claimed at the Download step (their ``due_at`` passed when they were
# claimed, which keeps the scan on the partial index of due orders), as a SELECT for statements
# that count them in SQL (``orders.pipeline.claims``' download claim).
RUNNING_DOWNLOADS_SQL = (
    "SELECT count(*) FROM {order} r JOIN {environment} re ON re.id = r.environment_id "
    "WHERE re.merchant_id = %(merchant)s AND r.pipeline_step = %(download)s "
    "AND r.due_at <= %(now)s AND r.claimed_until > %(now)s"
)


def downloads_running(merchant_id: int, now: datetime) -> int:
    """The merchant's orders claimed at the Download step (``RUNNING_DOWNLOADS_SQL``)."""
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


# The merchant of an order due and unclaimed at the Download step.
_MERCHANT = JoinedRead(
    "SELECT e.merchant_id FROM {order} o JOIN {environment} e ON e.id = o.environment_id "
    "WHERE o.id = %(order)s AND o.pipeline_step = %(download)s AND o.due_at <= %(now)s "
    "AND (o.claimed_until IS NULL OR o.claimed_until < %(now)s)"
)
# The same, its row locked until the transaction ends (no key update: rows referring to it may
# still be inserted).
_MERCHANT_LOCKED = JoinedRead(
    "SELECT m.id FROM {merchant} m WHERE m.id = (" + _MERCHANT.template + ") FOR NO KEY UPDATE"
)


def download_claim(
    *, order_id: int, claim: Callable[[int, datetime], Order | None]
) -> Order | None:
    """The order, if it is due and unclaimed at the Download step, as ``claim(merchant_id,
    now)`` claims it: within its merchant's share (fewer than ``DOWNLOADS_PER_MERCHANT`` of its
    orders ``downloads_running``), or else deferred (``download_deferral``) and None.

    The merchant's row is locked before ``claim`` counts the downloads running and claims, and
    until the claim commits, so two workers cannot both take the last slot.
    """
    with transaction.atomic():
        lock = _MERCHANT_LOCKED if connection.vendor == "postgresql" else _MERCHANT
        now = timezone.now()
        with connection.cursor() as cursor:
            cursor.execute(
                lock.sql(), {"order": order_id, "download": PipelineStep.DOWNLOAD, "now": now}
            )
            row = cursor.fetchone()
        if row is None:
            return None
        return claim(row[0], timezone.now())  # after the lock: claims taken meanwhile count


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


# ``downloads_wake``'s choice and update in one statement (PostgreSQL): the longest-deferred of
# the merchant's deferred orders with a due asset or file, as many as it has free slots.
_WAKE = JoinedRead(
    "WITH woken AS (SELECT o.id FROM {order} o JOIN {environment} e "
    "ON e.id = o.environment_id WHERE e.merchant_id = %(merchant)s "
    "AND o.pipeline_step = %(download)s AND o.due_at > %(now)s "
    "AND o.download_deferred_at IS NOT NULL "
    "AND (o.claimed_until IS NULL OR o.claimed_until < %(now)s) "
    "AND (EXISTS (SELECT 1 FROM {asset} a JOIN {orderitem} i ON i.id = a.item_id "
    "WHERE i.order_id = o.id AND a.status = %(in_progress)s "
    "AND (a.next_attempt_at IS NULL OR a.next_attempt_at <= %(now)s)) "
    "OR EXISTS (SELECT 1 FROM {orderfile} f WHERE f.order_id = o.id "
    "AND f.status = %(in_progress)s "
    "AND (f.next_attempt_at IS NULL OR f.next_attempt_at <= %(now)s))) "
    "ORDER BY o.id LIMIT GREATEST(%(share)s - (" + RUNNING_DOWNLOADS_SQL + "), 0)) "
    "UPDATE {order} SET due_at = %(now)s, swept_at = %(now)s "
    "WHERE id IN (SELECT id FROM woken) AND pipeline_step = %(download)s "
    "AND download_deferred_at IS NOT NULL "
    "AND (claimed_until IS NULL OR claimed_until < %(now)s) RETURNING id"
)


def downloads_wake(*, merchant_id: int, hand_over: bool = False) -> list[int]:
    """After one of the merchant's downloads ended: make its longest-deferred orders due now,
    as many as it has free download slots, and ring for them; their ids.

    ``hand_over``: the first of them is not rung for; the caller runs it next itself (the slot
    its download freed goes straight to the merchant's next order, without a broker round
    trip). Left unrun (the run ended first), it is due and unclaimed and marked as rung for,
    so the sweeper queues it once a claim period has passed, as it would after a lost doorbell.

    On PostgreSQL the choice and the update are one statement (``_WAKE``)."""
    now = timezone.now()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_WAKE.sql(), _wake_parameters(merchant_id, now))
            waiting = sorted(row[0] for row in cursor.fetchall())
    else:
        waiting = _waiting_woken(merchant_id, now)
    for order_id in waiting[1:] if hand_over else waiting:
        # A doorbell for one taken meanwhile finds it claimed: harmless.
        order_enqueue(order_id=order_id, step=PipelineStep.DOWNLOAD)
    return waiting


def _wake_parameters(merchant_id: int, now: datetime) -> dict[str, Any]:
    return {
        "merchant": merchant_id,
        "download": PipelineStep.DOWNLOAD,
        "now": now,
        "in_progress": AssetStatus.IN_PROGRESS,
        "share": settings.DOWNLOADS_PER_MERCHANT,
    }


def _waiting_woken(merchant_id: int, now: datetime) -> list[int]:
    """``_WAKE`` with the ORM, in up to three queries."""
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
    deferred.filter(id__in=waiting).update(due_at=now, swept_at=now)  # rung for just below
    return waiting
