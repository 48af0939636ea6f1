"""The dashboard in Chromium as an order goes through its states: a held order's countdown and
"Submit now", a test payment said to be one from the pay page to the receipt's lines, and
every page in words (no API name, no raw enum value) with SKUs never broken across lines.

Rows are made before the browser starts; ORM work while it runs goes through
``off_the_browser_loop``."""

import io
import re
from typing import Any

import pytest
from pypdf import PdfReader
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from common.countries import COUNTRY_NAMES
from merchants.models import BillingMode, Environment, Merchant, PauseMode
from merchants.services import CreatedMerchant
from orders.models import Charge, ChargeType, Order, PipelineStep
from orders.pipeline.state_machine import order_advance
from tests.merchants.factories import merchant_with_keys
from tests.support.dashboard import merchant_sign_in_create, off_the_browser_loop, sign_in
from tests.support.images import jpeg_bytes
from tests.support.orders import order_create_via_api, pk
from tests.support.pipeline import run_in_process
from tests.support.servers import serve

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalogue")]
OWNER = "owner@acme.test"
NOTICE = "Test payment: no card is charged"
RAW_NAME = re.compile(r"\b(?:[a-z]+(?:[A-Z][a-z0-9]*)+|(?:[A-Z][a-z0-9]+){2,})\b")
# Proper names that look like one (Heard Island and McDonald Islands).
NAMES = {word for name in COUNTRY_NAMES.values() for word in RAW_NAME.findall(name)}
# What a person reads: the page's text without code the merchant copies (ids, SKUs, payloads).
READ_TEXT = """() => {
  const copy = document.body.cloneNode(true);
  copy.querySelectorAll('code, pre, script, style').forEach(e => e.remove());
  document.body.after(copy);
  const text = copy.innerText;
  copy.remove();
  return text;
}"""


@pytest.fixture
def acme(transactional_db: None, settings: Any) -> CreatedMerchant:
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SIMULATOR_SECONDS = 0
    created = merchant_with_keys(name="Acme Prints", email=OWNER)
    merchant_sign_in_create(created.merchant)
    return created


def photo_items(httpserver: HTTPServer) -> list[dict[str, Any]]:
    url = serve(httpserver, "/cat.jpg", jpeg_bytes(800, 600), "image/jpeg")
    return [{"sku": "GLOBAL-PHO-4X6", "copies": 2, "assets": [{"url": url}]}]


def api_of(key: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_X_API_KEY=key)
    return api


@pytest.fixture
def held_for_ten_minutes(acme: CreatedMerchant, httpserver: HTTPServer) -> str:
    Environment.objects.filter(merchant=acme.merchant, kind="Sandbox").update(
        pause_mode=PauseMode.MINUTES, pause_minutes=10
    )
    return order_create_via_api(
        api_of(acme.sandbox_api_key), items=photo_items(httpserver), outcome="OnHold"
    )


def test_a_held_order_counts_down_to_its_end_and_submit_now_moves_the_page_on(
    held_for_ten_minutes: str, page: Any, live_server: Any
) -> None:
    order_id = held_for_ten_minutes
    page.set_viewport_size({"width": 1100, "height": 900})
    sign_in(page, live_server.url, OWNER)
    page.goto(f"{live_server.url}/dashboard/orders/{order_id}")

    assert page.locator("#order-stage").inner_text() == "On hold"
    assert page.locator("#hold-ends").inner_text().endswith(" UTC")
    first = page.locator("#hold-countdown").inner_text()
    assert re.fullmatch(r"9 min \d\d s|10 min 00 s", first), first
    page.wait_for_function(
        "text => document.querySelector('#hold-countdown').textContent !== text", arg=first
    )  # it counts down, second by second
    later = page.locator("#hold-countdown").inner_text()
    assert re.fullmatch(r"9 min \d\d s", later) and later != first

    page.get_by_role("button", name="Submit now").click()

    assert "Order submitted" in page.locator(".messages").inner_text()
    assert page.locator("#order-stage").inner_text() == "Leaving the hold"
    assert "order starts in a moment" in page.locator("#hold").inner_text()
    assert page.get_by_role("button", name="Submit now").count() == 0
    assert page.get_by_role("button", name="Save changes").count() == 0
    assert page.locator("#hold-countdown").count() == 0
    progress = page.locator(".progress").first.inner_text()
    assert "On hold" in progress and "Ended" in progress
    step = off_the_browser_loop(lambda: Order.objects.get(id=pk(order_id)).pipeline_step)
    assert step == PipelineStep.HELD  # the page says what happens before the worker runs

    off_the_browser_loop(lambda: order_advance(order_id=pk(order_id)))  # the worker: hold ends
    # The page refreshes itself and shows the order started.
    page.wait_for_function(
        "() => document.querySelector('#order-stage').textContent === 'In progress'",
        timeout=10000,
    )
    assert page.locator("#hold").count() == 0


@pytest.fixture
def unpaid_order(acme: CreatedMerchant, httpserver: HTTPServer) -> str:
    Merchant.objects.filter(pk=acme.merchant.pk).update(billing_mode=BillingMode.CARD)
    return order_create_via_api(api_of(acme.live_api_key), items=photo_items(httpserver))


def pdf_text(content: bytes) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(content)).pages)


def test_a_test_payment_says_no_card_is_charged_from_the_pay_page_to_the_receipts_lines(
    unpaid_order: str, page: Any, live_server: Any
) -> None:
    page.set_viewport_size({"width": 1000, "height": 800})
    sign_in(page, live_server.url, OWNER)
    page.get_by_label("Environment").select_option("Live")
    page.get_by_role("button", name="Switch").click()
    page.goto(f"{live_server.url}/dashboard/orders/{unpaid_order}")
    assert NOTICE in page.locator("#test-payment").inner_text()
    pill = page.locator(".progress li", has_text="Payment")
    assert pill.get_attribute("class") == "state-notstarted"  # neutral: nothing is paid
    assert "Waiting for payment" in pill.inner_text()
    colour = pill.evaluate("e => getComputedStyle(e).backgroundColor")
    assert colour == "rgb(255, 255, 255)"

    page.get_by_role("link", name=re.compile(r"^Pay ")).click()
    assert NOTICE in page.locator("#test-payment").inner_text()
    assert "payment provider's page" not in page.locator("main").inner_text()
    page.get_by_role("button", name=re.compile(r"^Pay ")).click()

    assert "Payment authorised" in page.locator(".messages").inner_text()
    assert NOTICE in page.locator("#test-payment").inner_text()
    assert (
        page.locator("#payment")
        .inner_text()
        .startswith("Paid by test payment (no card is charged): ")
    )
    assert "Paid" in page.locator(".progress li", has_text="Payment").inner_text()
    order = off_the_browser_loop(lambda: run_in_process(unpaid_order))  # charged at the lab
    page.reload()
    with page.expect_download() as download:
        page.get_by_role("link", name="Download the receipt").click()
    text = pdf_text(download.value.path().read_bytes())

    charges = off_the_browser_loop(lambda: list(Charge.objects.filter(order=order)))
    items = sum(c.total_cost for c in charges if c.charge_type == ChargeType.ITEM)
    shipping = sum(c.total_cost for c in charges if c.charge_type == ChargeType.SHIPPING)
    tax = sum(c.total_tax for c in charges)
    assert f"{NOTICE}." in text
    assert f"2 x GLOBAL-PHO-4X6: {items:.2f} GBP" in text
    assert f"Items: {items:.2f} GBP" in text and f"Shipping: {shipping:.2f} GBP" in text
    assert f"Tax: {tax:.2f} GBP" in text
    assert f"Total: {items + shipping + tax:.2f} GBP" in text


@pytest.fixture
def orders_of_every_kind(acme: CreatedMerchant, httpserver: HTTPServer) -> list[str]:
    """A completed, a held, an unpaid and a paid order, with the callbacks they made."""
    sandbox = api_of(acme.sandbox_api_key)
    done = order_create_via_api(sandbox, items=photo_items(httpserver))
    run_in_process(done)
    Environment.objects.filter(merchant=acme.merchant, kind="Sandbox").update(
        pause_mode=PauseMode.INDEFINITE
    )
    held = order_create_via_api(sandbox, items=photo_items(httpserver), outcome="OnHold")
    Merchant.objects.filter(pk=acme.merchant.pk).update(billing_mode=BillingMode.CARD)
    unpaid = order_create_via_api(api_of(acme.live_api_key), items=photo_items(httpserver))
    return [done, held, unpaid]


def test_every_dashboard_page_is_in_words_and_no_sku_breaks(
    orders_of_every_kind: list[str], page: Any, live_server: Any
) -> None:
    base = live_server.url
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if m.type == "error" else None)
    page.set_viewport_size({"width": 375, "height": 800})  # narrow: where words would wrap
    sign_in(page, base, OWNER)
    paths = [
        "/dashboard/",
        "/dashboard/orders",
        "/dashboard/catalogue",
        "/dashboard/keys",
        "/dashboard/settings",
        "/dashboard/callbacks",
        "/dashboard/invoices",
        *(f"/dashboard/orders/{order_id}" for order_id in orders_of_every_kind),
        f"/dashboard/pay/{orders_of_every_kind[-1]}",
    ]
    found = {}
    for kind in ("Sandbox", "Live"):
        page.goto(f"{base}/dashboard/")
        page.get_by_label("Environment").select_option(kind)
        page.get_by_role("button", name="Switch").click()
        for path in paths:
            page.goto(f"{base}{path}")
            text = page.evaluate(READ_TEXT)
            if names := [name for name in RAW_NAME.findall(text) if name not in NAMES]:
                found[f"{kind} {path}"] = names
            # An inline SKU on two lines has two boxes.
            broken = page.evaluate(
                "[...document.querySelectorAll('.sku')]"
                ".filter(e => e.getClientRects().length > 1).map(e => e.textContent)"
            )
            assert broken == [], (path, broken)

    assert found == {}
    page.goto(f"{base}/dashboard/catalogue")
    assert page.locator("code.sku").count() > 10
    page.goto(f"{base}/dashboard/")
    assert page.locator("#orders-chart svg rect.bar").count() == 30
    assert page.locator("#orders-chart svg").get_attribute("role") == "img"
    assert refused == []  # nothing refused (CSP) or missing (the favicon) on any page
