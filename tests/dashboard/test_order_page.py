"""What the order, pay and sign-up pages and the receipt tell a merchant: test payments said to
be tests, the hold's end, the submitted order's new state, attributes the lab gets by default,
country names, the password rules; and the favicon."""

import io
import re
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import transaction
from django.test import Client
from django.utils import timezone
from pypdf import PdfReader
from rest_framework.test import APIClient

from merchants.models import Environment, PauseMode
from merchants.services import CreatedMerchant
from orders.authorisation import order_payment_authorise
from orders.models import Charge, ChargeType, Order, PipelineStep
from orders.pipeline.steps.allocate import order_allocate
from tests.support.dashboard import signed_in_client
from tests.support.orders import order_body, order_create_via_api, order_via_api, pk

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]
NOTICE = "Test payment: no card is charged"


def pdf_text(content: bytes) -> str:
    assert content.startswith(b"%PDF-")
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(content)).pages)


def live_owner(merchant: CreatedMerchant) -> Client:
    owner = signed_in_client(merchant.merchant)
    owner.post("/dashboard/environment", {"kind": "Live"})
    return owner


def paid_and_allocated(live_api: APIClient) -> Order:
    order = order_via_api(live_api, items=[{**order_body()["items"][0], "copies": 3}])
    assert order_payment_authorise(order=order).authorised
    with transaction.atomic():
        assert order_allocate(order=Order.objects.get(id=order.id))
    return Order.objects.get(id=order.id)


def test_with_the_test_provider_the_pay_and_order_pages_and_the_receipt_say_no_card_is_charged(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    owner = live_owner(card)
    unpaid = order_create_via_api(live_api)
    paid = paid_and_allocated(live_api)

    pay_page = owner.get(f"/dashboard/pay/{unpaid}").content.decode()
    unpaid_page = owner.get(f"/dashboard/orders/{unpaid}").content.decode()
    paid_page = owner.get(f"/dashboard/orders/{paid.public_id}").content.decode()
    receipt = pdf_text(owner.get(f"/dashboard/orders/{paid.public_id}/receipt.pdf").content)

    assert NOTICE in pay_page and "our payment provider's page" not in pay_page
    assert NOTICE in unpaid_page and NOTICE in paid_page
    assert "Paid by test payment (no card is charged)" in paid_page
    assert f"{NOTICE}." in receipt


def test_with_a_real_provider_no_page_says_test_payment(
    card: CreatedMerchant, live_api: APIClient, settings: Any
) -> None:
    owner = live_owner(card)
    paid = paid_and_allocated(live_api)
    settings.PAYMENT_PROVIDER = "tests.support.dashboard.DecliningPaymentProvider"
    unpaid = order_create_via_api(live_api)

    pay_page = owner.get(f"/dashboard/pay/{unpaid}").content.decode()
    paid_page = owner.get(f"/dashboard/orders/{paid.public_id}").content.decode()
    receipt = pdf_text(owner.get(f"/dashboard/orders/{paid.public_id}/receipt.pdf").content)

    assert "our payment provider's page" in pay_page
    assert "Test payment" not in pay_page + paid_page + receipt
    assert "Paid by card" in paid_page


def test_the_receipt_lists_items_shipping_tax_and_the_total(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    paid = paid_and_allocated(live_api)
    charges = list(Charge.objects.filter(order=paid))
    items = sum((c.total_cost for c in charges if c.charge_type == ChargeType.ITEM), Decimal(0))
    shipping = sum(
        (c.total_cost for c in charges if c.charge_type == ChargeType.SHIPPING), Decimal(0)
    )
    tax = sum((c.total_tax for c in charges), Decimal(0))
    assert items and shipping and tax

    text = pdf_text(live_owner(card).get(f"/dashboard/orders/{paid.public_id}/receipt.pdf").content)

    assert f"3 x GLOBAL-CAN-10X10: {items:.2f} GBP" in text
    assert f"Items: {items:.2f} GBP" in text
    assert f"Shipping: {shipping:.2f} GBP" in text
    assert f"Tax: {tax:.2f} GBP" in text
    assert f"Total: {items + shipping + tax:.2f} GBP" in text
    assert "Refunds" not in text


def _pause(merchant: CreatedMerchant, mode: str, minutes: int = 0) -> None:
    Environment.objects.filter(merchant=merchant.merchant, kind="Sandbox").update(
        pause_mode=mode, pause_minutes=minutes
    )


def test_a_held_order_says_when_its_hold_ends_and_submit_now_shows_its_new_state(
    merchant: CreatedMerchant, sandbox_api: APIClient
) -> None:
    _pause(merchant, PauseMode.MINUTES, 30)
    order_id = order_create_via_api(sandbox_api, outcome="OnHold")
    due = Order.objects.get(id=pk(order_id)).due_at
    assert due is not None and due - timezone.now() > timedelta(minutes=29)
    owner = signed_in_client(merchant.merchant)

    page = owner.get(f"/dashboard/orders/{order_id}").content.decode()

    assert f'<time datetime="{due.isoformat()}" id="hold-ends">{due:%Y-%m-%d %H:%M:%S} UTC' in page
    assert f'data-countdown="{due.isoformat()}"' in page
    assert re.search(r'data-countdown="[^"]+">(29|30)\xa0minutes</span> left', page)
    assert "Edit the held order" in page and 'id="order-stage">On hold<' in page

    response = owner.post(f"/dashboard/orders/{order_id}/submit", follow=True)

    page = response.content.decode()
    assert 'id="order-stage">Leaving the hold<' in page
    assert "Edit the held order" not in page and "Submit now" not in page
    assert "data-countdown" not in page
    assert '<meta http-equiv="refresh"' in page  # follows the order as it starts
    listed = owner.get("/dashboard/orders").content.decode()
    assert ">Leaving the hold</span>" in listed
    refused = owner.post(f"/dashboard/orders/{order_id}/edit", {"recipient_name": "X"}, follow=True)
    assert "no longer on hold" in refused.content.decode()
    assert Order.objects.get(id=pk(order_id)).pipeline_step == PipelineStep.HELD


def test_an_order_held_until_submitted_says_so(
    merchant: CreatedMerchant, sandbox_api: APIClient
) -> None:
    _pause(merchant, PauseMode.INDEFINITE)
    order_id = order_create_via_api(sandbox_api, outcome="OnHold")

    page = signed_in_client(merchant.merchant).get(f"/dashboard/orders/{order_id}")

    assert "On hold until you submit it" in page.content.decode()
    assert "data-countdown" not in page.content.decode()


def test_an_items_defaulted_attribute_is_shown_as_the_default(
    merchant: CreatedMerchant, sandbox_api: APIClient
) -> None:
    photo = {"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": order_body()["items"][0]["assets"]}
    given = order_via_api(sandbox_api, items=[{**photo, "attributes": {"finish": "matte"}}])
    defaulted = order_via_api(sandbox_api, items=[photo])
    owner = signed_in_client(merchant.merchant)

    given_page = owner.get(f"/dashboard/orders/{given.public_id}").content.decode()
    defaulted_page = owner.get(f"/dashboard/orders/{defaulted.public_id}").content.decode()

    assert "<code>finish</code>: <code>matte</code></span>" in given_page
    assert "(default)" not in given_page
    assert "<code>finish</code>: <code>lustre</code> (default)</span>" in defaulted_page


def test_country_pickers_and_the_recipient_name_the_country(
    merchant: CreatedMerchant, sandbox_api: APIClient
) -> None:
    _pause(merchant, PauseMode.INDEFINITE)
    held = order_create_via_api(sandbox_api, outcome="OnHold")
    owner = signed_in_client(merchant.merchant)

    held_page = owner.get(f"/dashboard/orders/{held}").content.decode()
    catalogue = owner.get("/dashboard/catalogue?country=US").content.decode()

    assert '<option value="GB" selected>GB — United Kingdom</option>' in held_page
    assert '<option value="US">US — United States</option>' in held_page
    assert '<option value="US" selected>US — United States</option>' in catalogue
    assert '<option value="DE">DE — Germany</option>' in catalogue


def test_sign_up_shows_the_password_rules(client: Client) -> None:
    page = client.get("/dashboard/signup").content.decode()

    assert 'aria-describedby="id_password_help"' in page
    assert "Your password must contain at least 10 characters." in page
    assert "Your password can\u2019t be entirely numeric." in page


def test_the_favicon_is_served(client: Client) -> None:
    response = client.get("/favicon.ico")

    assert response.status_code == 200
    assert response["Content-Type"] == "image/vnd.microsoft.icon"
    assert response.content.startswith(b"\x00\x00\x01\x00")  # an ICO file
