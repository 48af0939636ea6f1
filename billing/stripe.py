"""Stripe, through the official ``stripe`` library: the one module that talks to it.

``PAYMENT_PROVIDER=stripe`` makes ``StripePaymentProvider`` the payment provider: paying an
order creates a Checkout Session for its total and sends the payer to the session's page;
Stripe then posts ``checkout.session.completed`` to ``POST /payments/stripe/webhook``
(``billing.views``), verified here with ``stripe.Webhook.construct_event``. Refunds go to
Stripe's Refund endpoint with an idempotency key. ``STRIPE_API_BASE`` points the library at a
Stripe compatible server (the tests run one on loopback).
"""

from decimal import ROUND_HALF_UP, Decimal
from typing import Any, cast

import stripe
from django.conf import settings

from orders.payments import PaymentResult, PaymentUnavailable, RefundResult

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
    secret (or not JSON)."""
    event = stripe.Webhook.construct_event(
        payload.decode("utf-8"), signature, settings.STRIPE_WEBHOOK_SECRET
    )
    return dict(event.to_dict())


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
