"""Celery tasks: task messages that carry ids; the state lives in the rows.

Where each goes (``CELERY_TASK_ROUTES``): ``order_advance_task`` to the queue of the step it
queues (``orders.pipeline.routing``: ``downloads`` for the Download step, ``labs`` for Submit
and Production, ``images`` for every other); a lab's late answer settled on ``labs`` (it calls
the lab); the sweepers to ``sweeps`` (they must run on time, behind no long work); the purge to
``images``, the default queue.
"""

from celery import shared_task
from django.utils import timezone

from common.sweeping import sweep_batch_mark_values
from common.tasks import task_enqueue
from common.versions import versions_request_scope
from orders.authorisation import payment_refund_send, payment_session_expire_send
from orders.charges import PAYMENT_REFUND_SEND_TASK
from orders.document import order_documents_refresh
from orders.models import Order, PaymentRefund, PaymentSession
from orders.payments import PAYMENT_SESSION_EXPIRE_TASK
from orders.pipeline.claims import orders_due_unclaimed
from orders.pipeline.retention import images_purge_expired
from orders.pipeline.scheduling import order_enqueue
from orders.pipeline.state_machine import order_advance
from orders.shipments import (
    LAB_ANSWER_RECONCILE_TASK,
    shipment_lab_answer_reconcile,
    shipments_lab_answers_due,
)

SWEEP_BATCH = 500


@shared_task(name="orders.tasks.order_advance_task", ignore_result=True)
def order_advance_task(order_id: int, step: str | None = None) -> None:
    """Run the order's due step (if it is still ``step``), and its next steps while they are
    due at once on the same queue; queue a next one on another queue or due soon.

    No Celery retries: a step that fails leaves the order due later in its row (and a failure
    here, say the database being away, leaves it due as it was), and the sweeper queues it.

    The run is one scope of the in-memory data's versions, as a web request is
    (``common.versions``): the catalogue snapshot is checked once, at the first step that uses
    it (allocation on the images queue, the download on the downloads queue), not again at
    each step after; a run lasts a few steps of one order, or the downloads it hands a slot to.
    """
    with versions_request_scope():
        order_advance(order_id=order_id, step=step, follow_up=True)


@shared_task(name="orders.tasks.orders_sweep_task", ignore_result=True)
def orders_sweep_task() -> int:
    """Queue every order that is due and unclaimed (or whose claim expired), each on the queue
    of its step.

    This is what makes a lost message, a killed worker or a restarted broker harmless.
    """
    rows = sweep_batch_mark_values(
        Order.objects.filter(orders_due_unclaimed()),
        swept_field="swept_at",
        due_field="due_at",
        claim_field="claimed_until",
        batch=SWEEP_BATCH,
        fields=("id", "pipeline_step"),
    )
    for order_id, step in rows:
        order_enqueue(order_id=order_id, step=step)
    return len(rows)


@shared_task(name=LAB_ANSWER_RECONCILE_TASK, ignore_result=True)
def shipment_lab_answer_reconcile_task(shipment_id: int) -> str:
    """Ask the lab what it did with a change whose answer never came, and record it (no
    Celery retries: a lab that cannot say yet leaves the intent pending, and the lab answers'
    sweep queues it again)."""
    return shipment_lab_answer_reconcile(shipment_id=shipment_id)


@shared_task(name="orders.tasks.lab_answers_sweep_task", ignore_result=True)
def lab_answers_sweep_task() -> int:
    """Queue the settling of every change still awaiting its lab's answer (unanswered in time,
    or left by a process that died during the call), so none is lost."""
    shipment_ids = shipments_lab_answers_due(batch=SWEEP_BATCH)
    for shipment_id in shipment_ids:
        task_enqueue(LAB_ANSWER_RECONCILE_TASK, shipment_id)
    return len(shipment_ids)


@shared_task(name="orders.tasks.payment_refund_send_task", ignore_result=True)
def payment_refund_send_task(refund_id: int) -> None:
    """Send one refund to the payment provider (no Celery retries: a refund the provider
    could not take is due again in its row, and the sweeper queues it)."""
    payment_refund_send(refund_id=refund_id)


@shared_task(name="orders.tasks.payment_session_expire_task", ignore_result=True)
def payment_session_expire_task(session_id: int) -> None:
    """Expire one payment session at the provider (no Celery retries: one the provider could
    not be asked about is due again in its row, and the refunds' sweep queues it)."""
    payment_session_expire_send(session_id=session_id)


@shared_task(name="orders.tasks.payment_refunds_sweep_task", ignore_result=True)
def payment_refunds_sweep_task() -> int:
    """Queue every refund that is due, and every payment session due to be expired (a lost
    message, a provider that was away)."""
    now = timezone.now()
    refund_ids = list(
        PaymentRefund.objects.filter(due_at__lte=now)
        .order_by("due_at")
        .values_list("id", flat=True)[:SWEEP_BATCH]
    )
    for refund_id in refund_ids:
        task_enqueue(PAYMENT_REFUND_SEND_TASK, refund_id)
    session_ids = list(
        PaymentSession.objects.filter(expire_due_at__lte=now)
        .order_by("expire_due_at")
        .values_list("id", flat=True)[:SWEEP_BATCH]
    )
    for session_id in session_ids:
        task_enqueue(PAYMENT_SESSION_EXPIRE_TASK, session_id)
    return len(refund_ids) + len(session_ids)


@shared_task(name="orders.tasks.images_purge_expired_task", ignore_result=True)
def images_purge_expired_task() -> int:
    return images_purge_expired()


@shared_task(name="orders.tasks.order_documents_refresh_task", ignore_result=True)
def order_documents_refresh_task() -> int:
    """The documents whose signed URLs near their expiry written afresh (``orders.document``)."""
    return order_documents_refresh()
