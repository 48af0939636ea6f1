"""Merchants with a dashboard sign-in, signed-in test clients, and browser helpers."""

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib.auth.models import User
from django.db import connections
from django.test import Client

from config.env import BASE_DIR
from merchants.models import Merchant

PASSWORD = "correct-horse-battery-staple"
T = TypeVar("T")


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


class MeanwhilePaymentProvider:
    """A ``PAYMENT_PROVIDER`` that authorises at once, as the test provider does, after calling
    ``meanwhile`` with the order's reference: what happens while the provider takes the payment
    (a test sets it, and clears it after)."""

    meanwhile: Callable[[str], None] | None = None

    def authorise(self, *, order_reference: str, **_: object) -> object:
        from orders.payments import PaymentResult

        if MeanwhilePaymentProvider.meanwhile is not None:
            MeanwhilePaymentProvider.meanwhile(order_reference)
        return PaymentResult(True, reference=f"meanwhile-{order_reference}")

    def refund(self, *, key: str, **_: object) -> object:
        from orders.payments import RefundResult

        return RefundResult(True, reference=f"meanwhile-{key}")


def off_the_browser_loop(work: Callable[[], T]) -> T:
    """Run ORM work from a browser test: in a thread of its own, whose connection is closed
    when it ends (inside Playwright's event loop Django would open one that outlives the test)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as error:  # re-raised in the test's thread
            outcome["error"] = error
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


def sign_in(page: Any, base_url: str, email: str) -> None:
    """Sign in through the login page (password ``PASSWORD``)."""
    page.goto(f"{base_url}/dashboard/login")
    page.get_by_label("Email address").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("text=Overview")


def screenshot(page: Any, name: str) -> None:
    """Take the page's picture; with ``UPDATE_SCREENSHOTS=1`` save it for the README
    (docs/screenshots/<name>.png), so an ordinary test run leaves the checkout untouched."""
    image = page.screenshot()
    assert image.startswith(b"\x89PNG")
    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
        folder = BASE_DIR / "docs" / "screenshots"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.png").write_bytes(image)


def filter_submitted(page: Any) -> None:
    """Click a list's Filter button and wait until the filtered page has loaded: a count read
    right after the click could see the page still loading (no rows yet)."""
    with page.expect_navigation():
        page.get_by_role("button", name="Filter").click()
