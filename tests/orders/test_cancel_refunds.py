"""A cancelled order asks for nothing and keeps nothing it was paid: whatever its state when
cancelled, its payment issue goes, every amount its card paid goes back, and each refund shows
in its charges (a Refund charge), which still add up to what the order costs."""

import importlib
import re
from decimal import Decimal
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from merchants.models import PauseMode
from merchants.services import CreatedMerchant
from orders.authorisation import order_payment_authorise
from orders.editing import order_held_update
from orders.models import (
    Charge,
    Order,
    OrderIssue,
    OrderPayment,
    PaymentRefund,
    Shipment,
    Stage,
)
from orders.payments import payment_issue_write
from orders.pipeline.state_machine import order_advance, order_submit_now
from orders.pipeline.steps.allocate import order_allocate, order_cost
from orders.shipments import shipment_cancel
from tests.support.dashboard import MeanwhilePaymentProvider, signed_in_client
from tests.support.orders import fetch, order_create_via_api, pk
from tests.support.pipeline import make_due

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]

AMOUNT_TO_PAY = re.compile(r"(Pay|To pay:) \d")


def cancelled(api: APIClient, order_id: str) -> dict[str, Any]:
    response = api.post(f"/v4.0/orders/{order_id}/actions/cancel")
    assert response.status_code == 200, response.content
    assert response.json()["outcome"] == "Cancelled", response.content
    return fetch(api, order_id)


def shown(order: dict[str, Any]) -> list[tuple[str, Decimal]]:
    """The order's charges as GET shows them: (type, total with tax), in order."""
    return [
        (
            c["chargeType"],
            Decimal(c["totalCost"]["amount"]) + Decimal(c["totalTax"]["amount"]),
        )
        for c in order["charges"]
    ]


def refunds(order_id: str) -> list[Decimal]:
    return [r.amount for r in PaymentRefund.objects.filter(order_id=pk(order_id)).order_by("id")]


def paid(order_id: str) -> Decimal:
    payments = OrderPayment.objects.filter(order_id=pk(order_id))
    return sum((p.amount for p in payments), Decimal(0))


def nothing_to_pay(card: CreatedMerchant, order_id: str) -> None:
    """No payment issue, and the pay page asks for nothing (and takes nothing)."""
    assert not OrderIssue.objects.filter(order_id=pk(order_id)).exists()
    owner = signed_in_client(card.merchant)
    page = owner.get(f"/dashboard/pay/{order_id}").content.decode()
    assert "This order has no payment waiting." in page and not AMOUNT_TO_PAY.search(page)
    before = OrderPayment.objects.filter(order_id=pk(order_id)).count()
    owner.post(f"/dashboard/pay/{order_id}")
    assert OrderPayment.objects.filter(order_id=pk(order_id)).count() == before
    assert not AMOUNT_TO_PAY.search(owner.get(f"/dashboard/orders/{order_id}").content.decode())


def test_an_unpaid_order_awaiting_payment_cancelled_asks_for_nothing_and_refunds_nothing(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    order_id = order_create_via_api(live_api)
    assert fetch(live_api, order_id)["status"]["issues"]  # it asked for its payment

    order = cancelled(live_api, order_id)

    assert order["status"]["stage"] == "Cancelled"
    assert order["status"]["issues"] == []
    assert order["charges"] == []
    assert refunds(order_id) == []
    nothing_to_pay(card, order_id)


def test_a_paid_order_cancelled_before_it_was_charged_shows_its_refund_in_charges(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    order_id = order_create_via_api(live_api)
    assert order_payment_authorise(order=Order.objects.get(id=pk(order_id))).authorised
    amount = paid(order_id)
    assert amount > 0 and not Charge.objects.filter(order_id=pk(order_id)).exists()

    order = cancelled(live_api, order_id)

    assert order["status"]["issues"] == []
    assert shown(order) == [("Other", amount), ("Refund", -amount)]
    assert refunds(order_id) == [amount]
    refund = PaymentRefund.objects.get(order_id=pk(order_id))
    assert refund.charge is not None and refund.charge.public_id == order["charges"][1]["id"]
    assert [line["itemId"] for c in order["charges"] for line in c["items"]] == [None, None]
    nothing_to_pay(card, order_id)
    page = signed_in_client(card.merchant).get(f"/dashboard/orders/{order_id}").content.decode()
    assert f"<dt>Paid by card beyond the cost</dt><dd>{amount} GBP</dd>" in page
    assert f"<dt>Refunds</dt><dd>\N{MINUS SIGN}{amount} GBP</dd>" in page
    assert "<dd><strong>0.00 GBP</strong></dd>" in page


def test_a_paid_allocated_order_cancelled_is_refunded_what_it_was_charged(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    order_id = order_create_via_api(live_api)
    assert order_payment_authorise(order=Order.objects.get(id=pk(order_id))).authorised
    with transaction.atomic():
        assert order_allocate(order=Order.objects.get(id=pk(order_id)))
    amount = paid(order_id)

    order = cancelled(live_api, order_id)

    charges = shown(order)
    assert [kind for kind, _ in charges] == ["Item", "Shipping", "Refund"]
    assert charges[0][1] + charges[1][1] == amount == -charges[2][1]
    assert refunds(order_id) == [amount]
    assert order["status"]["issues"] == []


def held_paid(card: CreatedMerchant, live_api: APIClient) -> str:
    """A held card order its merchant paid for while it was held."""
    card.merchant.environments.filter(kind="Live").update(pause_mode=PauseMode.INDEFINITE)
    order_id = order_create_via_api(live_api, outcome="OnHold")
    assert order_payment_authorise(order=Order.objects.get(id=pk(order_id))).authorised
    return order_id


def copies_set(live_api: APIClient, order_id: str, copies: int) -> None:
    order = Order.objects.get(id=pk(order_id))
    order_held_update(
        order=order,
        recipient=fetch(live_api, order_id)["recipient"],
        shipping_method=order.shipping_method,
        copies=[copies],
        metadata={},
    )


def test_an_order_cancelled_while_a_raise_awaits_payment_asks_for_nothing_and_refunds_all_paid(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    order_id = held_paid(card, live_api)
    amount = paid(order_id)
    copies_set(live_api, order_id, 5)
    [issue] = fetch(live_api, order_id)["status"]["issues"]
    assert issue["errorCode"] == "RequiresPaymentAuthorisation"  # the raise asked for

    order = cancelled(live_api, order_id)

    assert order["status"]["issues"] == []
    assert refunds(order_id) == [amount]
    assert shown(order) == [("Other", amount), ("Refund", -amount)]
    nothing_to_pay(card, order_id)


def test_an_amount_refunded_after_a_cost_was_lowered_shows_as_a_refund_charge(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    order_id = held_paid(card, live_api)
    copies_set(live_api, order_id, 5)
    assert order_payment_authorise(order=Order.objects.get(id=pk(order_id))).authorised
    five = paid(order_id)

    copies_set(live_api, order_id, 1)

    one = order_cost(Order.objects.get(id=pk(order_id)))
    assert one is not None and one < five
    assert sum(refunds(order_id), Decimal(0)) == five - one  # the raise's payment first
    assert shown(fetch(live_api, order_id)) == [("Other", five - one), ("Refund", one - five)]
    with transaction.atomic():  # charged later: the charges add up to the cost
        assert order_allocate(order=Order.objects.get(id=pk(order_id)))
    charges = shown(fetch(live_api, order_id))
    assert [kind for kind, _ in charges] == ["Other", "Refund", "Item", "Shipping"]
    assert sum((total for _, total in charges), Decimal(0)) == one
    assert order_cost(Order.objects.get(id=pk(order_id))) == one


def test_an_order_unpaid_for_a_raise_when_its_wait_ends_is_refunded_all_it_paid(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    order_id = held_paid(card, live_api)
    amount = paid(order_id)
    copies_set(live_api, order_id, 5)
    Order.objects.filter(id=pk(order_id)).update(held_until=None)
    assert order_submit_now(order=Order.objects.get(id=pk(order_id)))
    order_advance(order_id=pk(order_id))  # released: it waits for the raise
    assert Order.objects.get(id=pk(order_id)).stage == Stage.AWAITING_PAYMENT
    make_due(order_id)

    order_advance(order_id=pk(order_id))  # the wait is over

    order = fetch(live_api, order_id)
    assert order["status"]["stage"] == "Cancelled"
    assert order["status"]["issues"] == []
    assert refunds(order_id) == [amount]
    assert shown(order) == [("Other", amount), ("Refund", -amount)]


def test_staff_cancelling_the_last_shipment_of_a_paid_order_refunds_all_it_paid(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    order_id = order_create_via_api(live_api)
    assert order_payment_authorise(order=Order.objects.get(id=pk(order_id))).authorised
    with transaction.atomic():
        assert order_allocate(order=Order.objects.get(id=pk(order_id)))
    amount = paid(order_id)
    Shipment.objects.filter(order_id=pk(order_id)).update(
        submitted_at=timezone.now(), lab_order_reference=f"SIM-{order_id}"
    )

    assert shipment_cancel(shipment=Shipment.objects.get(order_id=pk(order_id))).successful

    shown_order = fetch(live_api, order_id)
    assert shown_order["status"]["stage"] == "Cancelled"
    assert refunds(order_id) == [amount]
    assert sum((total for _, total in shown(shown_order)), Decimal(0)) == 0


def test_the_migration_takes_the_payment_issue_off_orders_cancelled_before_it(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    waiting = order_create_via_api(live_api)
    order_id = order_create_via_api(live_api)
    cancelled(live_api, order_id)
    order = Order.objects.get(id=pk(order_id))
    payment_issue_write(order=order, amount=Decimal("711.38"), currency="GBP")  # as left before
    migration = importlib.import_module("orders.migrations.0020_cancelled_orders_ask_no_payment")

    migration.payment_issues_of_cancelled_orders_delete(django_apps, None)

    assert not OrderIssue.objects.filter(order=order).exists()
    assert [i["errorCode"] for i in fetch(live_api, waiting)["status"]["issues"]] == [
        "RequiresPaymentAuthorisation"
    ]


def test_a_payment_taken_while_the_order_was_cancelled_is_refunded_whole(
    card: CreatedMerchant, live_api: APIClient, settings: Any
) -> None:
    # The provider is asked with no lock held on the order: a cancel may land meanwhile.
    settings.PAYMENT_PROVIDER = "tests.support.dashboard.MeanwhilePaymentProvider"
    order_id = order_create_via_api(live_api)
    asked = order_cost(Order.objects.get(id=pk(order_id)))

    def meanwhile(reference: str) -> None:
        cancelled(live_api, reference)

    MeanwhilePaymentProvider.meanwhile = meanwhile
    try:
        result = order_payment_authorise(order=Order.objects.get(id=pk(order_id)))
    finally:
        MeanwhilePaymentProvider.meanwhile = None

    assert not result.authorised
    assert result.reference == f"meanwhile-{order_id}"
    assert "The order changed while it was being paid" in result.message
    assert paid(order_id) == asked
    assert refunds(order_id) == [asked]
    order = fetch(live_api, order_id)
    assert order["status"]["stage"] == "Cancelled" and order["status"]["issues"] == []
    assert Order.objects.get(id=pk(order_id)).payment_authorised_at is None
