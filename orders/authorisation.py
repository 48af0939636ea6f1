"""Paying for an order: the provider asked, the payment recorded, a waiting order started (or,
after a raise paid for, submitted); refunds sent back through the provider."""

import logging
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from common.errors import ValidationFailed
from orders.charges import payments_covered
from orders.events import order_stage_changed
from orders.models import DetailState, Order, OrderPayment, PaymentRefund, PipelineStep, Stage
from orders.payments import (
    PaymentResult,
    PaymentUnavailable,
    payment_issue,
    payment_provider,
)
from orders.pipeline.scheduling import order_enqueue_on_commit
from orders.pipeline.state_machine import order_transition
from orders.pipeline.steps.allocate import order_cost

logger = logging.getLogger(__name__)

# A refund the provider could not take is tried again after this long, doubled each time up
# to the last value (about two days in all before it is left to staff).
REFUND_RETRY_SECONDS = (60, 300, 1800, 3600 * 3, 3600 * 12, 3600 * 24)
REFUND_CLAIM_SECONDS = 120


def order_payment_amount(*, order: Order) -> tuple[Decimal | None, str]:
    """What the merchant is asked to pay now: the order's cost less what its payments cover
    (the whole cost at first; after a change raised the cost of a paid order, the difference);
    when the order cannot be priced, what its issue says."""
    cost = order_cost(order)
    if cost is None:
        issue = payment_issue(order)
        return (issue.payment_amount if issue else None), order.currency
    return cost - (payments_covered(order=order) or Decimal(0)), order.currency


def _lock(order_id: int) -> Order | None:
    return (
        Order.objects.select_for_update(of=("self",))
        .select_related("environment__merchant")
        .filter(pk=order_id)
        .first()
    )


def _awaiting(order: Order) -> bool:
    """A payment is asked for: the first, or the difference after a raise (which an order in
    progress may be asked for before it reaches its labs)."""
    return order.stage in (Stage.ON_HOLD, Stage.AWAITING_PAYMENT, Stage.IN_PROGRESS) and (
        payment_issue(order) is not None
    )


@transaction.atomic
def order_payment_authorise(*, order: Order, return_url: str = "") -> PaymentResult:
    """Ask ``PAYMENT_PROVIDER`` for the order's cost. Authorised at once, the payment is
    recorded (``order_payment_record``); a provider with a payment page of its own answers
    ``redirect_url`` and confirms the payment later (``order_payment_confirm``).

    Raises ``ValidationFailed`` when the order has nothing to pay or cannot be priced, and
    ``PaymentUnavailable`` when the provider cannot answer.
    """
    locked = _lock(order.pk)
    if locked is None or not _awaiting(locked):
        raise ValidationFailed.single(
            "order", "NotAwaitingPayment", "This order has no payment to authorise."
        )
    amount, currency = order_payment_amount(order=locked)
    if amount is None:
        raise ValidationFailed.single(
            "order", "NotPriced", "The order cannot be priced right now; try again later."
        )
    result = payment_provider().authorise(
        order_reference=locked.public_id,
        amount=amount,
        currency=currency,
        merchant_email=locked.environment.merchant.email,
        return_url=return_url,
    )
    if result.authorised:
        order_payment_record(order=locked, reference=result.reference, amount=amount)
    return result


@dataclass(frozen=True)
class Confirmation:
    """What a provider's confirmation did: ``outcome`` is ``Authorised``, ``AlreadyPaid``,
    ``AmountMismatch``, ``NotAwaitingPayment`` or ``UnknownOrder``."""

    outcome: str
    message: str = ""


@transaction.atomic
def order_payment_confirm(
    *, order_id: int, reference: str, amount: Decimal, currency: str
) -> Confirmation:
    """A payment the provider confirms (Stripe's ``checkout.session.completed``): recorded when
    it is for the order's cost in the order's currency; anything else changes nothing (the
    order keeps waiting) and says why. A second confirmation of a paid order is harmless."""
    locked = _lock(order_id)
    if locked is None:
        return Confirmation("UnknownOrder", f"No order {order_id}.")
    if OrderPayment.objects.filter(order=locked, reference=reference).exists():
        return Confirmation("AlreadyPaid", f"{locked.public_id} is paid already.")
    if not _awaiting(locked):
        return Confirmation("NotAwaitingPayment", f"{locked.public_id} awaits no payment.")
    due, due_currency = order_payment_amount(order=locked)
    if due is None or due != amount or due_currency.upper() != currency.upper():
        message = f"{locked.public_id} costs {due} {due_currency}; paid {amount} {currency}."
        logger.warning("Payment %s not taken: %s", reference, message)
        return Confirmation("AmountMismatch", message)
    order_payment_record(order=locked, reference=reference, amount=amount)
    return Confirmation("Authorised")


def order_payment_record(*, order: Order, reference: str, amount: Decimal) -> None:
    """Under the order's lock: the payment is stored, the issue goes, and an order waiting for
    payment goes on: a new one starts fulfilment (a held one starts when released), one that
    waited at its submit step for a raise to be paid is submitted."""
    issue = payment_issue(order)
    if issue is not None:
        issue.delete()
    now = timezone.now()
    OrderPayment.objects.create(
        order=order, reference=reference, amount=amount, currency=order.currency, paid_at=now
    )
    order.payment_reference = reference
    order.payment_authorised_at = now
    order.last_updated = now
    order.save(update_fields=["payment_reference", "payment_authorised_at", "last_updated"])
    if order.pipeline_step == PipelineStep.AWAITING_PAYMENT:
        prepared = order.print_ready_assets_prepared == DetailState.COMPLETE
        step = PipelineStep.SUBMIT if prepared else PipelineStep.DOWNLOAD
        order_transition(order=order, step=step, due_at=now, stage=Stage.IN_PROGRESS)
        order_stage_changed(order=order)
        order_enqueue_on_commit(order_id=order.id, step=step)


def _refunded_payment(refund: PaymentRefund) -> OrderPayment:
    """The payment a refund gives back (one written before payments could be several: the
    order's first)."""
    if refund.payment is not None:
        return refund.payment
    return OrderPayment.objects.filter(order_id=refund.order_id).order_by("paid_at", "id")[0]


def payment_refund_send(*, refund_id: int) -> None:
    """Send a due refund to the provider: claimed first (a second worker finds it taken), the
    provider called outside any transaction with the refund's key (so it refunds once), then
    the answer recorded. Unreachable, it is due again later; refused, it is kept with the
    reason and not tried again."""
    now = timezone.now()
    refund = (
        PaymentRefund.objects.select_related("payment")
        .filter(id=refund_id, due_at__lte=now)
        .first()
    )
    if refund is None:
        return
    claimed = PaymentRefund.objects.filter(id=refund.id, due_at=refund.due_at).update(
        due_at=now + timedelta(seconds=REFUND_CLAIM_SECONDS), attempts=F("attempts") + 1
    )
    if not claimed:
        return
    try:
        result = payment_provider().refund(
            payment_reference=_refunded_payment(refund).reference,
            amount=refund.amount,
            currency=refund.currency,
            key=refund.key,
        )
    except PaymentUnavailable as problem:
        delay = REFUND_RETRY_SECONDS[min(refund.attempts, len(REFUND_RETRY_SECONDS) - 1)]
        PaymentRefund.objects.filter(id=refund.id).update(
            due_at=timezone.now() + timedelta(seconds=delay), failure=str(problem)
        )
        return
    if result.refunded:
        PaymentRefund.objects.filter(id=refund.id).update(
            due_at=None, sent_at=timezone.now(), reference=result.reference, failure=""
        )
    else:
        logger.error("Refund %s refused by the provider: %s", refund.key, result.message)
        PaymentRefund.objects.filter(id=refund.id).update(due_at=None, failure=result.message)
