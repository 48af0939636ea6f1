"""Card payment: the provider interface, the built-in test provider, and the order's
``RequiresPaymentAuthorisation`` issue.

A Live order of a merchant billed by card waits (stage and step ``AwaitingPayment``) until its
cost is authorised on the dashboard's pay page; Sandbox orders and merchants billed on account
never wait. ``PAYMENT_PROVIDER`` names the provider class; any class with ``authorise`` as
below will do (a real one would call its payment service there).
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Protocol

from django.conf import settings
from django.utils.module_loading import import_string

from merchants.models import BillingMode, Environment
from orders.issues import REQUIRES_PAYMENT_AUTHORISATION
from orders.models import Order, OrderIssue


@dataclass(frozen=True)
class PaymentResult:
    authorised: bool
    reference: str = ""
    message: str = ""


class PaymentProvider(Protocol):
    def authorise(
        self, *, order_reference: str, amount: Decimal, currency: str, merchant_email: str
    ) -> PaymentResult:
        """Authorise ``amount`` for the order; never raises for a declined payment."""
        ...


class TestPaymentProvider:
    """Authorises every payment at once (no money moves); for development and tests."""

    def authorise(
        self, *, order_reference: str, amount: Decimal, currency: str, merchant_email: str
    ) -> PaymentResult:
        return PaymentResult(True, reference=f"test-{order_reference}", message="Authorised.")


def payment_provider() -> PaymentProvider:
    provider: PaymentProvider = import_string(settings.PAYMENT_PROVIDER)()
    return provider


def payment_required(environment: Environment) -> bool:
    """Whether the environment's new orders wait for a card authorisation."""
    return not environment.is_sandbox and environment.merchant.billing_mode == BillingMode.CARD


def payment_due_by(now: datetime) -> datetime:
    """When an order starting to wait for payment now is cancelled if still unpaid."""
    return now + timedelta(days=settings.PAYMENT_WAIT_DAYS)


def authorisation_url(order: Order) -> str:
    return f"{settings.LIVE_BASE_URL}/dashboard/pay/{order.public_id}"


def payment_issue(order: Order) -> OrderIssue | None:
    return OrderIssue.objects.filter(order=order, error_code=REQUIRES_PAYMENT_AUTHORISATION).first()


def payment_issue_write(*, order: Order, amount: Decimal | None, currency: str) -> OrderIssue:
    """The order's one ``RequiresPaymentAuthorisation`` issue, with the amount to authorise."""
    issue, _ = OrderIssue.objects.update_or_create(
        order=order,
        object_id=order.public_id,
        error_code=REQUIRES_PAYMENT_AUTHORISATION,
        defaults={
            "description": "The order's cost must be authorised before it is fulfilled; "
            "follow authorisationDetails.authorisationUrl.",
            "authorisation_url": authorisation_url(order),
            "payment_amount": amount,
            "payment_currency": currency,
        },
    )
    return issue
