"""The PDFs merchants download: a monthly invoice and a receipt per paid order (fpdf2, its
built-in Helvetica: text outside Latin-1 is shown with "?")."""

from collections.abc import Sequence
from decimal import Decimal

from fpdf import FPDF

from billing.models import Invoice
from orders.models import Charge, ChargeType, Order, OrderPayment, PaymentRefund
from orders.payments import payment_provider_is_test

SERVICE = "Print API"
TEST_PAYMENT_NOTICE = "Test payment: no card is charged"


def _text(value: object) -> str:
    return str(value).encode("latin-1", "replace").decode("latin-1")


class _Document(FPDF):
    def __init__(self, title: str) -> None:
        super().__init__(format="A4")
        self.set_title(_text(title))
        self.set_author(SERVICE)
        self.add_page()
        self.set_font("Helvetica", "B", 18)
        self.cell(0, 12, _text(title), new_x="LMARGIN", new_y="NEXT")
        self.set_font("Helvetica", size=10)

    def line_of(self, text: str, *, bold: bool = False) -> None:
        self.set_font("Helvetica", "B" if bold else "", 10)
        self.cell(0, 6, _text(text), new_x="LMARGIN", new_y="NEXT")

    def row(self, cells: Sequence[str], widths: Sequence[int], *, bold: bool = False) -> None:
        self.set_font("Helvetica", "B" if bold else "", 9)
        for index, (cell, width) in enumerate(zip(cells, widths, strict=True)):
            align = "R" if index >= len(cells) - 3 else "L"
            self.cell(width, 6, _text(cell), border="B", align=align)
        self.ln()

    def pdf(self) -> bytes:
        return bytes(self.output())


def _money(amount: Decimal, currency: str) -> str:
    return f"{amount.quantize(Decimal('0.01'))} {currency}"


def invoice_pdf(*, invoice: Invoice, charges: Sequence[Charge]) -> bytes:
    """The invoice with one line per charge it numbers (refunds as negative lines)."""
    document = _Document(f"Invoice {invoice.number}")
    merchant = invoice.merchant
    document.line_of(f"From: {SERVICE}")
    document.line_of(f"To: {merchant.name} <{merchant.email}>")
    document.line_of(
        f"Period: {invoice.period_start:%Y-%m-%d} to {invoice.period_end:%Y-%m-%d} (exclusive)"
    )
    document.line_of(f"Issued: {invoice.issued:%Y-%m-%d}")
    document.ln(4)
    widths = (30, 36, 34, 22, 24, 20, 24)
    document.row(
        ["Date", "Order", "Reference", "Charge", "Cost", "Tax", "Total"], widths, bold=True
    )
    for charge in charges:
        document.row(
            [
                f"{charge.created:%Y-%m-%d}",
                charge.order.public_id,
                (charge.order.merchant_reference or "")[:18],
                charge.charge_type,
                f"{charge.total_cost:.2f}",
                f"{charge.total_tax:.2f}",
                f"{charge.total_cost + charge.total_tax:.2f}",
            ],
            widths,
        )
    document.ln(4)
    document.line_of(f"Net: {_money(invoice.total_cost, invoice.currency)}")
    document.line_of(f"Tax: {_money(invoice.total_tax, invoice.currency)}")
    document.line_of(f"Total due: {_money(invoice.total, invoice.currency)}", bold=True)
    return document.pdf()


def _charge_lines(document: _Document, order: Order) -> None:
    """The order's charges by kind: its items (one line per charged item), shipping, other
    charges, tax, refunds and the total (items + shipping + other + tax - refunds)."""
    charges = list(order.charges.all())
    if not charges:
        return
    currency = charges[0].currency
    items = {item.id: item for item in order.items.all()}
    sums = {kind: Decimal(0) for kind in ChargeType.values}
    tax = refunds = Decimal(0)
    document.ln(4)
    for charge in charges:
        if charge.charge_type == ChargeType.REFUND:
            refunds += charge.total_cost + charge.total_tax
            continue
        sums[charge.charge_type] += charge.total_cost
        tax += charge.total_tax
        if charge.charge_type == ChargeType.ITEM:
            for line in charge.items.all():
                item = items.get(line.item_id) if line.item_id else None
                name = f"{item.copies} x {item.sku}" if item else "Item"
                document.line_of(f"  {name}: {_money(line.cost, currency)}")
    document.line_of(f"Items: {_money(sums[ChargeType.ITEM], currency)}")
    document.line_of(f"Shipping: {_money(sums[ChargeType.SHIPPING], currency)}")
    if sums[ChargeType.OTHER]:
        document.line_of(f"Other: {_money(sums[ChargeType.OTHER], currency)}")
    document.line_of(f"Tax: {_money(tax, currency)}")
    if refunds:
        document.line_of(f"Refunds: {_money(refunds, currency)}")
    total = sum(sums.values(), Decimal(0)) + tax + refunds
    document.line_of(f"Total: {_money(total, currency)}", bold=True)


def receipt_pdf(
    *, order: Order, payments: Sequence[OrderPayment], refunds: Sequence[PaymentRefund]
) -> bytes:
    """Every card payment of the order and every refund of it, each with its date and amount:
    a refund sent with the day it was sent, one on its way or refused by the provider with the
    day it was made; what was paid, refunded and is still to be refunded, and the net."""
    document = _Document(f"Receipt for order {order.public_id}")
    merchant = order.environment.merchant
    document.line_of(f"From: {SERVICE}")
    document.line_of(f"To: {merchant.name} <{merchant.email}>")
    if order.merchant_reference:
        document.line_of(f"Your reference: {order.merchant_reference}")
    test_payment = payment_provider_is_test()
    if test_payment:
        document.line_of(f"{TEST_PAYMENT_NOTICE}.", bold=True)
    _charge_lines(document, order)
    document.ln(4)
    currency = payments[0].currency
    paid = Decimal(0)
    for payment in payments:
        paid += payment.amount
        document.line_of(
            f"Paid by {'test payment' if test_payment else 'card'} on "
            f"{payment.paid_at:%Y-%m-%d %H:%M} UTC: "
            f"{_money(payment.amount, payment.currency)} ({payment.reference})",
            bold=True,
        )
    refunded = pending = Decimal(0)
    for refund in refunds:
        amount = _money(refund.amount, refund.currency)
        if refund.sent_at is not None:
            refunded += refund.amount
            document.line_of(
                f"Refunded on {refund.sent_at:%Y-%m-%d %H:%M} UTC: {amount} ({refund.reference})"
            )
        elif refund.due_at is not None:
            pending += refund.amount
            document.line_of(
                f"Refund made on {refund.created:%Y-%m-%d %H:%M} UTC: {amount} (on its way)"
            )
        else:
            document.line_of(
                f"Refund made on {refund.created:%Y-%m-%d %H:%M} UTC: {amount} (refused by the "
                f"payment provider: {refund.failure or 'no reason given'}; our staff follow it up)"
            )
    document.ln(2)
    document.line_of(f"Paid: {_money(paid, currency)}")
    document.line_of(f"Refunded: {_money(refunded, currency)}")
    if pending:
        document.line_of(f"To be refunded: {_money(pending, currency)}")
    document.line_of(f"Net paid: {_money(paid - refunded, currency)}", bold=True)
    return document.pdf()
