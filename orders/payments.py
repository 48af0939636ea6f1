"""Card payment: the provider interface, the built-in test provider, and the order's
``RequiresPaymentAuthorisation`` issue.

A Live order of a merchant billed by card waits (stage and step ``AwaitingPayment``) until its
cost is paid from the dashboard's pay page; Sandbox orders and merchants billed on account
never wait. ``PAYMENT_PROVIDER`` names the provider: ``test`` (this module's
``TestPaymentProvider``: local use only, the production settings refuse it), ``stripe``
(``billing.stripe.StripePaymentProvider``: Stripe Checkout, confirmed by Stripe's signed
webhook), or the dotted path of any class with the three methods of ``PaymentProvider``.

A provider's payment page opened for an order is a ``PaymentSession``; when what the order
asks for changes, is paid or goes (the order cancelled), its open sessions for another amount
are expired at the provider (``payment_sessions_expire_write``, sent after commit).
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from django.utils.module_loading import import_string

from common.tasks import task_enqueue_on_commit
from merchants.models import BillingMode, Environment
from orders.issues import REQUIRES_PAYMENT_AUTHORISATION
from orders.models import Order, OrderIssue, PaymentSession, PaymentSessionStatus

PAYMENT_PROVIDERS = {
    "test": "orders.payments.TestPaymentProvider",
    "stripe": "billing.stripe.StripePaymentProvider",
}
PAYMENT_SESSION_EXPIRE_TASK = "orders.tasks.payment_session_expire_task"


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


@dataclass(frozen=True)
class ExpiryResult:
    """``expired``: the session's page takes no payment any more; else the provider refused
    (the session was completed or expired already: its notification says which)."""

    expired: bool
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

    def expire(self, *, session_reference: str) -> ExpiryResult:
        """Close the payment page ``authorise`` opened (its ``reference``) so that it takes no
        payment. Raises ``PaymentUnavailable`` when the provider cannot answer."""
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

    def expire(self, *, session_reference: str) -> ExpiryResult:
        return ExpiryResult(True)  # it opens no payment page


def payment_provider_path(name: str) -> str:
    """The class that ``PAYMENT_PROVIDER`` (a short name or a dotted path) names."""
    return PAYMENT_PROVIDERS.get(name, name)


def payment_provider_check(name: str) -> None:
    """Raise ``ImproperlyConfigured`` unless ``name`` (a ``PAYMENT_PROVIDER``) is a short name
    of ``PAYMENT_PROVIDERS`` or the importable dotted path of a class with the methods of
    ``PaymentProvider``: checked when Django starts (``orders.apps``), so that a name that names
    nothing stops the service instead of failing every payment page."""
    refusal = (
        f"PAYMENT_PROVIDER={name!r} names no payment provider: use one of "
        f"{', '.join(sorted(PAYMENT_PROVIDERS))} or the dotted path of a class with "
        "authorise, refund and expire methods."
    )
    if not name.strip():
        raise ImproperlyConfigured(refusal)
    try:
        found = import_string(payment_provider_path(name))
    except ImportError as exc:
        raise ImproperlyConfigured(f"{refusal} ({exc})") from exc
    if not isinstance(found, type) or not all(
        callable(getattr(found, method, None)) for method in ("authorise", "refund", "expire")
    ):
        raise ImproperlyConfigured(refusal)


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


def payment_sessions_expire_write(
    *, order: Order, keep_amount: Decimal | None = None
) -> list[PaymentSession]:
    """Under the order's lock, when what it asks for changed: its open payment sessions are
    due to be expired at the provider (after commit), but for those for ``keep_amount`` (what
    it asks for now, in its currency), which may still be paid. The sessions made due."""
    now = timezone.now()
    sessions = list(
        PaymentSession.objects.filter(
            order=order, status=PaymentSessionStatus.OPEN, expire_due_at__isnull=True
        )
    )
    due = [
        s
        for s in sessions
        if keep_amount is None
        or s.amount != keep_amount
        or s.currency.upper() != order.currency.upper()
    ]
    PaymentSession.objects.filter(id__in=[s.id for s in due]).update(expire_due_at=now)
    for session in due:
        task_enqueue_on_commit(PAYMENT_SESSION_EXPIRE_TASK, session.id)
    return due
