"""Billing's writes: Stripe's events taken once, and the monthly invoices."""

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction

from billing.models import Invoice, StripeEvent
from billing.stripe import from_minor_units
from common.errors import ValidationFailed
from common.ids import PREFIXES, parse_id
from merchants.models import BillingMode, Merchant
from orders.authorisation import order_payment_confirm
from orders.charges import charges_invoice_number_set, charges_uninvoiced
from orders.models import Charge

logger = logging.getLogger(__name__)

CHECKOUT_COMPLETED = "checkout.session.completed"


@dataclass(frozen=True)
class EventTaken:
    outcome: str
    duplicate: bool = False


def _session_order_id(session: dict[str, Any]) -> int | None:
    reference = session.get("client_reference_id") or (session.get("metadata") or {}).get(
        "order_id"
    )
    try:
        return parse_id(PREFIXES["order"], str(reference or ""), field="client_reference_id")
    except ValidationFailed:
        return None


@transaction.atomic
def stripe_event_take(*, event: dict[str, Any]) -> EventTaken:
    """A verified Stripe event, taken once: its id is recorded with what it did, in the
    transaction that does it, so a redelivery finds it and changes nothing.

    ``checkout.session.completed`` with ``payment_status: paid`` pays the order named by
    ``client_reference_id`` (its amount and currency must be the order's); other events are
    recorded and ignored.
    """
    event_id, event_type = str(event["id"]), str(event["type"])
    if StripeEvent.objects.filter(event_id=event_id).exists():
        return EventTaken("Duplicate", duplicate=True)
    outcome, message = "Ignored", ""
    if event_type == CHECKOUT_COMPLETED:
        session = event["data"]["object"]
        order_id = _session_order_id(session)
        if session.get("payment_status") != "paid":
            outcome, message = "NotPaid", f"payment_status {session.get('payment_status')}"
        elif order_id is None:
            outcome, message = "UnknownOrder", "No order id in client_reference_id."
        else:
            currency = str(session.get("currency") or "").upper()
            confirmed = order_payment_confirm(
                order_id=order_id,
                reference=str(session.get("payment_intent") or session.get("id")),
                amount=from_minor_units(int(session.get("amount_total") or 0), currency),
                currency=currency,
            )
            outcome, message = confirmed.outcome, confirmed.message
    if outcome not in ("Authorised", "Ignored"):
        logger.warning("Stripe event %s (%s): %s %s", event_id, event_type, outcome, message)
    try:
        with transaction.atomic():
            StripeEvent.objects.create(
                event_id=event_id, type=event_type, outcome=outcome, message=message
            )
    except IntegrityError:  # the same event taken at the same moment by another request
        transaction.set_rollback(True)
        return EventTaken("Duplicate", duplicate=True)
    return EventTaken(outcome)


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
