"""What a paid card order's payments cover against what it costs, kept equal.

A card order is never produced with charges above what its merchant authorised: a change that
raises its cost (a held order edited, a shipping method or destination changed) asks for the
difference with a new ``RequiresPaymentAuthorisation`` issue, and the order goes to no lab
until that is authorised (the submit step waits for it); a change that lowers its cost refunds
the difference through the payment provider. What the payments cover is what was paid
(``OrderPayment``: the first payment and each difference paid) less what was refunded
(``PaymentRefund``). Callers price the order (``orders.pipeline.steps.allocate.order_cost``);
this module compares and records. A cancelled order asks for nothing and keeps nothing it was
paid (``order_cancelled_settle``).
"""

from collections.abc import Sequence
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from labs.allocation import PlannedShipment
from orders.charges import (
    payment_lowered_refund_write,
    payment_rest_refund_write,
    payments_covered,
    refund_write,
    shipping_charged,
)
from orders.models import Order, Shipment
from orders.payments import payment_issue, payment_issue_write, payment_sessions_expire_write


def payment_shortfall(*, order: Order, cost: Decimal | None) -> Decimal:
    """How much ``cost`` exceeds what the order's card payments cover (zero for orders not
    paid by card, and for those whose first payment is still awaited: their issue already asks
    for the whole cost)."""
    covered = payments_covered(order=order)
    if covered is None or cost is None:
        return Decimal(0)
    return max(cost - covered, Decimal(0))


def payment_raise_refusal(
    *, order: Order, cost: Decimal | None, planned: Sequence[tuple[Shipment, PlannedShipment]]
) -> str | None:
    """Why shipments already at their labs cannot take the shipping ``planned`` for them: it
    would raise the cost (now ``cost``) of a card order beyond what its merchant authorised (a
    lab order cannot wait for a payment); None when it would not."""
    extra = Decimal(0)
    for shipment, plan in planned:
        charged_cost, charged_tax = shipping_charged(order=order, shipment=shipment)
        extra += plan.shipping_cost + plan.shipping_tax - charged_cost - charged_tax
    if cost is None or extra <= 0 or not payment_shortfall(order=order, cost=cost + extra):
        return None
    return (
        f"The change would raise the order's cost by {extra:.2f} {order.currency}, beyond the "
        f"{payments_covered(order=order):.2f} {order.currency} authorised by card for it; "
        "it was not made."
    )


@transaction.atomic
def order_payment_settle(*, order: Order, cost: Decimal | None) -> Decimal:
    """After the cost of ``order`` (locked by the caller) changed to ``cost``: a card order
    paid for before asks for the difference when it went up (its ``RequiresPaymentAuthorisation``
    issue with ``paymentDetails.amount`` the difference; nothing more goes to a lab until it is
    authorised) and is refunded the difference when it went down. An order whose first
    payment is awaited has its issue priced again. Payment pages opened for another amount
    than the one asked now are expired at the provider. Once its payments cover the cost (a
    part-paid order whose cost fell), the order is authorised (``payment_authorised_at``),
    as when a payment covers it (``orders.authorisation.order_payment_start``). Returns what is
    still to authorise (zero when nothing is, or the order cannot be priced)."""
    issue = payment_issue(order)
    covered = payments_covered(order=order)
    if covered is None:
        if issue is None:
            return Decimal(0)
        payment_issue_write(order=order, amount=cost, currency=order.currency)
        payment_sessions_expire_write(order=order, keep_amount=cost)
        return cost or Decimal(0)
    if cost is None:
        return Decimal(0)
    difference = cost - covered
    if difference > 0:
        payment_issue_write(order=order, amount=difference, currency=order.currency)
        payment_sessions_expire_write(order=order, keep_amount=difference)
        return difference
    if issue is not None:
        issue.delete()
    payment_sessions_expire_write(order=order)
    if order.payment_authorised_at is None:  # part paid before: the payments cover it now
        order.payment_authorised_at = timezone.now()
        order.save(update_fields=["payment_authorised_at"])
    if difference < 0:
        payment_lowered_refund_write(order=order, amount=-difference)
    return Decimal(0)


def order_cancelled_settle(*, order: Order) -> None:
    """For an order (locked by the caller) cancelled now, in the cancel's transaction, by
    whatever cancelled it (the merchant, staff, the lab, an unpaid payment wait): its
    ``RequiresPaymentAuthorisation`` issue goes (a cancelled order asks for no payment, first
    or raise), what it was charged and not refunded yet is credited by a Refund charge, and
    every amount its card payments cover goes back to the card (``PaymentRefund``), the part
    no charge accounts for shown by an Other charge and its Refund charge."""
    issue = payment_issue(order)
    if issue is not None:
        issue.delete()
    refund_write(order=order)
    payment_rest_refund_write(order=order)
