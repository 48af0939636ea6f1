"""Merchants with a dashboard sign-in, and signed-in test clients."""

from django.contrib.auth.models import User
from django.test import Client

from merchants.models import Merchant

PASSWORD = "correct-horse-battery-staple"


def merchant_sign_in_create(merchant: Merchant, *, email: str | None = None) -> User:
    """The person who signs in to ``merchant``'s dashboard (password ``PASSWORD``)."""
    address = email or merchant.email or f"owner{merchant.pk}@prints.test"
    user = User.objects.create_user(username=address, email=address, password=PASSWORD)
    merchant.user = user
    merchant.save(update_fields=["user"])
    return user


def signed_in_client(merchant: Merchant) -> Client:
    """A browser-like client signed in to the merchant's dashboard (CSRF checks on)."""
    user = merchant.user or merchant_sign_in_create(merchant)
    client = Client(enforce_csrf_checks=False)
    client.force_login(user)
    return client


def failure_codes(body: dict, path: str) -> list[str]:
    """The codes of a ``ValidationFailed`` envelope's failures at ``path``."""
    assert body["outcome"] == "ValidationFailed", body
    assert body["statusCode"] == 400 and body["traceParent"], body
    return [failure["code"] for failure in body["data"]["failures"].get(path, [])]


class DecliningPaymentProvider:
    """A ``PAYMENT_PROVIDER`` that declines every payment."""

    def authorise(self, **_: object) -> object:
        from orders.payments import PaymentResult

        return PaymentResult(False, message="Card declined.")
