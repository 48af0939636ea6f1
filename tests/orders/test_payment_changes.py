"""A card order is never produced with charges above what its merchant authorised: a raise asks
for the difference before any lab work, a lowering refunds the difference."""

import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from merchants.models import BillingMode, Merchant, PauseMode
from merchants.services import CreatedMerchant
from orders.authorisation import order_payment_authorise
from orders.editing import order_held_update
from orders.models import (
    Charge,
    Order,
    OrderPayment,
    PaymentRefund,
    PipelineStep,
    Shipment,
    Stage,
)
from orders.pipeline.state_machine import order_advance, order_submit_now
from orders.pipeline.steps.allocate import order_cost
from tests.support.dashboard import signed_in_client
from tests.support.images import jpeg_bytes
from tests.support.orders import fetch, order_at_labs, pk
from tests.support.pipeline import advance_to
from tests.support.servers import serve

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]


@pytest.fixture
def card(merchant: CreatedMerchant, settings: pytest.FixtureRequest) -> CreatedMerchant:
    Merchant.objects.filter(pk=merchant.merchant.pk).update(billing_mode=BillingMode.CARD)
    merchant.merchant.refresh_from_db()
    settings.PAYMENT_PROVIDER = "test"  # type: ignore[attr-defined]
    settings.ALLOW_PRIVATE_URLS = True  # type: ignore[attr-defined]
    return merchant


def paid(order: Order) -> list[Decimal]:
    return [p.amount for p in OrderPayment.objects.filter(order=order).order_by("id")]


def refunded(order: Order) -> list[tuple[Decimal, str]]:
    return [(r.amount, r.key) for r in PaymentRefund.objects.filter(order=order).order_by("id")]


def run(order_id: str) -> Order:
    """Run the order's steps in-process until it waits (for a payment, or its lab)."""
    for _ in range(20):
        due = order_advance(order_id=pk(order_id))
        if due is None or due > timezone.now() + timedelta(seconds=5):
            break
        time.sleep(max(0.0, (due - timezone.now()).total_seconds()))
    return Order.objects.get(id=pk(order_id))


def charged(order: Order) -> Decimal:
    return sum((c.total_cost + c.total_tax for c in Charge.objects.filter(order=order)), Decimal(0))


def photo_items(httpserver: HTTPServer, copies: int = 1) -> list[dict[str, object]]:
    url = serve(httpserver, "/photo.jpg", jpeg_bytes(), "image/jpeg")
    return [{"sku": "GLOBAL-PHO-4X6", "copies": copies, "assets": [{"url": url}]}]


def held_paid_order(card: CreatedMerchant, live_api: APIClient, httpserver: HTTPServer) -> Order:
    """A held card order whose cost the merchant authorised on the pay page while it was held."""
    card.merchant.environments.filter(kind="Live").update(pause_mode=PauseMode.INDEFINITE)
    response = live_api.post(
        "/v4.0/orders",
        {
            "shippingMethod": "Standard",
            "recipient": {
                "name": "Ada Lovelace",
                "address": {
                    "line1": "1 Analytical Row",
                    "postalOrZipCode": "SW1A 1AA",
                    "countryCode": "GB",
                    "townOrCity": "London",
                },
            },
            "items": photo_items(httpserver),
        },
        format="json",
    )
    assert response.json()["outcome"] == "OnHold", response.content
    order_id = response.json()["order"]["id"]
    paid = signed_in_client(card.merchant).post(f"/dashboard/pay/{order_id}")
    assert paid.status_code == 302
    return Order.objects.get(id=pk(order_id))


def edit(card: CreatedMerchant, order: Order, *, copies: int, method: str) -> None:
    """The merchant's edit of the held order on the dashboard."""
    response = signed_in_client(card.merchant).post(
        f"/dashboard/orders/{order.public_id}/edit",
        {
            "name": "Ada Lovelace",
            "email": "",
            "phone_number": "",
            "line1": "1 Analytical Row",
            "line2": "",
            "postal_or_zip_code": "SW1A 1AA",
            "country_code": "GB",
            "town_or_city": "London",
            "state_or_county": "",
            "shipping_method": method,
            "copies_0": str(copies),
            "metadata": "{}",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]


def test_a_held_paid_order_edited_to_cost_more_waits_for_the_difference_before_any_lab(
    card: CreatedMerchant, live_api: APIClient, httpserver: HTTPServer
) -> None:
    order = held_paid_order(card, live_api, httpserver)
    [first] = paid(order)

    edit(card, order, copies=500, method="Express")
    assert order_submit_now(order=order)
    stopped = run(order.public_id)

    shown = fetch(live_api, order.public_id)
    assert shown["status"]["stage"] == "AwaitingPayment"
    assert stopped.pipeline_step == PipelineStep.AWAITING_PAYMENT
    [issue] = shown["status"]["issues"]
    assert issue["errorCode"] == "RequiresPaymentAuthorisation"
    cost = Decimal(issue["authorisationDetails"]["paymentDetails"]["amount"]) + first
    assert cost > first * 50  # 500 copies by Express
    assert Shipment.objects.filter(order=order, submitted_at__isnull=False).count() == 0

    signed_in_client(card.merchant).post(f"/dashboard/pay/{order.public_id}")
    done = run(order.public_id)

    assert paid(order) == [first, cost - first]
    assert charged(done) == cost
    assert done.pipeline_step == PipelineStep.PRODUCTION
    assert Shipment.objects.filter(order=order, submitted_at__isnull=False).count() == 1
    assert fetch(live_api, order.public_id)["status"]["issues"] == []


def test_a_held_paid_order_edited_to_cost_less_is_refunded_the_difference(
    card: CreatedMerchant, live_api: APIClient, httpserver: HTTPServer
) -> None:
    order = held_paid_order(card, live_api, httpserver)
    edit(card, order, copies=5, method="Standard")
    signed_in_client(card.merchant).post(f"/dashboard/pay/{order.public_id}")
    [one, four_more] = paid(order)

    edit(card, order, copies=2, method="Standard")

    two = order_cost(Order.objects.get(id=order.id))
    assert two is not None
    assert refunded(order) == [(one + four_more - two, f"refund-{order.public_id}-lowered-1")]
    [refund] = PaymentRefund.objects.filter(order=order)
    assert refund.payment == OrderPayment.objects.get(order=order, amount=four_more)
    assert fetch(live_api, order.public_id)["status"]["issues"] == []

    edit(card, order, copies=1, method="Standard")  # the rest of the second payment

    assert [
        (r.amount, r.payment and r.payment.amount)
        for r in PaymentRefund.objects.filter(order=order)
    ] == [
        (one + four_more - two, four_more),
        (two - one, four_more),
    ]
    assert paid(order) == [one, four_more]
    assert fetch(live_api, order.public_id)["status"]["issues"] == []


def test_a_shipping_method_raise_before_the_labs_asks_for_the_difference(
    card: CreatedMerchant, live_api: APIClient, httpserver: HTTPServer
) -> None:
    order = held_paid_order(card, live_api, httpserver)
    [standard] = paid(order)
    assert order_submit_now(order=order)
    advance_to(order.public_id, PipelineStep.PREPARE)
    assert charged(order) == standard

    response = live_api.post(
        f"/v4.0/orders/{order.public_id}/actions/updateShippingMethod",
        {"shippingMethod": "Express"},
        format="json",
    )

    assert response.json()["outcome"] == "Updated", response.content
    express = charged(order)
    assert express > standard
    [issue] = fetch(live_api, order.public_id)["status"]["issues"]
    assert Decimal(issue["authorisationDetails"]["paymentDetails"]["amount"]) == express - standard
    stopped = run(order.public_id)
    assert (stopped.stage, stopped.pipeline_step) == (
        Stage.AWAITING_PAYMENT,
        PipelineStep.AWAITING_PAYMENT,
    )
    assert not Shipment.objects.filter(order=order, submitted_at__isnull=False).exists()
    assert order_payment_authorise(order=stopped).authorised
    assert run(order.public_id).pipeline_step == PipelineStep.PRODUCTION
    assert paid(order) == [standard, express - standard]


def test_a_shipping_method_lowering_before_the_labs_refunds_the_difference(
    card: CreatedMerchant, live_api: APIClient, httpserver: HTTPServer
) -> None:
    order = held_paid_order(card, live_api, httpserver)
    order_held_update(
        order=order,
        recipient=fetch(live_api, order.public_id)["recipient"],
        shipping_method="Express",
        copies=[1],
        metadata={},
    )
    order_payment_authorise(order=order)
    express = sum(paid(order), Decimal(0))
    assert order_submit_now(order=order)
    advance_to(order.public_id, PipelineStep.PREPARE)

    response = live_api.post(
        f"/v4.0/orders/{order.public_id}/actions/updateShippingMethod",
        {"shippingMethod": "Standard"},
        format="json",
    )

    assert response.json()["outcome"] == "Updated"
    standard = charged(order)
    assert standard < express
    assert refunded(order) == [(express - standard, f"refund-{order.public_id}-lowered-1")]
    assert run(order.public_id).pipeline_step == PipelineStep.PRODUCTION


def test_a_shipping_method_raise_at_the_labs_is_refused_without_asking_them(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    order = order_at_labs(live_api)
    before = charged(order)
    order_payment_authorise(order=order)
    assert paid(order) == [before]

    response = live_api.post(
        f"/v4.0/orders/{order.public_id}/actions/updateShippingMethod",
        {"shippingMethod": "Express"},
        format="json",
    )

    body = response.json()
    assert body["outcome"] == "FailedToUpdate", body
    [result] = body["shipmentUpdateResults"]
    assert result["successful"] is False
    assert "beyond the" in result["description"] and "authorised by card" in result["description"]
    assert charged(order) == before
    assert Shipment.objects.get(order=order).shipping_method == "Standard"
    assert Order.objects.get(id=order.id).shipping_method == "Standard"


def test_the_openapi_document_states_what_a_cost_change_does_to_a_paid_order() -> None:
    schema = Client().get("/v4.0/schema?format=json").json()

    for path in ("updateShippingMethod", "updateRecipient"):
        [operation] = [
            v["post"] for k, v in schema["paths"].items() if k.endswith(f"/actions/{path}")
        ]
        assert "`paymentDetails.amount` is the difference" in operation["description"]
        assert "lowers the cost refunds the difference" in operation["description"]
