"""Billing's reads: a merchant's invoices, an order's card payments and refunds."""

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


def order_payments_get(*, order: Order) -> tuple[list[OrderPayment], list[PaymentRefund]]:
    """The order's card payments, oldest first (none when it was not paid by card: the first
    pays its cost, a further one a raise after a change), and its refunds."""
    payments = list(OrderPayment.objects.filter(order=order).order_by("paid_at", "id"))
    if not payments:
        return [], []
    return payments, list(PaymentRefund.objects.filter(order=order).order_by("created", "id"))
