"""Billing's writes: Stripe's events taken once, and the monthly invoices."""

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal

from django.db import IntegrityError, transaction

from billing.models import Invoice, StripeEvent
from billing.stripe import CheckoutEvent
from merchants.models import BillingMode, Merchant
from orders.authorisation import (
    Confirmation,
    SessionSeen,
    order_payment_confirm,
    payment_session_note,
)
from orders.charges import charges_invoice_number_set, charges_uninvoiced
from orders.models import Charge, PaymentSessionStatus

logger = logging.getLogger(__name__)

CHECKOUT_COMPLETED = "checkout.session.completed"
ASYNC_PAYMENT_SUCCEEDED = "checkout.session.async_payment_succeeded"
ASYNC_PAYMENT_FAILED = "checkout.session.async_payment_failed"
CHECKOUT_EXPIRED = "checkout.session.expired"


@dataclass(frozen=True)
class EventTaken:
    outcome: str
    duplicate: bool = False


def _event_apply(event: CheckoutEvent) -> Confirmation:
    """What the event does to the order of the Checkout Session it is about (only one this
    service opened for that order, recorded or, when its metadata says so, recorded now:
    ``orders.authorisation``)."""
    session = event.session
    if session is None:
        return Confirmation("Ignored")
    seen = SessionSeen(
        reference=session.id,
        order_reference=session.order_reference,
        amount=session.amount,
        currency=session.currency,
        opened_here=session.opened_here,
    )
    paying = event.type in (CHECKOUT_COMPLETED, ASYNC_PAYMENT_SUCCEEDED)
    if paying and session.payment_status == "paid" and session.payment_intent:
        return order_payment_confirm(session=seen, reference=session.payment_intent)
    status = {
        (CHECKOUT_COMPLETED, "unpaid"): PaymentSessionStatus.PENDING,
        (ASYNC_PAYMENT_FAILED, session.payment_status): PaymentSessionStatus.FAILED,
        (CHECKOUT_EXPIRED, session.payment_status): PaymentSessionStatus.EXPIRED,
    }.get((event.type, session.payment_status))
    if status is None:
        missing = "" if session.payment_intent else ", no payment_intent"
        return Confirmation("NotPaid", f"payment_status {session.payment_status}{missing}")
    return payment_session_note(session=seen, status=status)


@transaction.atomic
def stripe_event_take(*, event: CheckoutEvent) -> EventTaken:
    """A verified Stripe event, taken once: its id is recorded with what it did, in the
    transaction that does it, so a redelivery finds it and changes nothing.

    ``checkout.session.completed`` with ``payment_status: paid``, or
    ``checkout.session.async_payment_succeeded``, is a payment of the order the session was
    opened for (``order_payment_confirm``: counted toward what it asks, or refunded); a
    session completed unpaid (a delayed method), ``async_payment_failed`` or ``expired`` only
    notes the session's state (the order keeps asking). Other events are recorded and
    ignored.
    """
    if StripeEvent.objects.filter(event_id=event.id).exists():
        return EventTaken("Duplicate", duplicate=True)
    applied = _event_apply(event)
    if applied.outcome not in ("Authorised", "Ignored"):
        logger.warning(
            "Stripe event %s (%s): %s %s", event.id, event.type, applied.outcome, applied.message
        )
    try:
        with transaction.atomic():
            StripeEvent.objects.create(
                event_id=event.id, type=event.type, outcome=applied.outcome, message=applied.message
            )
    except IntegrityError:  # the same event taken at the same moment by another request
        transaction.set_rollback(True)
        return EventTaken("Duplicate", duplicate=True)
    return EventTaken(applied.outcome)


def month_start(day: date) -> date:
    return day.replace(day=1)


def next_month(day: date) -> date:
    return date(day.year + (day.month == 12), day.month % 12 + 1, 1)


def previous_month(day: date) -> date:
    first = month_start(day)
    return date(first.year - (first.month == 1), (first.month - 2) % 12 + 1, 1)


@transaction.atomic
def merchant_invoices_issue(*, merchant: Merchant, period_start: date) -> list[Invoice]:
    """The merchant's invoices for the month starting ``period_start``: the Live charges made
    before the month ended and not invoiced yet, one invoice per currency, each charge
    numbered with it. Issuing a month twice issues nothing more."""
    period_end = next_month(period_start)
    before = datetime(period_end.year, period_end.month, period_end.day, tzinfo=UTC)
    by_currency: dict[str, list[Charge]] = defaultdict(list)
    for charge in charges_uninvoiced(merchant_id=merchant.id, before=before):
        by_currency[charge.currency].append(charge)
    issued = []
    for currency, charges in sorted(by_currency.items()):
        if Invoice.objects.filter(
            merchant=merchant, period_start=period_start, currency=currency
        ).exists():
            continue
        invoice = Invoice.objects.create(
            merchant=merchant,
            number=f"pending-{merchant.id}-{period_start:%Y%m}-{currency}",
            period_start=period_start,
            period_end=period_end,
            currency=currency,
            total_cost=sum((c.total_cost for c in charges), Decimal(0)),
            total_tax=sum((c.total_tax for c in charges), Decimal(0)),
            charge_count=len(charges),
        )
        invoice.number = f"INV-{period_start:%Y%m}-{invoice.id:06d}"
        invoice.save(update_fields=["number"])
        charges_invoice_number_set(charge_ids=[c.id for c in charges], number=invoice.number)
        issued.append(invoice)
    return issued


def invoices_issue(*, period_start: date) -> list[Invoice]:
    """Every invoice-billed merchant's invoices for the month starting ``period_start``."""
    issued = []
    for merchant in Merchant.objects.filter(billing_mode=BillingMode.INVOICE).order_by("id"):
        issued += merchant_invoices_issue(merchant=merchant, period_start=period_start)
    return issued
