"""Billing's rows as its services write them: a Stripe event taken, a month's invoice."""

import datetime as dt
from decimal import Decimal

import factory
from factory.django import DjangoModelFactory

from billing.models import Invoice, StripeEvent
from tests.merchants.factories import MerchantFactory


class StripeEventFactory(DjangoModelFactory[StripeEvent]):
    class Meta:
        model = StripeEvent

    event_id = factory.Sequence(lambda n: f"evt_test_{n}")
    type = "checkout.session.completed"
    outcome = "Authorised"
    message = "ord_1 authorised: 12.50 GBP."


class InvoiceFactory(DjangoModelFactory[Invoice]):
    class Meta:
        model = Invoice

    merchant = factory.SubFactory(MerchantFactory)
    number = factory.Sequence(lambda n: f"INV-2026-10-{n:04d}")
    period_start = dt.date(2026, 10, 1)
    period_end = dt.date(2026, 11, 1)
    currency = "GBP"
    total_cost = Decimal("100.00")
    total_tax = Decimal("20.00")
    charge_count = 3
