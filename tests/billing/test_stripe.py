"""Card payments through Stripe (decisions.md, "Account and payments, wave 3"), against the
Stripe compatible server of tests/support/stripe.py driven by the official library."""

import json
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import transaction
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from billing.models import StripeEvent
from billing.stripe import minor_units
from merchants.services import CreatedMerchant
from orders.authorisation import order_payment_amount, payment_refund_send
from orders.models import Order, OrderIssue, OrderPayment, PaymentRefund, Stage
from orders.pipeline.steps.allocate import order_allocate, order_cost
from tests.support.dashboard import signed_in_client
from tests.support.orders import events_of, fetch, order_create_via_api, pk
from tests.support.stripe import StripeServer, stripe_signature

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]
WEBHOOK = "/payments/stripe/webhook"


@pytest.fixture
def stripe_server(settings: Any) -> Iterator[StripeServer]:
    server = StripeServer().start()
    server.configure(settings)
    yield server
    server.stop()


def awaiting_order(live_api: APIClient) -> tuple[str, Order]:
    order_id = order_create_via_api(live_api)
    return order_id, Order.objects.get(id=pk(order_id))


def checkout(card: CreatedMerchant, order_id: str) -> str:
    """The pay page's form posted: the Checkout Session's URL it redirects to."""
    response = signed_in_client(card.merchant).post(f"/dashboard/pay/{order_id}")
    assert response.status_code == 303, response.content
    return str(response["Location"])


def paid_event(server: StripeServer, session_url: str, **changes: Any) -> bytes:
    session = server.session_paid(session_url.rsplit("/", 1)[1])
    return server.event({**session, **changes})


def post_event(payload: bytes, signature: str | None) -> Any:
    headers = {} if signature is None else {"Stripe-Signature": signature}
    return Client().post(WEBHOOK, payload, content_type="application/json", headers=headers)


def test_the_pay_page_creates_a_checkout_session_for_the_orders_total_and_sends_the_payer_there(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = awaiting_order(live_api)
    total, currency = order_payment_amount(order=order)
    assert total is not None and total > 0

    location = checkout(card, order_id)

    [call] = stripe_server.calls
    assert (call.method, call.path) == ("POST", "/v1/checkout/sessions")
    [session] = stripe_server.sessions.values()
    assert location == session["url"] == f"{stripe_server.base_url}/checkout/{session['id']}"
    back = f"http://testserver/dashboard/orders/{order_id}"
    assert call.params == {
        "mode": "payment",
        "line_items": [
            {
                "price_data": {
                    "currency": "gbp",
                    "unit_amount": str(int(total * 100)),
                    "product_data": {"name": f"Print order {order_id}"},
                },
                "quantity": "1",
            }
        ],
        "client_reference_id": order_id,
        "metadata": {"order_id": order_id},
        "success_url": f"{back}?payment=paid",
        "cancel_url": f"{back}?payment=cancelled",
        "customer_email": card.merchant.email,
    }
    assert currency == "GBP"
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"  # not paid yet


def test_the_signed_completed_event_pays_the_order_which_starts(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = awaiting_order(live_api)
    payload = paid_event(stripe_server, checkout(card, order_id))

    response = post_event(payload, stripe_server.signature(payload))

    assert response.status_code == 200, response.content
    assert response.json() == {"received": True, "outcome": "Authorised"}
    shown = fetch(live_api, order_id)
    assert shown["status"]["stage"] == "InProgress"
    assert shown["status"]["issues"] == []
    payment = OrderPayment.objects.get(order=order)
    session = json.loads(payload)["data"]["object"]
    assert payment.reference == session["payment_intent"]
    assert (payment.amount, payment.currency) == (order_cost(order), "GBP")
    assert order_payment_amount(order=order)[0] == 0  # nothing more to pay
    assert [e["type"] for e in events_of(order_id)] == [
        "com.service.order.status.stage.changed#InProgress"
    ]
    assert StripeEvent.objects.get().outcome == "Authorised"


def test_a_wrong_signature_is_400_and_changes_nothing(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, _ = awaiting_order(live_api)
    payload = paid_event(stripe_server, checkout(card, order_id))
    tampered = payload.replace(b'"livemode": false', b'"livemode": true')
    stale = stripe_signature(
        payload, stripe_server.webhook_secret, int(timezone.now().timestamp()) - 3600
    )

    refused = [
        post_event(payload, stripe_signature(payload, "whsec_someone_else")),
        post_event(tampered, stripe_server.signature(payload)),
        post_event(payload, stale),  # older than the library's five minutes
        post_event(payload, None),
        post_event(payload, "t=1,v1=00"),
    ]

    assert [r.status_code for r in refused] == [400] * 5
    assert refused[0].json() == {"error": "The Stripe-Signature does not verify."}
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"
    assert not OrderPayment.objects.exists() and not StripeEvent.objects.exists()
    assert OrderIssue.objects.filter(order_id=pk(order_id)).count() == 1


def test_a_redelivered_event_answers_200_and_changes_nothing(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = awaiting_order(live_api)
    payload = paid_event(stripe_server, checkout(card, order_id))
    assert post_event(payload, stripe_server.signature(payload)).status_code == 200
    order.refresh_from_db()
    before = (order.stage, order.pipeline_step, order.last_updated, order.payment_authorised_at)

    again = post_event(payload, stripe_server.signature(payload))

    assert again.status_code == 200
    assert again.json() == {"received": True, "outcome": "Duplicate"}
    order.refresh_from_db()
    assert (order.stage, order.pipeline_step, order.last_updated, order.payment_authorised_at) == (
        before
    )
    assert OrderPayment.objects.count() == 1 and StripeEvent.objects.count() == 1
    assert len(events_of(order_id)) == 1
    # Another event for the same payment (Stripe may send one) finds the order paid.
    other = stripe_server.event(json.loads(payload)["data"]["object"])
    answer = post_event(other, stripe_server.signature(other))
    assert answer.json() == {"received": True, "outcome": "AlreadyPaid"}
    assert OrderPayment.objects.count() == 1


@pytest.mark.parametrize(
    "change", [{"amount_total": -1}, {"currency": "usd"}], ids=["amount", "currency"]
)
def test_a_payment_that_is_not_the_orders_cost_leaves_it_waiting(
    card: CreatedMerchant,
    live_api: APIClient,
    stripe_server: StripeServer,
    change: dict[str, Any],
) -> None:
    order_id, _ = awaiting_order(live_api)
    session_url = checkout(card, order_id)
    session = stripe_server.session_paid(session_url.rsplit("/", 1)[1])
    if "amount_total" in change:
        change = {"amount_total": session["amount_total"] - 1}
    payload = stripe_server.event({**session, **change})

    response = post_event(payload, stripe_server.signature(payload))

    assert response.status_code == 200
    assert response.json()["outcome"] == "AmountMismatch"
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"
    assert not OrderPayment.objects.exists()
    assert StripeEvent.objects.get().outcome == "AmountMismatch"


def test_an_unpaid_session_or_another_event_type_changes_nothing(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, _ = awaiting_order(live_api)
    checkout(card, order_id)
    [session] = stripe_server.sessions.values()
    unpaid = stripe_server.event(session)
    expired = stripe_server.event(session, type="checkout.session.expired")

    assert post_event(unpaid, stripe_server.signature(unpaid)).json()["outcome"] == "NotPaid"
    assert post_event(expired, stripe_server.signature(expired)).json()["outcome"] == "Ignored"
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"


def _paid(card: CreatedMerchant, live_api: APIClient, server: StripeServer) -> tuple[str, Order]:
    order_id, order = awaiting_order(live_api)
    payload = paid_event(server, checkout(card, order_id))
    assert post_event(payload, server.signature(payload)).status_code == 200
    order.refresh_from_db()
    return order_id, order


def _send_due_refunds() -> None:
    for refund in PaymentRefund.objects.filter(due_at__isnull=False):
        payment_refund_send(refund_id=refund.id)


def test_cancelling_a_paid_order_refunds_it_through_stripe(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = _paid(card, live_api, stripe_server)
    paid = OrderPayment.objects.get(order=order)

    response = live_api.post(f"/v4.0/orders/{order_id}/actions/cancel")
    assert response.json()["outcome"] == "Cancelled"
    _send_due_refunds()

    [refund] = PaymentRefund.objects.all()
    [sent] = stripe_server.refunds
    assert (sent.payment_intent, sent.amount) == (paid.reference, minor_units(paid.amount, "GBP"))
    assert sent.key == refund.key == f"refund-{order_id}-cancelled"
    assert (refund.amount, refund.reference, refund.due_at) == (paid.amount, sent.id, None)
    assert refund.sent_at is not None
    assert stripe_server.refunded(paid.reference) == minor_units(paid.amount, "GBP")


def test_an_allocated_paid_order_is_refunded_by_its_refund_charge_once(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = _paid(card, live_api, stripe_server)
    with transaction.atomic():
        assert order_allocate(order=Order.objects.get(id=order.id))

    assert live_api.post(f"/v4.0/orders/{order_id}/actions/cancel").json()["outcome"] == (
        "Cancelled"
    )
    _send_due_refunds()
    _send_due_refunds()  # nothing is due any more

    charges = fetch(live_api, order_id)["charges"]
    [refund_charge] = [c for c in charges if c["chargeType"] == "Refund"]
    [refund] = PaymentRefund.objects.all()
    assert refund.key == f"refund-{refund_charge['id']}"
    assert (
        -(
            Decimal(refund_charge["totalCost"]["amount"])
            + Decimal(refund_charge["totalTax"]["amount"])
        )
        == refund.amount
        == OrderPayment.objects.get(order=order).amount
    )
    assert len(stripe_server.refunds) == 1


def test_a_refund_is_sent_once_however_often_it_is_tried(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, _ = _paid(card, live_api, stripe_server)
    live_api.post(f"/v4.0/orders/{order_id}/actions/cancel")
    _send_due_refunds()
    refund = PaymentRefund.objects.get()

    # As if the answer had been lost: the refund is due again and sent again, with its key.
    PaymentRefund.objects.filter(id=refund.id).update(due_at=timezone.now(), sent_at=None)
    payment_refund_send(refund_id=refund.id)

    assert len(stripe_server.refunds) == 1
    assert [c.idempotency_key for c in stripe_server.calls if c.path == "/v1/refunds"] == [
        refund.key,
        refund.key,
    ]
    refund.refresh_from_db()
    assert refund.sent_at is not None and refund.attempts == 2


def test_a_refund_stripe_cannot_take_now_is_due_again_later(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, _ = _paid(card, live_api, stripe_server)
    live_api.post(f"/v4.0/orders/{order_id}/actions/cancel")
    stripe_server.failures_left = 100

    _send_due_refunds()

    refund = PaymentRefund.objects.get()
    assert refund.sent_at is None and refund.due_at is not None
    assert refund.due_at > timezone.now() + timedelta(seconds=50)
    assert "Stripe could not be reached" in refund.failure
    assert stripe_server.refunds == []

    stripe_server.failures_left = 0
    PaymentRefund.objects.filter(id=refund.id).update(due_at=timezone.now())
    _send_due_refunds()
    refund.refresh_from_db()
    assert refund.sent_at is not None and refund.failure == ""
    assert len(stripe_server.refunds) == 1


def test_the_pay_page_says_so_when_stripe_cannot_be_reached(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, _ = awaiting_order(live_api)
    stripe_server.failures_left = 100

    response = signed_in_client(card.merchant).post(f"/dashboard/pay/{order_id}")

    assert response.status_code == 503
    assert "The payment service cannot be reached just now" in response.content.decode()
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"


def test_without_stripe_configured_the_webhook_is_404(settings: Any) -> None:
    settings.STRIPE_WEBHOOK_SECRET = ""

    assert post_event(b"{}", "t=1,v1=00").status_code == 404


def test_a_paid_order_is_shown_with_stage_in_progress_in_the_list(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, _ = _paid(card, live_api, stripe_server)

    listed = live_api.get("/v4.0/orders?status=inProgress").json()["orders"]

    assert [o["id"] for o in listed] == [order_id]
    assert Order.objects.get(id=pk(order_id)).stage == Stage.IN_PROGRESS
