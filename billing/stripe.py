"""Stripe, through the official ``stripe`` library: the one module that talks to it.

``PAYMENT_PROVIDER=stripe`` makes ``StripePaymentProvider`` the payment provider: paying an
order creates a Checkout Session for what it asks and sends the payer to the session's page;
Stripe then posts ``checkout.session.completed`` (and, for a delayed method,
``checkout.session.async_payment_succeeded`` or ``..._failed``) to
``POST /payments/stripe/webhook`` (``billing.views``), verified here with
``stripe.Webhook.construct_event`` and read into a ``CheckoutEvent`` (``stripe_event_read``).
Sessions no longer wanted are expired (``POST /v1/checkout/sessions/{id}/expire``); refunds go
to Stripe's Refund endpoint with an idempotency key. ``STRIPE_API_BASE`` points the library at
a Stripe compatible server (the tests run one on loopback).
"""

import json
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, cast

import stripe
from django.conf import settings

from orders.payments import ExpiryResult, PaymentResult, PaymentUnavailable, RefundResult

# Currencies Stripe counts in whole units (no cents): https://docs.stripe.com/currencies
ZERO_DECIMAL_CURRENCIES = frozenset(
    [
        "BIF",
        "CLP",
        "DJF",
        "GNF",
        "JPY",
        "KMF",
        "KRW",
        "MGA",
        "PYG",
        "RWF",
        "UGX",
        "VND",
        "VUV",
        "XAF",
        "XOF",
        "XPF",
    ]
)
# Stripe's answers that mean "try again later" rather than "no".
_TRANSIENT = (stripe.APIConnectionError, stripe.APIError, stripe.RateLimitError)


def minor_units(amount: Decimal, currency: str) -> int:
    """``amount`` in the currency's smallest unit as Stripe counts it (pence, cents, yen)."""
    exponent = 0 if currency.upper() in ZERO_DECIMAL_CURRENCIES else 2
    return int((amount * 10**exponent).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def from_minor_units(value: int, currency: str) -> Decimal:
    exponent = 0 if currency.upper() in ZERO_DECIMAL_CURRENCIES else 2
    return (Decimal(value) / 10**exponent).quantize(Decimal("0.01"))


def stripe_client() -> stripe.StripeClient:
    """A client with the deployment's secret key, at ``STRIPE_API_BASE`` when set."""
    base = settings.STRIPE_API_BASE
    return stripe.StripeClient(
        settings.STRIPE_SECRET_KEY,
        base_addresses={"api": base} if base else None,
        http_client=stripe.RequestsClient(timeout=settings.STRIPE_TIMEOUT_SECONDS),
        max_network_retries=2,
    )


def stripe_event_verify(*, payload: bytes, signature: str | None) -> dict[str, Any]:
    """The event Stripe signed, as plain JSON; ``stripe.SignatureVerificationError`` or
    ``ValueError`` for a payload that is not exactly what Stripe signed with the webhook
    secret (or not JSON), ``EventUnreadable`` for a signed one that is not a JSON object."""
    text = payload.decode("utf-8")
    stripe.WebhookSignature.verify_header(
        text, signature, settings.STRIPE_WEBHOOK_SECRET, stripe.Webhook.DEFAULT_TOLERANCE
    )
    if not isinstance(json.loads(text), dict):
        raise EventUnreadable("The event is not a JSON object.")
    event = stripe.Webhook.construct_event(text, signature, settings.STRIPE_WEBHOOK_SECRET)
    return dict(event.to_dict())


class EventUnreadable(Exception):
    """A signed event without the fields, or with values, this service reads."""


# The events about a Checkout Session this service reads; any other is recorded, not applied.
SESSION_EVENTS = frozenset(
    [
        "checkout.session.completed",
        "checkout.session.async_payment_succeeded",
        "checkout.session.async_payment_failed",
        "checkout.session.expired",
    ]
)
# Up to what an OrderPayment holds (12 digits, 2 of them decimals).
_AMOUNT_LIMIT = Decimal(10) ** 10


@dataclass(frozen=True)
class CheckoutSession:
    """What an event says of a Checkout Session: ``payment_intent`` is empty until paid.
    ``opened_here``: its metadata says this service created it (``metadata[order_id]``, which
    ``StripePaymentProvider.authorise`` sends, and has sent since the first release, names the
    order, and ``client_reference_id``, when there, names the same one)."""

    id: str
    order_reference: str  # client_reference_id (or metadata[order_id])
    payment_status: str
    payment_intent: str
    amount: Decimal
    currency: str  # upper case
    opened_here: bool = False


@dataclass(frozen=True)
class CheckoutEvent:
    """A Stripe event as this service reads it: ``session`` for the events of
    ``SESSION_EVENTS``, None for the others."""

    id: str
    type: str
    session: CheckoutSession | None


def _text(node: dict[str, Any], key: str, *, limit: int, optional: bool = False) -> str:
    value = node.get(key)
    if value is None and optional:
        return ""
    if not isinstance(value, str) or not value or len(value) > limit:
        raise EventUnreadable(f"{key} is not a string of 1 to {limit} characters.")
    return value


def stripe_event_read(event: dict[str, Any]) -> CheckoutEvent:
    """The verified event's fields this service reads, checked (types and sizes), or
    ``EventUnreadable`` saying which is wrong."""
    event_id = _text(event, "id", limit=255)
    event_type = _text(event, "type", limit=100)
    if event_type not in SESSION_EVENTS:
        return CheckoutEvent(event_id, event_type, None)
    data = event.get("data")
    session = data.get("object") if isinstance(data, dict) else None
    if not isinstance(session, dict):
        raise EventUnreadable("data.object is not a Checkout Session.")
    metadata = session.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise EventUnreadable("metadata is not an object.")
    reference = _text(session, "client_reference_id", limit=500, optional=True) or _text(
        metadata, "order_id", limit=500, optional=True
    )
    named = metadata.get("order_id")  # another system's metadata may hold anything here
    opened_here = isinstance(named, str) and bool(named) and named == reference
    currency = _text(session, "currency", limit=3).upper()
    amount_total = session.get("amount_total")
    if len(currency) != 3 or not currency.isalpha():
        raise EventUnreadable("currency is not a currency code.")
    if not isinstance(amount_total, int) or isinstance(amount_total, bool) or amount_total < 0:
        raise EventUnreadable("amount_total is not a whole number of minor units.")
    amount = from_minor_units(amount_total, currency)
    if amount >= _AMOUNT_LIMIT:
        raise EventUnreadable("amount_total is too large.")
    return CheckoutEvent(
        event_id,
        event_type,
        CheckoutSession(
            id=_text(session, "id", limit=255),
            order_reference=reference,
            payment_status=_text(session, "payment_status", limit=40),
            payment_intent=_text(session, "payment_intent", limit=100, optional=True),
            amount=amount,
            currency=currency,
            opened_here=opened_here,
        ),
    )


class StripePaymentProvider:
    """Stripe Checkout: the payer pays on Stripe's page; the webhook confirms the payment."""

    def authorise(
        self,
        *,
        order_reference: str,
        amount: Decimal,
        currency: str,
        merchant_email: str,
        return_url: str,
    ) -> PaymentResult:
        params: dict[str, Any] = {
            "mode": "payment",
            "line_items": [
                {
                    "price_data": {
                        "currency": currency.lower(),
                        "unit_amount": minor_units(amount, currency),
                        "product_data": {"name": f"Print order {order_reference}"},
                    },
                    "quantity": 1,
                }
            ],
            "client_reference_id": order_reference,
            "metadata": {"order_id": order_reference},
            "success_url": f"{return_url}?payment=paid",
            "cancel_url": f"{return_url}?payment=cancelled",
        }
        if merchant_email:
            params["customer_email"] = merchant_email
        try:
            session = stripe_client().v1.checkout.sessions.create(cast(Any, params))
        except _TRANSIENT as problem:
            raise PaymentUnavailable(f"Stripe could not be reached: {problem}") from problem
        except stripe.StripeError as problem:
            return PaymentResult(False, message=problem.user_message or str(problem))
        return PaymentResult(False, reference=session.id, redirect_url=session.url or "")

    def refund(
        self, *, payment_reference: str, amount: Decimal, currency: str, key: str
    ) -> RefundResult:
        params: dict[str, Any] = {
            "payment_intent": payment_reference,
            "amount": minor_units(amount, currency),
            "metadata": {"refund_key": key},
        }
        try:
            refund = stripe_client().v1.refunds.create(cast(Any, params), {"idempotency_key": key})
        except _TRANSIENT as problem:
            raise PaymentUnavailable(f"Stripe could not be reached: {problem}") from problem
        except stripe.StripeError as problem:
            return RefundResult(False, message=problem.user_message or str(problem))
        if refund.status in ("failed", "canceled"):
            return RefundResult(False, reference=refund.id, message=f"Refund {refund.status}.")
        return RefundResult(True, reference=refund.id)

    def expire(self, *, session_reference: str) -> ExpiryResult:
        """Stripe refuses to expire a session that is not open (completed, or expired
        already): refused, its webhook events say what became of it."""
        try:
            session = stripe_client().v1.checkout.sessions.expire(session_reference)
        except _TRANSIENT as problem:
            raise PaymentUnavailable(f"Stripe could not be reached: {problem}") from problem
        except stripe.StripeError as problem:
            return ExpiryResult(False, message=problem.user_message or str(problem))
        if session.status != "expired":
            return ExpiryResult(False, message=f"The session is {session.status}.")
        return ExpiryResult(True)
