"""The merchant's pages in Chromium at desktop width and at 375 px (a phone): the order page
and list, catalogue, keys, settings, confirmations, callback log and billing; the password
reset from the mail; a card payment from the pay page through a Stripe compatible server on
loopback (tests/support/stripe.py, which signs its webhook events as Stripe does) to the
order starting."""

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from merchants.models import BillingMode, Environment, Merchant, PauseMode
from merchants.services import CreatedMerchant
from orders.models import Order, OrderPayment, Stage
from tests.merchants.factories import merchant_with_keys
from tests.support.dashboard import (
    PASSWORD,
    filter_submitted,
    merchant_sign_in_create,
    off_the_browser_loop,
    sign_in,
)
from tests.support.images import jpeg_bytes
from tests.support.orders import order_create_via_api, pk
from tests.support.pipeline import run_in_process
from tests.support.servers import serve
from tests.support.stripe import StripeServer
from tests.webhooks.factories import CallbackEventFactory
from webhooks.models import CallbackAttempt, CallbackState

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalogue")]
OWNER = "owner@acme.test"
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 375, "height": 812}}


@pytest.fixture(params=list(VIEWPORTS))
def viewport(request: pytest.FixtureRequest) -> dict[str, int]:
    return VIEWPORTS[request.param]


@pytest.fixture
def acme(transactional_db: None, settings: Any) -> CreatedMerchant:
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SIMULATOR_SECONDS = 0
    created = merchant_with_keys(name="Acme Prints", email=OWNER)
    merchant_sign_in_create(created.merchant)
    return created


def fits(page: Any) -> None:
    """Nothing sticks out sideways: the page needs no horizontal scrolling."""
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    wide = page.evaluate(
        "[...document.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right"
        " > window.innerWidth || e.scrollWidth > window.innerWidth).slice(0, 8).map(e =>"
        " e.tagName + '.' + e.className + ' ' + e.getBoundingClientRect().right + ' '"
        " + e.scrollWidth + ' ' + (e.textContent || '').slice(0, 30))"
    )
    assert overflow <= 0, f"{page.url} is {overflow}px wider than the window: {wide}"


def photo_order(api: APIClient, httpserver: HTTPServer, **changes: Any) -> str:
    url = serve(httpserver, "/cat.jpg", jpeg_bytes(800, 600), "image/jpeg")
    items = [{"sku": "GLOBAL-PHO-4X6", "copies": 2, "assets": [{"url": url}]}]
    return order_create_via_api(api, items=items, **changes)


def test_reset_the_password_from_the_mail(
    acme: CreatedMerchant, page: Any, live_server: Any, viewport: dict[str, int], settings: Any
) -> None:
    settings.LIVE_BASE_URL = live_server.url  # mailed links are built on it, never the Host
    page.set_viewport_size(viewport)
    page.goto(f"{live_server.url}/dashboard/login")
    page.get_by_role("link", name="Forgot your password?").click()
    page.get_by_label("Email").fill(OWNER)
    page.get_by_role("button", name="Mail me a link").click()
    assert page.locator("h1").inner_text() == "Check your mail"
    fits(page)

    [message] = mail.outbox
    link = re.search(r"http://\S+/dashboard/password-reset/\S+/\S+/", str(message.body))
    assert link and link.group(0).startswith(live_server.url)
    page.goto(link.group(0))
    assert page.locator("h1").inner_text() == "Choose a new password"
    page.locator("#id_new_password1").fill("short")
    page.locator("#id_new_password2").fill("short")
    page.get_by_role("button", name="Save the new password").click()
    assert "This password is too short" in page.locator("main").inner_text()
    fits(page)
    page.locator("#id_new_password1").fill("a-fresh-passphrase-42")
    page.locator("#id_new_password2").fill("a-fresh-passphrase-42")
    page.get_by_role("button", name="Save the new password").click()
    assert page.locator("h1").inner_text() == "Password changed"

    page.get_by_role("link", name="Sign in").click()
    page.get_by_label("Email address").fill(OWNER)
    page.get_by_label("Password").fill(PASSWORD)  # the old one
    page.get_by_role("button", name="Sign in").click()
    assert "do not match an account" in page.locator("main").inner_text()
    page.get_by_label("Password").fill("a-fresh-passphrase-42")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("text=Overview")
    page.goto(link.group(0))  # the link worked once
    assert page.locator("h1").inner_text() == "This link no longer works"


@pytest.fixture
def stripe(live_server: Any, settings: Any) -> Iterator[StripeServer]:
    server = StripeServer(webhook_url=f"{live_server.url}/payments/stripe/webhook").start()
    server.configure(settings)
    yield server
    server.stop()


def test_pay_by_card_on_stripe_checkout_and_the_order_starts(
    acme: CreatedMerchant,
    httpserver: HTTPServer,
    stripe: StripeServer,
    page: Any,
    live_server: Any,
    viewport: dict[str, int],
) -> None:
    Merchant.objects.filter(pk=acme.merchant.pk).update(billing_mode=BillingMode.CARD)
    live = APIClient()
    live.credentials(HTTP_X_API_KEY=acme.live_api_key)
    order_id = photo_order(live, httpserver)
    amount = live.get(f"/v4.0/orders/{order_id}").json()["order"]["status"]["issues"][0][
        "authorisationDetails"
    ]["paymentDetails"]["amount"]
    page.set_viewport_size(viewport)
    sign_in(page, live_server.url, OWNER)
    page.get_by_label("Environment").select_option("Live")
    page.get_by_role("button", name="Switch").click()

    page.goto(f"{live_server.url}/dashboard/orders/{order_id}")
    assert "This order is waiting for its payment." in page.locator("#issues").inner_text()
    fits(page)
    page.get_by_role("link", name=f"Pay {amount} GBP").click()
    assert page.locator("#amount").inner_text() == f"{amount} GBP"
    fits(page)
    page.get_by_role("button", name=f"Pay {amount} GBP").click()

    assert page.url.startswith(f"{stripe.base_url}/checkout/cs_test_")  # Stripe's page
    assert page.locator("h1").inner_text() == f"Pay {amount} GBP"
    page.get_by_role("button", name="Pay").click()

    page.wait_for_url(f"{live_server.url}/dashboard/orders/{order_id}?payment=paid")
    assert page.locator("#order-stage").inner_text() == "In progress"
    assert "Paid by card: " + f"{amount} GBP" in page.locator("#payment").inner_text()
    assert page.locator("#issues").count() == 0
    fits(page)
    assert [status for _, status in stripe.deliveries] == [200]
    payment = off_the_browser_loop(lambda: OrderPayment.objects.get(order_id=pk(order_id)))
    assert str(payment.amount) == amount and payment.reference.startswith("pi_loopback_")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download the receipt").click()
    assert download.value.suggested_filename == f"receipt-{order_id}.pdf"

    order = off_the_browser_loop(lambda: run_in_process(order_id))
    assert order.stage == Stage.COMPLETE


@pytest.fixture
def worked_orders(acme: CreatedMerchant, httpserver: HTTPServer) -> dict[str, str]:
    """A completed Sandbox order (shipped), a held one, and a callback that failed."""
    sandbox = APIClient()
    sandbox.credentials(HTTP_X_API_KEY=acme.sandbox_api_key)
    done = photo_order(sandbox, httpserver, merchantReference="SHOP-1001")
    assert run_in_process(done).stage == Stage.COMPLETE
    Environment.objects.filter(merchant=acme.merchant, kind="Sandbox").update(
        pause_mode=PauseMode.INDEFINITE
    )
    held = photo_order(
        sandbox,
        httpserver,
        outcome="OnHold",
        recipient={
            "name": "Mary Somerville",
            "address": {
                "line1": "1 Analytical Row",
                "postalOrZipCode": "EC1A 1BB",
                "countryCode": "GB",
                "townOrCity": "London",
            },
        },
    )
    event = CallbackEventFactory.create(
        environment=Environment.objects.get(merchant=acme.merchant, kind="Sandbox"),
        subject=done,
        sequence=99,
        target_url="https://hooks.shop.test/print-callbacks",
        state=CallbackState.PENDING,
        attempts=1,
        next_attempt_at=timezone.now() + timedelta(minutes=5),
    )
    CallbackAttempt.objects.create(
        event=event, number=1, url=event.target_url, duration_ms=87, status_code=500,
        outcome="Retry", response_excerpt='{"error": "receiver is down for maintenance"}',
        error="HTTP 500",
    )  # fmt: skip
    return {"done": done, "held": held, "event": event.public_id}


def test_every_page_works_at_this_width(
    acme: CreatedMerchant,
    worked_orders: dict[str, str],
    page: Any,
    live_server: Any,
    viewport: dict[str, int],
) -> None:
    done, held, event_id = worked_orders["done"], worked_orders["held"], worked_orders["event"]
    page.set_viewport_size(viewport)
    sign_in(page, live_server.url, OWNER)
    fits(page)

    # The orders list: stage names, recipient, items, total, filters, search.
    page.get_by_role("link", name="Orders").click()
    row = page.locator("tr", has_text=done)
    assert "Complete" in row.inner_text() and "2 x GLOBAL-PHO-4X6" in row.inner_text()
    assert re.search(r"\d+\.\d\d GBP", row.inner_text())
    assert "On hold" in page.locator("tr", has_text=held).inner_text()
    fits(page)
    page.get_by_label("Search").fill("somerville")
    filter_submitted(page)
    assert page.locator("tbody tr").count() == 1 and held in page.locator("tbody").inner_text()
    page.get_by_label("Search").fill("SHOP-1001")
    filter_submitted(page)
    assert page.locator("tbody tr").count() == 1 and done in page.locator("tbody").inner_text()
    page.get_by_label("Search").fill("")
    page.get_by_label("Needs attention").check()
    filter_submitted(page)
    assert page.locator("tbody").inner_text().strip() == "No orders match."
    page.get_by_label("Needs attention").uncheck()
    today = timezone.now().date()
    page.get_by_label("Placed until").fill(f"{today - timedelta(days=1):%Y-%m-%d}")
    filter_submitted(page)
    assert page.locator("tbody").inner_text().strip() == "No orders match."
    page.get_by_label("Placed until").fill(f"{today:%Y-%m-%d}")
    filter_submitted(page)
    assert page.locator("tbody tr").count() == 2
    fits(page)

    # The order page: shipments with tracking, charges, timeline.
    page.get_by_role("link", name=done).click()
    assert page.locator("#order-stage").inner_text() == "Complete"
    shipment = page.locator("#shipments tbody tr").first
    assert "Shipped" in shipment.inner_text() and "GB" in shipment.inner_text()
    tracking = shipment.get_by_role("link")
    assert tracking.get_attribute("href", timeout=2000).startswith("https://tracking.example.com/")
    charges = page.locator("#charges").inner_text()
    assert "Items" in charges and "Shipping" in charges and "Total" in charges
    timeline = page.locator("#timeline").inner_text()
    assert "Order placed" in timeline and "Stage now Complete" in timeline
    assert "Cancel the order" not in page.locator("main").inner_text()
    fits(page)

    # Cancelling asks first.
    page.goto(f"{live_server.url}/dashboard/orders/{held}")
    page.get_by_label("Country").select_option("FR")
    page.get_by_role("link", name="Cancel the order…").click()
    assert page.locator("h1").inner_text() == f"Cancel order {held}?"
    fits(page)
    page.get_by_role("link", name="Keep it as it is").click()
    assert page.locator("#order-stage").inner_text() == "On hold"
    page.get_by_role("link", name="Cancel the order…").click()
    page.get_by_role("button", name="Cancel the order").click()
    assert "Order cancelled." in page.locator(".messages").inner_text()
    assert page.locator("#order-stage").inner_text() == "Cancelled"

    # The callback log: target, payload, answer, next retry; filters.
    page.get_by_role("link", name="Callbacks").click()
    entry = page.locator(f"li#{event_id}")
    assert "https://hooks.shop.test/print-callbacks" in entry.locator(".target").inner_text()
    assert "Next retry" in entry.inner_text() and "HTTP 500" in entry.inner_text()
    assert "took 87 ms" in entry.inner_text()
    entry.get_by_text("Payload").click()
    assert f'"subject": "{done}"' in entry.locator("pre.payload").first.inner_text()
    entry.get_by_text("Receiver's answer").click()
    assert "receiver is down for maintenance" in entry.locator("pre.answer").inner_text()
    fits(page)
    page.get_by_label("Not delivered").check()
    filter_submitted(page)
    assert page.locator("li.event").count() == 1
    page.get_by_label("Not delivered").uncheck()
    page.get_by_label("Order").fill(held)
    filter_submitted(page)
    assert page.locator(f"li#{event_id}").count() == 0
    assert page.locator("li.event").count() >= 1  # the held order's own callbacks
    entry_link = page.locator("li.event").first.get_by_role("link", name=held)
    entry_link.click()
    assert page.url.endswith(f"/dashboard/orders/{held}")

    # Settings: the secret hidden until asked, copyable; rotating asks first; billing shown.
    page.get_by_role("link", name="Settings").click()
    assert not page.locator("#signing-secret").is_visible()
    page.get_by_text("Show the secret").click()
    assert page.locator("#signing-secret").inner_text().startswith("whsec_")
    page.get_by_role("button", name="Copy").click()
    page.get_by_role("button", name="Copied").wait_for(timeout=5000)
    assert "by monthly invoice" in page.locator("#billing-mode").inner_text()
    assert page.locator("select[name=billing_mode]").count() == 0
    fits(page)
    page.get_by_role("link", name="Rotate the secret…").click()
    assert page.locator("h1").inner_text() == "Rotate the Sandbox signing secret?"
    fits(page)
    page.get_by_role("button", name="Rotate the secret").click()
    assert "New signing secret made" in page.locator(".messages").inner_text()

    # Keys, billing and the catalogue.
    page.get_by_role("link", name="API keys").click()
    assert page.locator("h1").inner_text() == "API keys (Sandbox)"
    fits(page)
    page.get_by_role("link", name="Billing").click()
    assert "No invoice yet." in page.locator("main").inner_text()
    fits(page)
    page.get_by_role("link", name="Catalogue").click()
    page.get_by_label("Destination").select_option("US")
    page.get_by_label("Category").select_option("Canvas")
    page.get_by_role("button", name="Show prices").click()
    canvas = page.locator("#catalogue tbody tr").first
    assert "CAN" in canvas.inner_text() and re.search(r"\d+\.\d\d GBP", canvas.inner_text())
    assert "wrap:" in canvas.inner_text()
    fits(page)
    cancelled = off_the_browser_loop(lambda: Order.objects.get(id=pk(held)).stage)
    assert cancelled == Stage.CANCELLED
