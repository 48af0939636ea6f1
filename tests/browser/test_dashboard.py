"""The merchant dashboard in Chromium: sign-up to working keys, keys, settings, held orders,
callbacks and payment. The tests also write the README's screenshots (docs/screenshots/).

Rows are made before the browser starts; ORM work while it runs goes through
``off_the_browser_loop``. The pipeline is driven in-process (``run_in_process``), as the
pipeline tests do, with the lab simulator producing at once.
"""

import re
from typing import Any

import pytest
import requests
from django.core import mail
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from merchants.models import BillingMode, Environment, Merchant, PauseMode
from merchants.services import CreatedMerchant
from orders.models import Order, Stage
from orders.pipeline.state_machine import order_advance
from tests.merchants.factories import merchant_with_keys
from tests.support.dashboard import (
    filter_submitted,
    merchant_sign_in_create,
    off_the_browser_loop,
    screenshot,
    sign_in,
)
from tests.support.images import jpeg_bytes
from tests.support.orders import order_body, order_create_via_api, pk
from tests.support.pipeline import run_in_process
from tests.support.servers import Receiver, serve
from tests.webhooks.factories import CallbackEventFactory
from webhooks.models import CallbackAttempt, CallbackEvent, CallbackState
from webhooks.services import event_deliver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalogue")]
OWNER = "owner@acme.test"


@pytest.fixture
def fast_pipeline(settings: Any) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SIMULATOR_SECONDS = 0


@pytest.fixture
def acme(transactional_db: None) -> CreatedMerchant:
    created = merchant_with_keys(name="Acme Prints", email=OWNER)
    merchant_sign_in_create(created.merchant)
    return created


def photo_items(httpserver: HTTPServer) -> list[dict[str, Any]]:
    url = serve(httpserver, "/cat.jpg", jpeg_bytes(800, 600), "image/jpeg")
    return [{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}]


def api_get(base: str, key: str, path: str) -> requests.Response:
    return requests.get(f"{base}{path}", headers={"X-API-Key": key}, timeout=10)


def test_sign_up_read_the_mail_verify_and_the_keys_work(
    page: Any, live_server: Any, settings: Any
) -> None:
    settings.LIVE_BASE_URL = live_server.url  # mailed links are built on it, never the Host
    page.set_viewport_size({"width": 1000, "height": 720})
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name="sign up").click()
    page.get_by_label("Business name").fill("Browser Prints")
    page.get_by_label("Email address").fill("hello@browser.test")
    rules = page.locator("#id_password_help").inner_text()
    assert "at least 10 characters" in rules and "entirely numeric" in rules
    page.get_by_label("Password").fill("short")
    page.get_by_role("button", name="Sign up").click()
    said = page.locator("#id_password_error").inner_text()  # each broken rule said once
    assert "This password is too short. It must contain at least 10 characters." in said
    assert "This password is too easy to guess." in said
    page.get_by_label("Password").fill("a-long-passphrase-9")
    screenshot(page, "signup")
    page.get_by_role("button", name="Sign up").click()
    page.wait_for_selector("text=Check your mail")

    [message] = mail.outbox
    link = re.search(r"http://\S+/dashboard/verify\?token=\S+", str(message.body))
    assert link and message.to == ["hello@browser.test"]
    page.goto(link.group(0))
    page.get_by_role("button", name="Create my account").click()
    sandbox_key = page.locator("#sandbox-key").inner_text()
    live_key = page.locator("#live-key").inner_text()
    screenshot(page, "welcome-keys")
    page.get_by_role("button", name="Copy the Live key").click()
    page.get_by_role("button", name="Copied").wait_for(timeout=5000)
    assert page.get_by_role("button", name="Copy the Sandbox key").is_visible()

    assert sandbox_key.startswith("sk_sandbox_") and live_key.startswith("sk_live_")
    for key in (sandbox_key, live_key):
        assert api_get(live_server.url, key, "/v4.0/orders").status_code == 200
    page.goto(link.group(0))
    page.get_by_role("button", name="Create my account").click()
    assert "already been used" in page.locator("[role=alert]").inner_text()


def test_issue_a_key_and_revoke_it(acme: CreatedMerchant, page: Any, live_server: Any) -> None:
    page.set_viewport_size({"width": 1100, "height": 640})
    sign_in(page, live_server.url, OWNER)
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Key name").fill("shop-server")
    page.get_by_role("button", name="Issue a key").click()
    key = page.locator("#new-key").inner_text()
    screenshot(page, "keys")
    assert api_get(live_server.url, key, "/v4.0/orders").status_code == 200

    page.get_by_role("button", name="Copy").click()
    page.get_by_role("button", name="Copied").wait_for(timeout=5000)
    page.get_by_role("link", name="Revoke key shop-server").click()
    assert "This cannot be undone." in page.locator("main").inner_text()
    page.get_by_role("link", name="Keep it as it is").click()
    assert api_get(live_server.url, key, "/v4.0/orders").status_code == 200  # asked, kept
    page.get_by_role("link", name="Revoke key shop-server").click()
    page.get_by_role("button", name="Revoke the key").click()
    assert "revoked" in page.locator(".messages").inner_text()
    assert key not in page.content()
    assert api_get(live_server.url, key, "/v4.0/orders").status_code == 401
    assert api_get(live_server.url, acme.sandbox_api_key, "/v4.0/orders").status_code == 200


def test_set_a_pause_window_and_the_next_order_is_held(
    acme: CreatedMerchant, page: Any, live_server: Any
) -> None:
    page.set_viewport_size({"width": 1000, "height": 900})
    sign_in(page, live_server.url, OWNER)
    page.get_by_role("link", name="Settings").click()
    page.get_by_label("Hold each order for a number of minutes").check()
    page.get_by_role("button", name="Save settings").click()
    assert "Give the number of minutes" in page.locator("#id_pause_minutes_error").inner_text()
    page.get_by_label("Hold each order until submitted by hand").check()
    page.get_by_label("Callback URL").fill("https://shop.example.com/hooks")
    page.get_by_role("button", name="Save settings").click()
    assert "Settings of Sandbox saved." in page.locator(".messages").inner_text()
    screenshot(page, "settings")

    response = requests.post(
        f"{live_server.url}/v4.0/orders",
        json=order_body(),
        headers={"X-API-Key": acme.sandbox_api_key},
        timeout=30,
    )
    assert response.json()["outcome"] == "OnHold"
    order_id = response.json()["order"]["id"]
    page.get_by_role("link", name="Orders").click()
    page.get_by_label("Stage").select_option("draft")
    filter_submitted(page)
    row = page.locator("tr", has_text=order_id)
    assert "On hold" in row.inner_text()


@pytest.fixture
def held_order(acme: CreatedMerchant, httpserver: HTTPServer, fast_pipeline: None) -> str:
    Environment.objects.filter(merchant=acme.merchant, kind="Sandbox").update(
        pause_mode=PauseMode.INDEFINITE
    )
    api = APIClient()
    api.credentials(HTTP_X_API_KEY=acme.sandbox_api_key)
    return order_create_via_api(
        api, items=photo_items(httpserver), merchantReference="WEB-7", outcome="OnHold"
    )


def test_edit_a_held_order_submit_it_and_watch_it_progress(
    held_order: str, page: Any, live_server: Any
) -> None:
    page.set_viewport_size({"width": 1100, "height": 900})
    sign_in(page, live_server.url, OWNER)
    page.goto(f"{live_server.url}/dashboard/orders/{held_order}")
    page.get_by_label("Copies of GLOBAL-PHO-4X6 (item 1)").fill("0")
    page.get_by_role("button", name="Save changes").click()
    assert page.locator("#id_copies_0_error").inner_text() == (
        "Ensure this value is greater than or equal to 1."
    )
    countries = page.get_by_label("Country").locator("option").all_inner_texts()
    assert "GB — United Kingdom" in countries and "US — United States" in countries
    assert not [name for name in countries if name.startswith("ZZ")]
    page.get_by_label("Copies of GLOBAL-PHO-4X6 (item 1)").fill("2")
    page.get_by_label("Country").select_option("GB")
    page.get_by_label("Recipient name").fill("Grace Hopper")
    page.get_by_label("Shipping method").select_option("Express")
    price_before = page.locator("#price").inner_text()
    page.get_by_role("button", name="Save changes").click()
    assert "Order updated" in page.locator(".messages").inner_text()
    assert page.locator("#price").inner_text() != price_before  # two copies, by Express
    screenshot(page, "held-order")

    page.get_by_role("button", name="Submit now").click()
    assert "Order submitted" in page.locator(".messages").inner_text()
    off_the_browser_loop(lambda: order_advance(order_id=pk(held_order)))  # the hold ends
    off_the_browser_loop(lambda: order_advance(order_id=pk(held_order)))  # downloads
    page.reload()
    assert page.locator("#order-stage").inner_text() == "In progress"
    progress = page.locator(".progress").inner_text()
    assert "Assets downloaded Complete" in progress.replace("✓ ", "").replace("\n", " ")
    assert page.locator("meta[http-equiv=refresh]").count() == 1  # follows the work

    order = off_the_browser_loop(lambda: run_in_process(held_order))
    assert order.stage == Stage.COMPLETE
    page.reload()
    assert page.locator("#order-stage").inner_text() == "Complete"
    assert "Grace Hopper" in page.content()
    assert page.locator("meta[http-equiv=refresh]").count() == 0
    page.goto(f"{live_server.url}/dashboard/orders")
    assert page.locator(f"img[alt='Thumbnail of an item of {held_order}']").count() == 1
    screenshot(page, "orders")


@pytest.fixture
def failed_event(acme: CreatedMerchant, httpserver: HTTPServer) -> tuple[int, Receiver]:
    receiver = Receiver()
    httpserver.expect_request("/callbacks", method="POST").respond_with_handler(receiver.handle)
    sandbox = Environment.objects.get(merchant=acme.merchant, kind="Sandbox")
    event = CallbackEventFactory.create(
        environment=sandbox,
        subject="ord_1001",
        target_url=httpserver.url_for("/callbacks"),
        state=CallbackState.FAILED,
        attempts=1,
        next_attempt_at=None,
    )
    CallbackAttempt.objects.create(
        event=event, number=1, url=event.target_url, duration_ms=120, status_code=500,
        outcome="Retry",
    )  # fmt: skip
    return event.id, receiver


def test_replay_a_callback_and_see_the_new_attempt(
    failed_event: tuple[int, Receiver], page: Any, live_server: Any, settings: Any
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    event_id, receiver = failed_event
    page.set_viewport_size({"width": 1100, "height": 600})
    sign_in(page, live_server.url, OWNER)
    page.get_by_role("link", name="Callbacks").click()
    row = page.locator(f"li#evt_{event_id}")
    assert "HTTP 500" in row.inner_text() and "Failed" in row.inner_text()

    row.get_by_role("button", name=f"Replay evt_{event_id}").click()
    assert "queued to be sent again" in page.locator(".messages").inner_text()
    off_the_browser_loop(lambda: event_deliver(event_id=event_id))
    page.reload()
    row = page.locator(f"li#evt_{event_id}")
    assert "#2" in row.inner_text() and "HTTP 204" in row.inner_text()
    assert "Delivered" in row.inner_text()
    assert [e["id"] for e in receiver.events()] == [f"evt_{event_id}"]
    screenshot(page, "callbacks")
    state = off_the_browser_loop(lambda: CallbackEvent.objects.get(id=event_id).state)
    assert state == CallbackState.DELIVERED


@pytest.fixture
def unpaid_order(acme: CreatedMerchant, httpserver: HTTPServer, fast_pipeline: None) -> str:
    Merchant.objects.filter(pk=acme.merchant.pk).update(billing_mode=BillingMode.CARD)
    api = APIClient()
    api.credentials(HTTP_X_API_KEY=acme.live_api_key)
    return order_create_via_api(api, items=photo_items(httpserver))


def test_pay_for_an_order_awaiting_payment_and_see_it_start(
    unpaid_order: str, acme: CreatedMerchant, page: Any, live_server: Any
) -> None:
    page.set_viewport_size({"width": 1000, "height": 560})
    listed = api_get(live_server.url, acme.live_api_key, "/v4.0/orders?status=awaitingPayment")
    [shown] = listed.json()["orders"]
    [issue] = shown["status"]["issues"]
    amount = issue["authorisationDetails"]["paymentDetails"]["amount"]
    path = issue["authorisationDetails"]["authorisationUrl"].split("://", 1)[1].split("/", 1)[1]

    page.goto(f"{live_server.url}/{path}")  # signs in first, then comes back
    page.get_by_label("Email address").fill(OWNER)
    page.get_by_label("Password").fill("correct-horse-battery-staple")
    page.get_by_role("button", name="Sign in").click()
    assert page.locator("#amount").inner_text() == f"{amount} GBP"
    screenshot(page, "pay")
    page.get_by_role("button", name=f"Pay {amount} GBP").click()

    assert "Payment authorised" in page.locator(".messages").inner_text()
    assert page.locator("#order-stage").inner_text() == "In progress"
    assert page.locator("meta[http-equiv=refresh]").count() == 1
    order: Order = off_the_browser_loop(lambda: run_in_process(unpaid_order))
    assert order.stage == Stage.COMPLETE
    page.reload()
    assert page.locator("#order-stage").inner_text() == "Complete"
    after = api_get(live_server.url, acme.live_api_key, "/v4.0/orders?status=awaitingPayment")
    assert after.json()["orders"] == []
