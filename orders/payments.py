"""Card payment: the provider interface, the built-in test provider, and the order's
``RequiresPaymentAuthorisation`` issue.

A Live order of a merchant billed by card waits (stage and step ``AwaitingPayment``) until its
cost is paid from the dashboard's pay page; Sandbox orders and merchants billed on account
never wait. ``PAYMENT_PROVIDER`` names the provider: ``test`` (this module's
``TestPaymentProvider``: local use only, the production settings refuse it), ``stripe``
(``billing.stripe.StripePaymentProvider``: Stripe Checkout, confirmed by Stripe's signed
webhook), or the dotted path of any class with the two methods of ``PaymentProvider``.
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

PAYMENT_PROVIDERS = {
    "test": "orders.payments.TestPaymentProvider",
    "stripe": "billing.stripe.StripePaymentProvider",
}


@dataclass(frozen=True)
class PaymentResult:
    """A provider's answer to a payment: ``authorised`` at once, or ``redirect_url``, the
    provider's page where the payer goes on (the payment is then confirmed later, by the
    provider's notification), or neither: declined, with ``message``."""

    authorised: bool
    reference: str = ""
    message: str = ""
    redirect_url: str = ""


@dataclass(frozen=True)
class RefundResult:
    refunded: bool
    reference: str = ""
    message: str = ""


class PaymentUnavailable(Exception):
    """The provider cannot be reached or failed on its side: try again later."""


class PaymentProvider(Protocol):
    def authorise(
        self,
        *,
        order_reference: str,
        amount: Decimal,
        currency: str,
        merchant_email: str,
        return_url: str,
    ) -> PaymentResult:
        """Take ``amount`` for the order (or send the payer to the provider's page, then back to
        ``return_url``); never raises for a declined payment, raises ``PaymentUnavailable``
        when the provider cannot answer."""
        ...

    def refund(
        self, *, payment_reference: str, amount: Decimal, currency: str, key: str
    ) -> RefundResult:
        """Give ``amount`` of the payment back; ``key`` makes a repeated call refund once.
        Raises ``PaymentUnavailable`` when the provider cannot answer (try again later)."""
        ...


class TestPaymentProvider:
    """Authorises every payment and refund at once (no money moves); for local use and tests."""

    def authorise(
        self,
        *,
        order_reference: str,
        amount: Decimal,
        currency: str,
        merchant_email: str,
        return_url: str,
    ) -> PaymentResult:
        return PaymentResult(True, reference=f"test-{order_reference}", message="Authorised.")

    def refund(
        self, *, payment_reference: str, amount: Decimal, currency: str, key: str
    ) -> RefundResult:
        return RefundResult(True, reference=f"test-{key}")


def payment_provider_path(name: str) -> str:
    """The class that ``PAYMENT_PROVIDER`` (a short name or a dotted path) names."""
    return PAYMENT_PROVIDERS.get(name, name)


def payment_provider() -> PaymentProvider:
    provider: PaymentProvider = import_string(payment_provider_path(settings.PAYMENT_PROVIDER))()
    return provider


def payment_required(environment: Environment) -> bool:
    """Whether the environment's new orders wait for a card authorisation."""
    return not environment.is_sandbox and environment.merchant.billing_mode == BillingMode.CARD


def payment_provider_is_test() -> bool:
    """Whether ``PAYMENT_PROVIDER`` is the built-in test provider: no card is charged, and
    every payment page, order page and receipt says so."""
    return payment_provider_path(settings.PAYMENT_PROVIDER) == PAYMENT_PROVIDERS["test"]


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
