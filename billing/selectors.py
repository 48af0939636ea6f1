"""Billing's reads: a merchant's invoices, an order's card payment and refunds."""

from django.db.models import QuerySet

from billing.models import Invoice
from merchants.models import Merchant
from orders.models import Order, OrderPayment, PaymentRefund


def merchant_invoices(*, merchant: Merchant) -> QuerySet[Invoice]:
    return Invoice.objects.filter(merchant=merchant).order_by("-period_start", "-id")


def merchant_invoice_get(*, merchant: Merchant, number: str) -> Invoice | None:
    return (
        Invoice.objects.filter(merchant=merchant, number=number).select_related("merchant").first()
    )


def order_payment_get(*, order: Order) -> tuple[OrderPayment | None, list[PaymentRefund]]:
    """The order's card payment (None when it was not paid by card) and its refunds."""
    payment = OrderPayment.objects.filter(order=order).first()
    if payment is None:
        return None, []
    return payment, list(PaymentRefund.objects.filter(order=order).order_by("created", "id"))
