"""Card billing: a Live order waits for its payment; Sandbox and invoice merchants never do."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from merchants.models import BillingMode, Merchant, PauseMode
from merchants.services import CreatedMerchant
from orders.authorisation import order_payment_authorise
from orders.models import Order, OrderIssue, PipelineStep, Stage
from orders.payments import PaymentResult
from orders.pipeline.state_machine import order_advance, order_submit_now
from tests.support.dashboard import signed_in_client
from tests.support.orders import events_of, fetch, order_body, order_create_via_api, pk, quote_for

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]


def listed(api: APIClient, status: str) -> list[str]:
    response = api.get(f"/v4.0/orders?status={status}")
    assert response.status_code == 200, response.content
    return [o["id"] for o in response.json()["orders"]]


def test_a_card_merchants_live_order_awaits_payment_with_the_authorisation_details(
    card: CreatedMerchant, live_api: APIClient, settings: pytest.FixtureRequest
) -> None:
    settings.LIVE_BASE_URL = "https://live.print.test"  # type: ignore[attr-defined]
    order_id = order_create_via_api(live_api)

    order = fetch(live_api, order_id)
    quote = quote_for(live_api, order_body())
    total = Decimal(quote["costSummary"]["items"]["amount"]) + Decimal(
        quote["costSummary"]["shipping"]["amount"]
    )
    assert order["status"]["stage"] == "AwaitingPayment"
    [issue] = order["status"]["issues"]
    assert issue["errorCode"] == "RequiresPaymentAuthorisation"
    assert issue["objectId"] == order_id
    details = issue["authorisationDetails"]
    assert details["authorisationUrl"] == f"https://live.print.test/dashboard/pay/{order_id}"
    assert details["paymentDetails"]["currency"] == "GBP"
    assert Decimal(details["paymentDetails"]["amount"]) >= total  # tax included
    assert order["status"]["details"]["downloadAssets"] == "NotStarted"
    assert listed(live_api, "awaitingPayment") == [order_id]
    assert listed(live_api, "awaitingpayment") == [order_id]
    assert listed(live_api, "inProgress") == []
    stored = Order.objects.get(id=pk(order_id))
    assert stored.pipeline_step == PipelineStep.AWAITING_PAYMENT
    assert order_advance(order_id=stored.id) is None  # nothing is downloaded or allocated
    assert stored.shipments.count() == 0 and stored.charges.count() == 0


def test_the_create_response_carries_the_payment_issue_exactly_as_a_later_get(
    card: CreatedMerchant, live_api: APIClient, settings: pytest.FixtureRequest
) -> None:
    # decisions.md, wave 3: an integration reading only the create response learns it must pay.
    settings.LIVE_BASE_URL = "https://live.print.test"  # type: ignore[attr-defined]

    response = live_api.post("/v4.0/orders", order_body(), format="json")

    assert response.status_code == 200, response.content
    created = response.json()
    assert created["outcome"] == "Created"
    order_id = created["order"]["id"]
    [issue] = created["order"]["status"]["issues"]
    assert issue["errorCode"] == "RequiresPaymentAuthorisation"
    assert issue["authorisationDetails"]["authorisationUrl"] == (
        f"https://live.print.test/dashboard/pay/{order_id}"
    )
    assert created["order"]["status"] == fetch(live_api, order_id)["status"]


def test_sandbox_never_waits_for_payment(card: CreatedMerchant, sandbox_api: APIClient) -> None:
    order_id = order_create_via_api(sandbox_api)

    order = fetch(sandbox_api, order_id)
    assert order["status"]["stage"] == "InProgress"
    assert order["status"]["issues"] == []
    assert listed(sandbox_api, "awaitingPayment") == []


def test_an_invoice_merchant_never_waits_for_payment(
    merchant: CreatedMerchant, live_api: APIClient
) -> None:
    order_id = order_create_via_api(live_api)

    assert fetch(live_api, order_id)["status"]["stage"] == "InProgress"
    assert listed(live_api, "awaitingPayment") == []


def test_authorising_starts_fulfilment_with_a_stage_callback(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    order_id = order_create_via_api(live_api)
    order = Order.objects.get(id=pk(order_id))

    result = order_payment_authorise(order=order)

    assert result.authorised
    order.refresh_from_db()
    assert (order.stage, order.pipeline_step) == (Stage.IN_PROGRESS, PipelineStep.DOWNLOAD)
    assert order.payment_reference == f"test-{order_id}"
    assert fetch(live_api, order_id)["status"]["issues"] == []
    assert [e["type"] for e in events_of(order_id)] == [
        "com.service.order.status.stage.changed#InProgress"
    ]
    assert listed(live_api, "awaitingPayment") == []


def test_a_declined_payment_changes_nothing(
    card: CreatedMerchant, live_api: APIClient, settings: pytest.FixtureRequest
) -> None:
    settings.PAYMENT_PROVIDER = "tests.support.dashboard.DecliningPaymentProvider"  # type: ignore[attr-defined]
    order_id = order_create_via_api(live_api)

    result = order_payment_authorise(order=Order.objects.get(id=pk(order_id)))

    assert result == PaymentResult(False, message="Card declined.")
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"
    assert OrderIssue.objects.filter(order_id=pk(order_id)).count() == 1


def test_an_order_unpaid_for_the_wait_is_cancelled_by_the_pipeline(
    card: CreatedMerchant, live_api: APIClient, settings: pytest.FixtureRequest
) -> None:
    settings.PAYMENT_WAIT_DAYS = 14  # type: ignore[attr-defined]
    order_id = order_create_via_api(live_api)
    order = Order.objects.get(id=pk(order_id))
    assert order.due_at is not None
    assert abs(order.due_at - (order.created + timedelta(days=14))) < timedelta(seconds=5)
    assert order_advance(order_id=order.id) is None  # not due yet: still waiting

    Order.objects.filter(id=order.id).update(due_at=timezone.now())
    order_advance(order_id=order.id)

    shown = fetch(live_api, order_id)
    assert shown["status"]["stage"] == "Cancelled"
    assert shown["status"]["issues"] == []
    assert events_of(order_id)[-1]["type"] == "com.service.order.status.stage.changed#Cancelled"


def test_a_held_card_order_goes_on_to_await_payment_when_released(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    card.merchant.environments.filter(kind="Live").update(pause_mode=PauseMode.INDEFINITE)
    order_id = order_create_via_api(live_api, outcome="OnHold")
    order = Order.objects.get(id=pk(order_id))
    assert listed(live_api, "draft") == [order_id]

    assert order_submit_now(order=order)
    order_advance(order_id=order.id)

    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"
    assert listed(live_api, "awaitingPayment") == [order_id]


def test_an_order_awaiting_payment_can_be_cancelled_through_the_api(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    order_id = order_create_via_api(live_api)

    response = live_api.post(f"/v4.0/orders/{order_id}/actions/cancel")

    assert response.status_code == 200
    assert response.json()["outcome"] == "Cancelled"


def test_the_pay_page_authorises_for_the_merchant_only(
    card: CreatedMerchant, live_api: APIClient, other_merchant: CreatedMerchant
) -> None:
    order_id = order_create_via_api(live_api)
    stranger = signed_in_client(other_merchant.merchant)

    assert stranger.get(f"/dashboard/pay/{order_id}").status_code == 404
    assert stranger.post(f"/dashboard/pay/{order_id}").status_code == 404
    assert fetch(live_api, order_id)["status"]["stage"] == "AwaitingPayment"

    owner = signed_in_client(card.merchant)
    page = owner.get(f"/dashboard/pay/{order_id}")
    assert page.status_code == 200
    issue = OrderIssue.objects.get(order_id=pk(order_id))
    assert f"{issue.payment_amount} GBP" in page.content.decode()
    paid = owner.post(f"/dashboard/pay/{order_id}")
    assert paid.status_code == 302
    assert fetch(live_api, order_id)["status"]["stage"] == "InProgress"


def test_the_pay_page_asks_a_stranger_to_sign_in(
    card: CreatedMerchant, live_api: APIClient
) -> None:

    order_id = order_create_via_api(live_api)

    response = Client().get(f"/dashboard/pay/{order_id}")

    assert response.status_code == 302
    assert response["Location"] == f"/dashboard/login?next=/dashboard/pay/{order_id}"


def test_create_merchant_sets_the_billing_mode() -> None:
    call_command("create_merchant", "--name", "Card Shop", "--billing", "card")
    call_command("create_merchant", "--name", "Invoice Shop")

    assert Merchant.objects.get(name="Card Shop").billing_mode == BillingMode.CARD
    assert Merchant.objects.get(name="Invoice Shop").billing_mode == BillingMode.INVOICE
