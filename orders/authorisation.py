"""Paying for an order: the provider asked, the payment recorded, a waiting order started (or,
after a raise paid for, submitted); refunds sent back through the provider, and payment pages
no longer wanted expired there.

A payment is never lost. The provider's confirmation of a payment made on a payment page this
service opened for the order (``PaymentSession``; or, with no row, a page whose own data says it
was opened here for one of its orders: recorded then) is always recorded (``OrderPayment``), then:
up to what the order asks for, it is counted (an order asked for more, by a stale page, is
asked only for the rest); what it pays beyond that, or all of it when the order asks for
nothing (paid already, in another tab; cancelled; finished) or it is in another currency, is
refunded at once (``PaymentRefund``, sent after commit)."""

import logging
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from common.errors import ValidationFailed
from common.ids import PREFIXES, id_number
from orders.charges import payment_unasked_refund_write, payments_covered
from orders.document import order_document_write
from orders.models import (
    Order,
    OrderPayment,
    PaymentRefund,
    PaymentSession,
    PaymentSessionStatus,
    Stage,
)
from orders.payments import (
    PaymentResult,
    PaymentUnavailable,
    payment_issue,
    payment_issue_write,
    payment_provider,
    payment_sessions_expire_write,
)
from orders.pipeline.state_machine import order_payment_wait_end
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


def order_payment_authorise(*, order: Order, return_url: str = "") -> PaymentResult:
    """Ask ``PAYMENT_PROVIDER`` for what the order asks for. The provider is called outside
    any transaction, holding no lock on the order (a slow provider keeps neither the pipeline
    nor the provider's notifications waiting); its answer is then recorded under the order's
    lock in a short transaction of its own:

    - authorised at once, the payment is recorded (``order_payment_record``); when the order
      no longer asks for that amount by then, it is taken as any payment is (counted toward
      what it asks, or refunded: ``Confirmation``), and the result says so;
    - a provider with a payment page of its own answers ``redirect_url`` and confirms the
      payment later (``order_payment_confirm``): the page is recorded as the order's
      ``PaymentSession`` for that amount, and when the order no longer asks for that amount
      the session is due to be expired at once and the result carries no ``redirect_url``.

    Raises ``ValidationFailed`` when the order has nothing to pay or cannot be priced, and
    ``PaymentUnavailable`` when the provider cannot answer.
    """
    current = Order.objects.select_related("environment__merchant").filter(pk=order.pk).first()
    if current is None or not _awaiting(current):
        raise ValidationFailed.single(
            "order", "NotAwaitingPayment", "This order has no payment to authorise."
        )
    amount, currency = order_payment_amount(order=current)
    if amount is None:
        raise ValidationFailed.single(
            "order", "NotPriced", "The order cannot be priced right now; try again later."
        )
    result = payment_provider().authorise(
        order_reference=current.public_id,
        amount=amount,
        currency=currency,
        merchant_email=current.environment.merchant.email,
        return_url=return_url,
    )
    if result.authorised:
        return _authorised_record(order_id=current.pk, result=result, amount=amount)
    if result.redirect_url and result.reference:
        return _session_record(order_id=current.pk, result=result, amount=amount)
    return result


def _asks(order: Order, amount: Decimal, currency: str) -> bool:
    """Under the order's lock: it still asks for ``amount`` in ``currency``."""
    return _awaiting(order) and order_payment_amount(order=order) == (amount, currency)


@transaction.atomic
def _authorised_record(*, order_id: int, result: PaymentResult, amount: Decimal) -> PaymentResult:
    locked = _lock(order_id)
    assert locked is not None  # orders are never deleted
    if _asks(locked, amount, locked.currency):
        order_payment_record(order=locked, reference=result.reference, amount=amount)
        order_document_write(locked.id)
        return result
    taken = _payment_take(
        order=locked, reference=result.reference, amount=amount, currency=locked.currency
    )
    order_document_write(locked.id)
    return PaymentResult(
        taken.outcome in ("Authorised", "Overpaid"),
        reference=result.reference,
        message=f"The order changed while it was being paid: {taken.message}",
    )


@transaction.atomic
def _session_record(*, order_id: int, result: PaymentResult, amount: Decimal) -> PaymentResult:
    locked = _lock(order_id)
    assert locked is not None  # orders are never deleted
    PaymentSession.objects.get_or_create(
        reference=result.reference,
        defaults={"order": locked, "amount": amount, "currency": locked.currency},
    )
    if _asks(locked, amount, locked.currency):
        return result
    # The page is recorded all the same: paid before its expiry reaches the provider, the
    # payment is taken as any other (counted or refunded).
    asked = order_payment_amount(order=locked)[0] if _awaiting(locked) else None
    payment_sessions_expire_write(order=locked, keep_amount=asked)
    return PaymentResult(
        False,
        reference=result.reference,
        message="The order changed while its payment page was being opened; nothing was "
        "paid. Please try again.",
    )


@dataclass(frozen=True)
class Confirmation:
    """What a provider's notification did: ``outcome`` is ``Authorised`` (the order is paid),
    ``PartlyPaid`` (counted; the rest is asked for), ``Overpaid`` (the order is paid; the
    excess refunded), ``Refunded`` (recorded and refunded whole), ``AlreadyPaid`` (recorded
    before), ``Pending``, ``Failed`` or ``Expired`` (a session's state, nothing paid), or
    ``UnknownSession`` (not a payment page this service opened for that order: nothing
    changes)."""

    outcome: str
    message: str = ""


@dataclass(frozen=True)
class SessionSeen:
    """A provider's payment session as its notification describes it: ``opened_here`` when
    its own data says this service opened it (Stripe: ``billing.stripe.CheckoutSession``), and
    for what ``amount``."""

    reference: str
    order_reference: str
    amount: Decimal
    currency: str
    opened_here: bool = False


def _session(seen: SessionSeen) -> PaymentSession | None:
    """The payment session the provider names, when this service opened it for the order the
    notification names: recorded here (``PaymentSession``), or, when no row records it (a page
    opened before sessions were recorded, or whose row was lost after the provider opened it),
    one that says it was opened here for an order of this service, recorded now for that order
    (``_session_adopt``)."""
    session = (
        PaymentSession.objects.select_related("order").filter(reference=seen.reference).first()
    )
    if session is None and seen.opened_here:
        session = _session_adopt(seen)
    if session is None or session.order.public_id != seen.order_reference:
        logger.warning(
            "Payment session %s of order %r is not one this service opened for it.",
            seen.reference,
            seen.order_reference,
        )
        return None
    return session


def _session_adopt(seen: SessionSeen) -> PaymentSession | None:
    """The session recorded for the order of this service it names, for the amount it asks;
    None when it names none."""
    number = id_number(PREFIXES["order"], seen.order_reference)
    order = None if number is None else Order.objects.filter(pk=number).first()
    if order is None or order.public_id != seen.order_reference:
        return None
    session, created = PaymentSession.objects.select_related("order").get_or_create(
        reference=seen.reference,
        defaults={"order": order, "amount": seen.amount, "currency": seen.currency.upper()},
    )
    if created:
        logger.warning(
            "Payment session %s of order %s had no record; recorded now for %s %s.",
            seen.reference,
            order.public_id,
            seen.amount,
            seen.currency,
        )
    return session


@transaction.atomic
def order_payment_confirm(*, session: SessionSeen, reference: str) -> Confirmation:
    """A payment the provider confirms (Stripe's ``checkout.session.completed`` paid, or
    ``checkout.session.async_payment_succeeded``) of ``session.amount`` on the payment
    session ``session`` opened for the order ``session.order_reference``: recorded once (by
    its ``reference``), and counted or refunded as the module says. A second confirmation of
    the same payment is harmless; one for a session this service did not open for that order
    changes nothing (and is logged: the money is not this service's to record or refund)."""
    found = _session(session)
    if found is None:
        logger.error(
            "Payment %s of %s %s on session %s names no order of this service (%r): ignored.",
            reference,
            session.amount,
            session.currency,
            session.reference,
            session.order_reference,
        )
        return Confirmation(
            "UnknownSession", f"No session {session.reference} of {session.order_reference}."
        )
    locked = _lock(found.order_id)
    assert locked is not None  # the session's order, whose row cascades to it
    PaymentSession.objects.filter(id=found.id).update(
        status=PaymentSessionStatus.PAID, expire_due_at=None
    )
    if OrderPayment.objects.filter(order=locked, reference=reference).exists():
        return Confirmation("AlreadyPaid", f"{reference} is recorded for {locked.public_id}.")
    taken = _payment_take(
        order=locked, reference=reference, amount=session.amount, currency=session.currency
    )
    order_document_write(locked.id)  # it shows what the payment changed (issue, charges)
    return taken


def _payment_take(*, order: Order, reference: str, amount: Decimal, currency: str) -> Confirmation:
    """Under the order's lock: a payment not recorded yet, stored and counted toward what the
    order asks, or refunded (the module's rule)."""
    asked = _awaiting(order) and currency.upper() == order.currency.upper()
    due = order_payment_amount(order=order)[0] if asked else None
    payment = _payment_store(order=order, reference=reference, amount=amount, currency=currency)
    if not asked:
        payment_unasked_refund_write(order=order, payment=payment, amount=amount)
        message = f"{order.public_id} asked for no payment in {currency}; {amount} refunded."
        logger.warning("Payment %s refunded: %s", reference, message)
        return Confirmation("Refunded", message)
    if due is None or amount < due:  # counted; the rest asked for (once the order is priced)
        rest = None if due is None else due - amount
        payment_issue_write(order=order, amount=rest, currency=order.currency)
        payment_sessions_expire_write(order=order, keep_amount=rest)
        message = f"{order.public_id} was asked for {due}; paid {amount}, {rest} asked for now."
        return Confirmation("PartlyPaid", message)
    order_payment_start(order=order, reference=reference)
    excess = amount - max(due, Decimal(0))
    if excess > 0:
        payment_unasked_refund_write(order=order, payment=payment, amount=excess)
        message = f"{order.public_id} was asked for {due}; paid {amount}, {excess} refunded."
        logger.warning("Payment %s in excess: %s", reference, message)
        return Confirmation("Overpaid", message)
    return Confirmation("Authorised")


@transaction.atomic
def payment_session_note(*, session: SessionSeen, status: str) -> Confirmation:
    """A payment session's state the provider reports without a payment: ``Pending`` (paid by
    a delayed method: the money is not there yet; the order keeps asking), ``Failed`` (that
    method failed: it keeps asking) or ``Expired``. Only for a session this service opened for
    the order named."""
    found = _session(session)
    if found is None:
        return Confirmation(
            "UnknownSession", f"No session {session.reference} of {session.order_reference}."
        )
    PaymentSession.objects.filter(id=found.id).exclude(status=PaymentSessionStatus.PAID).update(
        status=status, expire_due_at=None
    )
    return Confirmation(status)


def _payment_store(*, order: Order, reference: str, amount: Decimal, currency: str) -> OrderPayment:
    """Under the order's lock: the payment stored; the order's payment reference is the latest
    (refunds need one)."""
    now = timezone.now()
    payment = OrderPayment.objects.create(
        order=order, reference=reference, amount=amount, currency=currency.upper(), paid_at=now
    )
    order.payment_reference = reference
    order.last_updated = now
    order.save(update_fields=["payment_reference", "last_updated"])
    return payment


def order_payment_record(*, order: Order, reference: str, amount: Decimal) -> None:
    """Under the order's lock: the payment of what the order asks for is stored and the order
    goes on (``order_payment_start``)."""
    _payment_store(order=order, reference=reference, amount=amount, currency=order.currency)
    order_payment_start(order=order, reference=reference)


def order_payment_start(*, order: Order, reference: str) -> None:
    """Under the order's lock, once its payments cover what it asked for: the issue goes, its
    payment pages still open are expired, and an order waiting for payment goes on: a new one
    starts fulfilment (a held one starts when released), one that waited at its submit step
    for a raise to be paid is submitted."""
    issue = payment_issue(order)
    if issue is not None:
        issue.delete()
    payment_sessions_expire_write(order=order)
    now = timezone.now()
    order.payment_reference = reference
    order.payment_authorised_at = now
    order.last_updated = now
    order.save(update_fields=["payment_reference", "payment_authorised_at", "last_updated"])
    order_payment_wait_end(order=order)


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


def payment_session_expire_send(*, session_id: int) -> None:
    """Expire a payment session at the provider when it is due: claimed first (a second
    worker finds it taken), the provider called outside any transaction, the answer recorded.
    Unreachable, it is due again later; refused (the session was completed or expired at the
    provider already: its notification says which), it is left as it is."""
    now = timezone.now()
    session = PaymentSession.objects.filter(id=session_id, expire_due_at__lte=now).first()
    if session is None:
        return
    claimed = PaymentSession.objects.filter(
        id=session.id, expire_due_at=session.expire_due_at
    ).update(
        expire_due_at=now + timedelta(seconds=REFUND_CLAIM_SECONDS),
        expire_attempts=F("expire_attempts") + 1,
    )
    if not claimed:
        return
    try:
        result = payment_provider().expire(session_reference=session.reference)
    except PaymentUnavailable as problem:
        delay = REFUND_RETRY_SECONDS[min(session.expire_attempts, len(REFUND_RETRY_SECONDS) - 1)]
        PaymentSession.objects.filter(id=session.id).update(
            expire_due_at=timezone.now() + timedelta(seconds=delay), expire_failure=str(problem)
        )
        return
    if result.expired:
        PaymentSession.objects.filter(id=session.id, status=PaymentSessionStatus.OPEN).update(
            status=PaymentSessionStatus.EXPIRED
        )
        PaymentSession.objects.filter(id=session.id).update(expire_due_at=None, expire_failure="")
    else:
        logger.warning("Payment session %s not expired: %s", session.reference, result.message)
        PaymentSession.objects.filter(id=session.id).update(
            expire_due_at=None, expire_failure=result.message
        )
