"""Monthly invoices of invoice-billed merchants, and receipts of orders paid by card."""

import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import transaction
from django.utils import timezone
from pypdf import PdfReader
from rest_framework.test import APIClient

from billing.models import Invoice
from billing.services import merchant_invoices_issue, previous_month
from billing.tasks import invoices_issue_task
from merchants.models import BillingMode, Merchant, PauseMode
from merchants.services import CreatedMerchant
from orders.authorisation import (
    order_payment_amount,
    order_payment_authorise,
    payment_refund_send,
)
from orders.editing import order_held_update
from orders.models import Charge, Order, OrderPayment, PaymentRefund
from orders.pipeline.steps.allocate import order_allocate
from tests.support.dashboard import signed_in_client
from tests.support.orders import fetch, order_create_via_api, pk

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]


def allocated(api: APIClient) -> str:
    order_id = order_create_via_api(api)
    with transaction.atomic():
        assert order_allocate(order=Order.objects.get(id=pk(order_id)))
    return order_id


def last_month() -> None:
    """Every charge made so far, as if made last month."""
    Charge.objects.update(created=timezone.now() - timedelta(days=35))


def pdf_text(content: bytes) -> str:
    assert content.startswith(b"%PDF-")
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(content)).pages)


def test_the_monthly_task_numbers_last_months_live_charges_on_one_invoice(
    merchant: CreatedMerchant, live_api: APIClient, sandbox_api: APIClient
) -> None:
    first, second = allocated(live_api), allocated(live_api)
    practice = allocated(sandbox_api)
    last_month()
    this_month = allocated(live_api)  # made now: next month's invoice

    assert invoices_issue_task() == 1

    invoice = Invoice.objects.get()
    period = previous_month(timezone.now().date())
    assert invoice.number == f"INV-{period:%Y%m}-{invoice.id:06d}"
    assert (invoice.merchant_id, invoice.period_start, invoice.currency) == (
        merchant.merchant.id, period, "GBP",
    )  # fmt: skip
    live = list(Charge.objects.filter(order_id__in=[pk(first), pk(second)]))
    assert invoice.charge_count == len(live) == 4  # items and shipping of each
    assert invoice.total_cost == sum((c.total_cost for c in live), Decimal(0))
    assert invoice.total_tax == sum((c.total_tax for c in live), Decimal(0))
    for order_id in (first, second):
        charges = fetch(live_api, order_id)["charges"]
        assert {c["serviceInvoiceNumber"] for c in charges} == {invoice.number}
    for order_id, api in ((practice, sandbox_api), (this_month, live_api)):
        assert {c["serviceInvoiceNumber"] for c in fetch(api, order_id)["charges"]} == {None}

    assert invoices_issue_task() == 0  # a month is invoiced once
    assert Invoice.objects.count() == 1


def test_card_merchants_get_no_invoice(card: CreatedMerchant, live_api: APIClient) -> None:
    order_id = order_create_via_api(live_api)
    order_payment_authorise(order=Order.objects.get(id=pk(order_id)))
    with transaction.atomic():
        assert order_allocate(order=Order.objects.get(id=pk(order_id)))
    last_month()

    assert invoices_issue_task() == 0
    assert not Charge.objects.filter(service_invoice_number__isnull=False).exists()


def test_what_a_card_paid_is_never_invoiced_before_or_after_a_switch_to_invoice(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    paid_by_card = order_create_via_api(live_api)
    order_payment_authorise(order=Order.objects.get(id=pk(paid_by_card)))
    with transaction.atomic():
        assert order_allocate(order=Order.objects.get(id=pk(paid_by_card)))
    refunded = order_create_via_api(live_api)
    order_payment_authorise(order=Order.objects.get(id=pk(refunded)))
    assert live_api.post(f"/v4.0/orders/{refunded}/actions/cancel").json()["outcome"] == "Cancelled"
    last_month()
    period = previous_month(timezone.now().date())
    assert merchant_invoices_issue(merchant=card.merchant, period_start=period) == []

    Merchant.objects.filter(pk=card.merchant.pk).update(billing_mode=BillingMode.INVOICE)
    on_account = allocated(live_api)  # no payment asked for now
    last_month()

    assert invoices_issue_task() == 1

    invoice = Invoice.objects.get()
    invoiced = list(Charge.objects.filter(order_id=pk(on_account)))
    assert invoice.charge_count == len(invoiced) == 2
    assert invoice.total == sum((c.total_cost + c.total_tax for c in invoiced), Decimal(0))
    for order_id in (paid_by_card, refunded):
        assert fetch(live_api, order_id)["charges"]  # charged (and refunded), by card
        assert {c["serviceInvoiceNumber"] for c in fetch(live_api, order_id)["charges"]} == {None}
    assert {c["serviceInvoiceNumber"] for c in fetch(live_api, on_account)["charges"]} == {
        invoice.number
    }


def test_the_dashboard_lists_the_invoices_and_serves_each_as_a_pdf_to_its_merchant_only(
    merchant: CreatedMerchant, other_merchant: CreatedMerchant, live_api: APIClient
) -> None:
    order_id = allocated(live_api)
    last_month()
    invoices_issue_task()
    invoice = Invoice.objects.get()
    owner = signed_in_client(merchant.merchant)

    page = owner.get("/dashboard/invoices").content.decode()
    download = owner.get(f"/dashboard/invoices/{invoice.number}.pdf")

    assert invoice.number in page and f"{invoice.total} GBP" in page
    assert "by monthly invoice" in page
    assert download.status_code == 200
    assert download["Content-Type"] == "application/pdf"
    assert download["Content-Disposition"] == f'attachment; filename="{invoice.number}.pdf"'
    text = pdf_text(download.content)
    assert f"Invoice {invoice.number}" in text
    assert order_id in text and f"Total due: {invoice.total} GBP" in text
    stranger = signed_in_client(other_merchant.merchant)
    assert stranger.get(f"/dashboard/invoices/{invoice.number}.pdf").status_code == 404
    assert invoice.number not in stranger.get("/dashboard/invoices").content.decode()


def test_an_order_paid_by_card_has_a_receipt(
    card: CreatedMerchant, other_merchant: CreatedMerchant, live_api: APIClient
) -> None:
    order_id = order_create_via_api(live_api)
    unpaid = order_create_via_api(live_api)
    order_payment_authorise(order=Order.objects.get(id=pk(order_id)))
    paid = Order.objects.get(id=pk(order_id)).payments.get()
    owner = signed_in_client(card.merchant)

    receipt = owner.get(f"/dashboard/orders/{order_id}/receipt.pdf")

    assert receipt.status_code == 200 and receipt["Content-Type"] == "application/pdf"
    text = pdf_text(receipt.content)
    assert f"Receipt for order {order_id}" in text
    assert f"{paid.amount} GBP" in text and paid.reference in text
    assert owner.get(f"/dashboard/orders/{unpaid}/receipt.pdf").status_code == 404
    stranger = signed_in_client(other_merchant.merchant)
    assert stranger.get(f"/dashboard/orders/{order_id}/receipt.pdf").status_code == 404
    assert "by card" in owner.get("/dashboard/invoices").content.decode()


def test_the_receipt_lists_every_payment_and_every_refund_with_its_date_and_amount(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    card.merchant.environments.filter(kind="Live").update(pause_mode=PauseMode.INDEFINITE)
    order_id = order_create_via_api(live_api, outcome="OnHold")

    def copies(number: int) -> None:
        order = Order.objects.get(id=pk(order_id))
        order_held_update(
            order=order,
            recipient=fetch(live_api, order_id)["recipient"],
            shipping_method=order.shipping_method,
            copies=[number],
            metadata={},
        )
        if order_payment_amount(order=order)[0]:
            assert order_payment_authorise(order=Order.objects.get(id=pk(order_id))).authorised

    copies(2)  # paid for two
    copies(5)  # the raise paid for
    copies(3)  # lowered: refunded from the raise's payment
    lowered = PaymentRefund.objects.get(order_id=pk(order_id))
    payment_refund_send(refund_id=lowered.id)
    assert live_api.post(f"/v4.0/orders/{order_id}/actions/cancel").json()["outcome"] == "Cancelled"
    payments = list(OrderPayment.objects.filter(order_id=pk(order_id)).order_by("id"))
    refunds = list(PaymentRefund.objects.filter(order_id=pk(order_id)).order_by("id"))
    assert len(payments) == 2 and len(refunds) == 3  # the rest from both payments
    lowered.refresh_from_db()

    text = pdf_text(
        signed_in_client(card.merchant).get(f"/dashboard/orders/{order_id}/receipt.pdf").content
    )

    # The built-in test provider took these: the receipt says no card was charged.
    assert "Test payment: no card is charged." in text
    for payment in payments:
        line = f"{payment.paid_at:%Y-%m-%d %H:%M} UTC: {payment.amount} GBP"
        assert f"Paid by test payment on {line}" in text
    assert lowered.sent_at is not None
    assert f"Refunded on {lowered.sent_at:%Y-%m-%d %H:%M} UTC: {lowered.amount} GBP" in text
    for pending in refunds[1:]:
        assert (
            f"Refund made on {pending.created:%Y-%m-%d %H:%M} UTC: {pending.amount} GBP "
            "(on its way)"
        ) in text
    paid = sum((p.amount for p in payments), Decimal(0))
    assert f"Paid: {paid} GBP" in text
    assert f"Refunded: {lowered.amount} GBP" in text
    assert f"To be refunded: {refunds[1].amount + refunds[2].amount} GBP" in text
    assert paid == sum((r.amount for r in refunds), Decimal(0))  # all of it goes back
