"""Card payments through Stripe (decisions.md, "Account and payments, wave 3"), against the
Stripe compatible server of tests/support/stripe.py driven by the official library."""

import io
import json
import time
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models import F
from django.test import Client
from django.utils import timezone
from pypdf import PdfReader
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from billing.models import StripeEvent
from billing.stripe import StripePaymentProvider, minor_units, stripe_client
from dashboard.selectors import ProgressStep, order_progress
from labs.models import LabProduct
from merchants.services import CreatedMerchant
from orders.actions import order_update_shipping_method
from orders.authorisation import (
    order_payment_amount,
    payment_refund_send,
    payment_session_expire_send,
)
from orders.models import (
    DetailState,
    Order,
    OrderIssue,
    OrderPayment,
    PaymentRefund,
    PaymentSession,
    PaymentSessionStatus,
    PipelineStep,
    Shipment,
    Stage,
)
from orders.pipeline.state_machine import order_advance
from orders.pipeline.steps.allocate import order_allocate, order_cost
from tests.support.dashboard import signed_in_client
from tests.support.images import jpeg_bytes
from tests.support.orders import events_of, fetch, order_create_via_api, pk
from tests.support.servers import serve
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


def test_an_unpaid_session_or_another_event_type_pays_nothing(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, _ = awaiting_order(live_api)
    checkout(card, order_id)
    [session] = stripe_server.sessions.values()
    unpaid = stripe_server.event(session)  # completed, unpaid: a delayed method
    expired = stripe_server.event(session, type="checkout.session.expired")
    other = stripe_server.event(session, type="payment_intent.created")

    assert post_event(unpaid, stripe_server.signature(unpaid)).json()["outcome"] == "Pending"
    assert post_event(expired, stripe_server.signature(expired)).json()["outcome"] == "Expired"
    assert post_event(other, stripe_server.signature(other)).json()["outcome"] == "Ignored"
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"
    assert not OrderPayment.objects.exists()
    assert PaymentSession.objects.get().status == PaymentSessionStatus.EXPIRED


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


# --- Payments never lost: stale sessions, two tabs, delayed methods (issue 41) ------------


def session_id(session_url: str) -> str:
    return session_url.rsplit("/", 1)[1]


def _expiries_send() -> None:
    for session in PaymentSession.objects.filter(expire_due_at__isnull=False):
        payment_session_expire_send(session_id=session.id)


def _deliver(server: StripeServer, session: dict[str, Any], **event: Any) -> Any:
    payload = server.event(session, **event)
    return post_event(payload, server.signature(payload))


def _method_changed(live_api: APIClient, order_id: str, method: str) -> None:
    response = live_api.post(
        f"/v4.0/orders/{order_id}/actions/updateShippingMethod",
        {"shippingMethod": method},
        format="json",
    )
    assert response.json()["outcome"] == "Updated", response.content


def _asked(live_api: APIClient, order_id: str) -> Decimal:
    [issue] = fetch(live_api, order_id)["status"]["issues"]
    assert issue["errorCode"] == "RequiresPaymentAuthorisation"
    return Decimal(issue["authorisationDetails"]["paymentDetails"]["amount"])


def _receipt(card: CreatedMerchant, order_id: str) -> str:
    response = signed_in_client(card.merchant).get(f"/dashboard/orders/{order_id}/receipt.pdf")
    assert response.status_code == 200
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(response.content)).pages)


def _net_paid_at_stripe(server: StripeServer) -> int:
    """What the payer paid at Stripe in all, less what Stripe refunded (minor units)."""
    paid = [s for s in server.sessions.values() if s["payment_status"] == "paid"]
    return sum(s["amount_total"] - server.refunded(s["payment_intent"]) for s in paid)


def test_a_stale_session_paid_after_a_raise_counts_and_only_the_rest_is_asked_for(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    # The issue's case: the pay page opened at Standard, the method changed to Express, the
    # old session paid (here after the service expired it: the race).
    order_id, order = awaiting_order(live_api)
    standard = _asked(live_api, order_id)
    first = session_id(checkout(card, order_id))
    _method_changed(live_api, order_id, "Express")
    express = _asked(live_api, order_id)
    assert express > standard
    _expiries_send()
    assert stripe_server.sessions[first]["status"] == "expired"
    assert [c.path for c in stripe_server.calls][-1] == f"/v1/checkout/sessions/{first}/expire"

    stale = _deliver(stripe_server, stripe_server.session_paid(first, after_expiry=True))

    assert stale.json() == {"received": True, "outcome": "PartlyPaid"}
    assert [p.amount for p in OrderPayment.objects.filter(order=order)] == [standard]
    assert _asked(live_api, order_id) == express - standard
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"
    assert order_payment_amount(order=Order.objects.get(id=order.id)) == (express - standard, "GBP")

    rest = session_id(checkout(card, order_id))  # the pay page asks for the rest only
    assert stripe_server.sessions[rest]["amount_total"] == minor_units(express - standard, "GBP")
    assert _deliver(stripe_server, stripe_server.session_paid(rest)).json()["outcome"] == (
        "Authorised"
    )

    shown = fetch(live_api, order_id)
    assert shown["status"]["stage"] == "InProgress" and shown["status"]["issues"] == []
    payments = list(OrderPayment.objects.filter(order=order).order_by("id"))
    assert [p.amount for p in payments] == [standard, express - standard]
    assert not PaymentRefund.objects.exists()
    assert _net_paid_at_stripe(stripe_server) == minor_units(express, "GBP")  # paid once
    receipt = _receipt(card, order_id)
    assert all(p.reference in receipt for p in payments)
    assert f"Net paid: {express} GBP" in receipt


def test_a_stale_session_for_more_than_asked_pays_the_order_and_the_excess_is_refunded(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = awaiting_order(live_api)
    _method_changed(live_api, order_id, "Express")
    express = _asked(live_api, order_id)
    first = session_id(checkout(card, order_id))
    _method_changed(live_api, order_id, "Standard")
    standard = _asked(live_api, order_id)
    # Paid before the service's expiry reached Stripe: Stripe refuses to expire it.
    paid = stripe_server.session_paid(first)
    _expiries_send()
    session = PaymentSession.objects.get(reference=first)
    assert session.expire_due_at is None and "can be expired" in session.expire_failure

    response = _deliver(stripe_server, paid)

    assert response.json()["outcome"] == "Overpaid"
    assert fetch(live_api, order_id)["status"]["stage"] == "InProgress"
    [payment] = OrderPayment.objects.filter(order=order)
    [refund] = PaymentRefund.objects.filter(order=order)
    assert (payment.amount, payment.reference) == (express, paid["payment_intent"])
    assert (refund.payment, refund.amount) == (payment, express - standard)
    _send_due_refunds()
    refund.refresh_from_db()
    assert stripe_server.refunded(paid["payment_intent"]) == minor_units(express - standard, "GBP")
    assert _net_paid_at_stripe(stripe_server) == minor_units(standard, "GBP")
    receipt = _receipt(card, order_id)
    assert payment.reference in receipt and refund.reference in receipt
    assert f"Net paid: {standard} GBP" in receipt


def test_a_second_session_paid_in_another_tab_is_refunded_at_once(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = awaiting_order(live_api)
    cost = _asked(live_api, order_id)
    first, second = session_id(checkout(card, order_id)), session_id(checkout(card, order_id))
    assert PaymentSession.objects.filter(order=order).count() == 2
    assert _deliver(stripe_server, stripe_server.session_paid(first)).json()["outcome"] == (
        "Authorised"
    )
    # The order paid, the other tab's session is expired at Stripe; paid all the same (the race).
    assert PaymentSession.objects.get(reference=second).expire_due_at is not None
    _expiries_send()
    assert stripe_server.sessions[second]["status"] == "expired"
    again = stripe_server.session_paid(second, after_expiry=True)

    response = _deliver(stripe_server, again)

    assert response.json() == {"received": True, "outcome": "Refunded"}
    payments = list(OrderPayment.objects.filter(order=order).order_by("id"))
    assert [(p.amount, p.reference) for p in payments] == [
        (cost, stripe_server.sessions[first]["payment_intent"]),
        (cost, again["payment_intent"]),
    ]
    [refund] = PaymentRefund.objects.filter(order=order)
    assert (refund.payment, refund.amount) == (payments[1], cost)
    assert refund.due_at is not None  # queued for the callbacks worker after commit
    _send_due_refunds()
    assert stripe_server.refunded(again["payment_intent"]) == minor_units(cost, "GBP")
    assert _net_paid_at_stripe(stripe_server) == minor_units(cost, "GBP")
    assert fetch(live_api, order_id)["status"]["stage"] == "InProgress"
    assert order_payment_amount(order=Order.objects.get(id=order.id))[0] == 0
    receipt = _receipt(card, order_id)
    assert all(p.reference in receipt for p in payments)
    assert f"Net paid: {cost} GBP" in receipt


def test_a_session_paid_after_the_order_was_cancelled_is_refunded(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = awaiting_order(live_api)
    first = session_id(checkout(card, order_id))
    assert live_api.post(f"/v4.0/orders/{order_id}/actions/cancel").json()["outcome"] == (
        "Cancelled"
    )
    _expiries_send()
    assert stripe_server.sessions[first]["status"] == "expired"

    paid = stripe_server.session_paid(first, after_expiry=True)
    response = _deliver(stripe_server, paid)

    assert response.json()["outcome"] == "Refunded"
    _send_due_refunds()
    assert _net_paid_at_stripe(stripe_server) == 0
    assert fetch(live_api, order_id)["status"]["stage"] == "Cancelled"
    [refund] = PaymentRefund.objects.filter(order=order)
    assert refund.sent_at is not None and refund.reference in _receipt(card, order_id)


def test_a_delayed_method_is_credited_on_its_async_success_and_a_failure_leaves_it_asking(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = awaiting_order(live_api)
    cost = _asked(live_api, order_id)
    failing = session_id(checkout(card, order_id))
    completed = _deliver(stripe_server, stripe_server.session_paid(failing, delayed=True))
    assert completed.json()["outcome"] == "Pending"
    failed = _deliver(
        stripe_server,
        stripe_server.session_settled(failing, succeeded=False),
        type="checkout.session.async_payment_failed",
    )
    assert failed.json()["outcome"] == "Failed"
    assert _asked(live_api, order_id) == cost  # still asking
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"
    assert not OrderPayment.objects.exists()

    later = session_id(checkout(card, order_id))
    assert _deliver(stripe_server, stripe_server.session_paid(later, delayed=True)).json() == {
        "received": True,
        "outcome": "Pending",
    }
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"
    succeeded = _deliver(
        stripe_server,
        stripe_server.session_settled(later, succeeded=True),
        type="checkout.session.async_payment_succeeded",
    )

    assert succeeded.json()["outcome"] == "Authorised"
    shown = fetch(live_api, order_id)
    assert shown["status"]["stage"] == "InProgress" and shown["status"]["issues"] == []
    [payment] = OrderPayment.objects.filter(order=order)
    assert (payment.amount, payment.reference) == (
        cost,
        stripe_server.sessions[later]["payment_intent"],
    )
    assert PaymentSession.objects.get(reference=failing).status == PaymentSessionStatus.FAILED
    assert PaymentSession.objects.get(reference=later).status == PaymentSessionStatus.PAID


def test_an_event_of_a_session_the_service_did_not_open_for_that_order_changes_nothing(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, _ = awaiting_order(live_api)
    other_id, _ = awaiting_order(live_api)
    ours = stripe_server.session_paid(session_id(checkout(card, order_id)))
    # A session opened elsewhere on the same Stripe account, naming the order.
    foreign = stripe_client().v1.checkout.sessions.create(
        {
            "mode": "payment",
            "line_items": [
                {
                    "price_data": {
                        "currency": "gbp",
                        "unit_amount": 100,
                        "product_data": {"name": "Something else"},
                    },
                    "quantity": 1,
                }
            ],
            "client_reference_id": order_id,
            "success_url": "https://elsewhere.example/ok",
            "cancel_url": "https://elsewhere.example/no",
        }
    )

    answers = [
        _deliver(stripe_server, stripe_server.session_paid(foreign.id)),
        _deliver(stripe_server, {**ours, "client_reference_id": other_id}),  # not its order
    ]

    assert [a.json()["outcome"] for a in answers] == ["UnknownSession", "UnknownSession"]
    assert not OrderPayment.objects.exists() and not PaymentRefund.objects.exists()
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"
    assert fetch(live_api, other_id)["status"]["stage"] == "AwaitingPayment"


@pytest.mark.parametrize(
    "payload",
    [
        b"[]",
        b'"evt"',
        b"{}",
        b'{"id": "evt_1"}',
        b'{"id": 7, "type": "checkout.session.completed"}',
        b'{"id": "' + b"e" * 300 + b'", "type": "ping"}',
        b'{"id": "evt_1", "type": "checkout.session.completed"}',
        b'{"id": "evt_1", "type": "checkout.session.completed", "data": []}',
        b'{"id": "evt_1", "type": "checkout.session.completed", "data": {"object": 5}}',
    ],
    ids=[
        "array",
        "string",
        "empty",
        "no type",
        "numeric id",
        "long id",
        "no data",
        "data array",
        "object number",
    ],
)
def test_a_signed_event_of_an_unexpected_shape_is_400(
    stripe_server: StripeServer, payload: bytes
) -> None:
    response = post_event(payload, stripe_server.signature(payload))

    assert response.status_code == 400
    assert response.json()["error"].startswith(("The event cannot be read", "The Stripe-Sig"))
    assert not StripeEvent.objects.exists()


@pytest.mark.parametrize(
    "change",
    [
        {"amount_total": "616"},
        {"amount_total": True},
        {"amount_total": -1},
        {"amount_total": 10**15},
        {"currency": "gbpx"},
        {"currency": None},
        {"id": None},
        {"payment_intent": {"id": "pi_1"}},
        {"payment_status": 1},
        {"metadata": ["ord_1"]},
    ],
    ids=lambda change: "-".join(f"{k}={v!r}"[:30] for k, v in change.items()),
)
def test_a_signed_session_event_with_a_field_of_an_unexpected_shape_is_400_and_changes_nothing(
    card: CreatedMerchant,
    live_api: APIClient,
    stripe_server: StripeServer,
    change: dict[str, Any],
) -> None:
    order_id, _ = awaiting_order(live_api)
    paid = stripe_server.session_paid(session_id(checkout(card, order_id)))

    response = _deliver(stripe_server, {**paid, **change})

    assert response.status_code == 400
    assert response.json()["error"].startswith("The event cannot be read: ")
    assert not StripeEvent.objects.exists() and not OrderPayment.objects.exists()
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"


def test_a_raise_and_a_lowering_expire_only_the_sessions_for_another_amount(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, _ = awaiting_order(live_api)
    standard = session_id(checkout(card, order_id))
    _method_changed(live_api, order_id, "Express")
    express = session_id(checkout(card, order_id))
    _method_changed(live_api, order_id, "Standard")  # the Express session is stale now
    stripe_server.failures_left = 100

    _expiries_send()  # Stripe away: due again later

    waiting = PaymentSession.objects.get(reference=express)
    assert waiting.expire_due_at is not None and waiting.expire_due_at > timezone.now()
    assert "Stripe could not be reached" in waiting.expire_failure
    stripe_server.failures_left = 0
    PaymentSession.objects.filter(expire_due_at__isnull=False).update(expire_due_at=timezone.now())
    _expiries_send()
    assert {s: stripe_server.sessions[s]["status"] for s in (standard, express)} == {
        standard: "expired",  # expired at the raise, and not opened again
        express: "expired",
    }
    assert PaymentSession.objects.get(reference=express).status == PaymentSessionStatus.EXPIRED

    kept = session_id(checkout(card, order_id))
    _method_changed(live_api, order_id, "Standard")  # the same amount: the session stands
    assert PaymentSession.objects.get(reference=kept).expire_due_at is None
    assert _deliver(stripe_server, stripe_server.session_paid(kept)).json()["outcome"] == (
        "Authorised"
    )


def test_a_part_paid_order_whose_cost_falls_to_what_was_paid_goes_on(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = awaiting_order(live_api)
    standard = _asked(live_api, order_id)
    first = session_id(checkout(card, order_id))
    _method_changed(live_api, order_id, "Express")
    paid = stripe_server.session_paid(first, after_expiry=True)
    assert _deliver(stripe_server, paid).json()["outcome"] == "PartlyPaid"

    _method_changed(live_api, order_id, "Standard")

    shown = fetch(live_api, order_id)
    assert shown["status"]["stage"] == "InProgress" and shown["status"]["issues"] == []
    assert [p.amount for p in OrderPayment.objects.filter(order=order)] == [standard]
    assert not PaymentRefund.objects.exists()


# --- Sessions the service has no record of (opened before PaymentSession existed, or whose row
# was lost after Stripe opened them) -------------------------------------------------------


def _session_unrecorded(card: CreatedMerchant, order_id: str, amount: Decimal) -> str:
    """A Checkout Session opened for the order as the service opens one, with no
    PaymentSession row: as every session opened before migration 0021 (payable for 24 h)."""
    result = StripePaymentProvider().authorise(
        order_reference=order_id,
        amount=amount,
        currency="GBP",
        merchant_email=card.merchant.email,
        return_url=f"http://testserver/dashboard/orders/{order_id}",
    )
    assert result.reference and not PaymentSession.objects.filter(reference=result.reference)
    return result.reference


def test_a_paid_session_opened_here_with_no_record_pays_its_order(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = awaiting_order(live_api)
    cost = _asked(live_api, order_id)
    opened = _session_unrecorded(card, order_id, cost)
    paid = stripe_server.session_paid(opened)

    response = _deliver(stripe_server, paid)

    assert response.json() == {"received": True, "outcome": "Authorised"}
    shown = fetch(live_api, order_id)
    assert shown["status"]["stage"] == "InProgress" and shown["status"]["issues"] == []
    [payment] = OrderPayment.objects.filter(order=order)
    assert (payment.amount, payment.reference) == (cost, paid["payment_intent"])
    session = PaymentSession.objects.get(reference=opened)
    assert (session.order_id, session.amount, session.currency, session.status) == (
        order.id,
        cost,
        "GBP",
        PaymentSessionStatus.PAID,
    )
    assert Order.objects.get(id=order.id).payment_authorised_at is not None
    assert StripeEvent.objects.get().outcome == "Authorised"


def test_a_paid_session_opened_here_with_no_record_for_a_cancelled_order_is_refunded(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = awaiting_order(live_api)
    opened = _session_unrecorded(card, order_id, _asked(live_api, order_id))
    assert live_api.post(f"/v4.0/orders/{order_id}/actions/cancel").json()["outcome"] == (
        "Cancelled"
    )
    _expiries_send()
    assert stripe_server.sessions[opened]["status"] == "open"  # unknown: nothing expired it

    response = _deliver(stripe_server, stripe_server.session_paid(opened))

    assert response.json()["outcome"] == "Refunded"
    [payment] = OrderPayment.objects.filter(order=order)
    [refund] = PaymentRefund.objects.filter(order=order)
    assert (refund.payment, refund.amount) == (payment, payment.amount)
    _send_due_refunds()
    assert _net_paid_at_stripe(stripe_server) == 0
    assert fetch(live_api, order_id)["status"]["stage"] == "Cancelled"


def test_a_stale_session_with_no_record_counts_toward_what_the_order_asks(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = awaiting_order(live_api)
    standard = _asked(live_api, order_id)
    opened = _session_unrecorded(card, order_id, standard)
    _method_changed(live_api, order_id, "Express")
    express = _asked(live_api, order_id)

    response = _deliver(stripe_server, stripe_server.session_paid(opened))

    assert response.json()["outcome"] == "PartlyPaid"
    assert [p.amount for p in OrderPayment.objects.filter(order=order)] == [standard]
    assert _asked(live_api, order_id) == express - standard
    assert not PaymentRefund.objects.exists()


def test_a_paid_session_naming_no_order_of_ours_is_ignored_and_logged(
    card: CreatedMerchant,
    live_api: APIClient,
    stripe_server: StripeServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    order_id, order = awaiting_order(live_api)
    other_id, _ = awaiting_order(live_api)
    cost = _asked(live_api, order_id)
    missing = f"ord_{order.id + 10**6}"
    sessions = [
        _session_unrecorded(card, missing, cost),  # this service's form, no such order
        _session_unrecorded(card, "order-17", cost),  # another system's reference
    ]
    # Its metadata names the order, but client_reference_id another: not as the service opens.
    mixed = stripe_server.session_paid(_session_unrecorded(card, order_id, cost))
    caplog.set_level("ERROR", logger="orders.authorisation")

    answers = [_deliver(stripe_server, stripe_server.session_paid(s)) for s in sessions] + [
        _deliver(stripe_server, {**mixed, "client_reference_id": other_id})
    ]

    assert [a.json()["outcome"] for a in answers] == ["UnknownSession"] * 3
    assert not OrderPayment.objects.exists() and not PaymentRefund.objects.exists()
    assert not PaymentSession.objects.exists()
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"
    assert fetch(live_api, other_id)["status"]["stage"] == "AwaitingPayment"
    logged = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(logged) == 3
    assert all("names no order of this service" in line for line in logged)
    assert sessions[0] in logged[0] and repr(missing) in logged[0]


def test_a_part_paid_order_whose_cost_falls_is_authorised_and_a_raise_at_allocation_is_asked(
    card: CreatedMerchant,
    live_api: APIClient,
    stripe_server: StripeServer,
    httpserver: HTTPServer,
    settings: Any,
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    url = serve(httpserver, "/photo.jpg", jpeg_bytes(), "image/jpeg")
    order_id = order_create_via_api(
        live_api, items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}]
    )
    order = Order.objects.get(id=pk(order_id))
    standard = _asked(live_api, order_id)
    first = session_id(checkout(card, order_id))
    _method_changed(live_api, order_id, "Express")
    paid = stripe_server.session_paid(first, after_expiry=True)
    assert _deliver(stripe_server, paid).json()["outcome"] == "PartlyPaid"

    _method_changed(live_api, order_id, "Standard")  # what was paid covers it now

    started = Order.objects.get(id=order.id)
    assert started.stage == Stage.IN_PROGRESS
    assert started.payment_authorised_at is not None
    assert started.payment_reference == paid["payment_intent"]
    assert ProgressStep("Payment", DetailState.COMPLETE, "Paid") in order_progress(started)
    # The labs' prices rise before the order is allocated: the submit step asks for the rest.
    LabProduct.objects.update(unit_cost=F("unit_cost") * 3)
    for _ in range(20):  # the steps run in-process until the order waits
        due = order_advance(order_id=order.id)
        if due is None or due > timezone.now() + timedelta(seconds=5):
            break
        time.sleep(max(0.0, (due - timezone.now()).total_seconds()))
    stopped = Order.objects.get(id=order.id)

    assert (stopped.stage, stopped.pipeline_step) == (
        Stage.AWAITING_PAYMENT,
        PipelineStep.AWAITING_PAYMENT,
    )
    cost = order_cost(stopped)
    assert cost is not None and cost > standard
    assert _asked(live_api, order_id) == cost - standard
    assert not Shipment.objects.filter(order=order, submitted_at__isnull=False).exists()


# --- The pay page holds no lock on the order while Stripe opens the session ---------------


@pytest.mark.django_db(transaction=True)
def test_the_order_is_not_locked_while_stripe_opens_a_session_and_a_change_meanwhile_expires_it(
    card: CreatedMerchant, live_api: APIClient, stripe_server: StripeServer
) -> None:
    order_id, order = awaiting_order(live_api)
    standard = _asked(live_api, order_id)
    lock_free: list[bool] = []

    def meanwhile(session: dict[str, Any]) -> None:
        """As a webhook or the pipeline would, while Stripe answers: the order's row locked
        (at once, or not at all), and the merchant's change of method made."""
        try:
            try:
                with transaction.atomic():
                    Order.objects.select_for_update(nowait=True).get(id=order.id)
            except DatabaseError:
                lock_free.append(False)
                return
            lock_free.append(True)
            changed = order_update_shipping_method(
                order=Order.objects.get(id=order.id), shipping_method="Express"
            )
            assert changed.outcome == "Updated"
        finally:
            connection.close()

    stripe_server.on_session_create = meanwhile

    response = signed_in_client(card.merchant).post(f"/dashboard/pay/{order_id}")

    assert lock_free == [True]
    assert response.status_code == 400
    assert "The order changed while its payment page was being opened" in (
        response.content.decode()
    )
    [opened] = stripe_server.sessions
    session = PaymentSession.objects.get(reference=opened)
    assert (session.order_id, session.amount) == (order.id, standard)
    assert session.expire_due_at is not None
    _expiries_send()
    assert stripe_server.sessions[opened]["status"] == "expired"
    express = _asked(live_api, order_id)
    assert express > standard
    # Paid all the same (the race with the expiry): a session of the order, counted.
    response = _deliver(stripe_server, stripe_server.session_paid(opened, after_expiry=True))
    assert response.json()["outcome"] == "PartlyPaid"
    assert _asked(live_api, order_id) == express - standard
