"""Charges of an order: Item and Shipping from the allocation plan, Refund on cancellation, and
a Shipping adjustment when a shipment's method changes after allocation; for an order paid by
card, the refunds to send back through the payment provider.

The amounts are exactly the plan's (the same engine prices quotes), so a quote for a basket
equals the charges of an order for it, to the cent. Sandbox orders show charges but are never
billed (no invoice number is ever set for them).

The charges of an order add up to what it costs (``order_cost``), and every refund given back
to a card shows among them as a Refund charge: a refund of charges (a cancelled shipment or
order) is the Refund charge crediting their lines; money paid by card that no charge of the
order accounts for any more (a cost lowered after it was paid, an order cancelled before it was
charged) shows as an Other charge of that amount (the part of the payment beyond the cost, one
line with no item or shipment) beside the Refund charge that gives it back, the two adding up
to zero. An order paid by card is never invoiced (``charges_uninvoiced``): its payments settle
all of its charges, whatever its merchant's billing mode later becomes.
"""

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal

from django.db import transaction
from django.db.models import Exists, OuterRef, Sum

from common.tasks import task_enqueue_on_commit
from labs.allocation import AllocationPlan
from merchants.models import EnvironmentKind
from orders.document import orders_documents_write
from orders.models import (
    Charge,
    ChargeItem,
    ChargeType,
    Order,
    OrderItem,
    OrderPayment,
    PaymentRefund,
    Shipment,
)

PAYMENT_REFUND_SEND_TASK = "orders.tasks.payment_refund_send_task"


def charges_write(
    *,
    order: Order,
    plan: AllocationPlan,
    items: dict[str, OrderItem],
    shipments: dict[str, Shipment],
) -> None:
    """Write the Item and Shipping charges of an order allocated just now (inside the
    allocation's transaction: an order has them exactly when it has shipments); ``totalCost`` is
    the sum of the lines, tax apart. ``items`` and ``shipments`` are keyed as in the plan (item
    key, lab code)."""
    assert transaction.get_connection().in_atomic_block, "write charges with the shipments"
    item_lines = [
        ChargeItem(item=items[line.key], cost=line.total_cost, tax=line.tax)
        for line in plan.item_lines
    ]
    shipping_lines = [
        ChargeItem(shipment=shipments[p.lab_code], cost=p.shipping_cost, tax=p.shipping_tax)
        for p in plan.shipments
    ]
    _charges_create(
        order=order,
        currency=plan.currency,
        charges=[(ChargeType.ITEM, item_lines), (ChargeType.SHIPPING, shipping_lines)],
    )


def _charges_create(
    *, order: Order, currency: str, charges: list[tuple[str, list[ChargeItem]]]
) -> list[Charge]:
    """Charges (of each type, with its lines) whose totals are the sums of their lines (the
    plan's totals are such sums too), created together with their lines in the order given
    (their ``created`` follows it)."""
    made = []
    for charge_type, lines in charges:
        charge = Charge(
            order=order,
            charge_type=charge_type,
            currency=currency,
            total_cost=sum((line.cost for line in lines), Decimal(0)),
            total_tax=sum((line.tax for line in lines), Decimal(0)),
        )
        for line in lines:
            line.charge = charge
            line.charge_type = charge_type
        made.append(charge)
    Charge.objects.bulk_create(made)
    ChargeItem.objects.bulk_create([line for _, lines in charges for line in lines])
    return made


def _charge_create(
    *, order: Order, charge_type: str, currency: str, lines: list[ChargeItem]
) -> Charge:
    (charge,) = _charges_create(order=order, currency=currency, charges=[(charge_type, lines)])
    return charge


@transaction.atomic
def refund_write(*, order: Order, shipments: Sequence[Shipment] | None = None) -> Charge | None:
    """A Refund charge crediting what was charged for ``shipments`` (all of the order when
    None): their items and their shipping. Lines refunded before are not refunded again;
    None when nothing is left to refund."""
    ids = None if shipments is None else {s.id for s in shipments}
    charged = list(
        ChargeItem.objects.filter(
            charge__order=order, charge__charge_type__in=[ChargeType.ITEM, ChargeType.SHIPPING]
        ).select_related("charge", "item")
    )
    refunded = set(
        ChargeItem.objects.filter(
            charge__order=order, charge__charge_type=ChargeType.REFUND
        ).values_list("item_id", "shipment_id")
    )
    lines = [
        line
        for line in charged
        if (line.item_id, line.shipment_id) not in refunded
        and (ids is None or line.shipment_id in ids or (line.item and line.item.shipment_id in ids))
    ]
    if not lines:
        return None
    refund = _charge_create(
        order=order,
        charge_type=ChargeType.REFUND,
        currency=lines[0].charge.currency,
        lines=[
            ChargeItem(
                item_id=line.item_id, shipment_id=line.shipment_id, cost=-line.cost, tax=-line.tax
            )
            for line in lines
        ],
    )
    _payment_refund_write(
        order=order,
        amount=-(refund.total_cost + refund.total_tax),
        key=refund.public_id,
        charge=refund,
    )
    return refund


def payment_rest_refund_write(*, order: Order) -> PaymentRefund | None:
    """When a paid order is cancelled: what was paid and not refunded yet goes back (all of it
    when the order was cancelled before any charge was written), shown by an Other charge and
    its Refund charge."""
    return _payment_excess_refund_write(
        order=order, amount=None, key=f"{order.public_id}-cancelled"
    )


def payment_lowered_refund_write(*, order: Order, amount: Decimal) -> PaymentRefund | None:
    """When a change lowered a paid order's cost, or a payment paid more than the order asked:
    ``amount`` of what was paid goes back, shown by an Other charge and its Refund charge."""
    number = PaymentRefund.objects.filter(order=order).count() + 1
    return _payment_excess_refund_write(
        order=order, amount=amount, key=f"{order.public_id}-lowered-{number}"
    )


def _payment_excess_refund_write(
    *, order: Order, amount: Decimal | None, key: str
) -> PaymentRefund | None:
    """A refund of card money no charge of the order accounts for (``amount``, None: all that
    is left), and the two charges that show it: Other, the part of the payment beyond the cost,
    and Refund, crediting it (they add up to zero, so the charges still add up to the cost).
    The first refund made (linked to the Refund charge), or None when nothing is refunded."""
    made = _payment_refunds_write(order=order, amount=amount, key=key)
    if not made:
        return None
    total = sum((refund.amount for refund in made), Decimal(0))
    _, refund_charge = _charges_create(
        order=order,
        currency=made[0].currency,
        charges=[
            (ChargeType.OTHER, [ChargeItem(cost=total)]),
            (ChargeType.REFUND, [ChargeItem(cost=-total)]),
        ],
    )
    PaymentRefund.objects.filter(id=made[0].id).update(charge=refund_charge)
    made[0].charge = refund_charge
    return made[0]


def payment_unasked_refund_write(
    *, order: Order, payment: OrderPayment, amount: Decimal
) -> PaymentRefund | None:
    """A payment the order did not ask for (all of it, or what it paid beyond what was asked:
    a stale payment page, a second one paid in another tab): ``amount`` of it goes back, drawn
    from it (the latest payment), shown by an Other charge and its Refund charge."""
    return _payment_excess_refund_write(
        order=order, amount=amount, key=f"{order.public_id}-unasked-{payment.id}"
    )


def payments_covered(*, order: Order) -> Decimal | None:
    """What the order's card payments cover now: what was paid less what was refunded (or is
    being refunded); None when nothing was paid."""
    paid = OrderPayment.objects.filter(order=order).aggregate(total=Sum("amount"))["total"]
    if paid is None:
        return None
    refunded = PaymentRefund.objects.filter(order=order).aggregate(total=Sum("amount"))["total"]
    return Decimal(paid) - Decimal(refunded or 0)


def _payment_refund_write(
    *, order: Order, amount: Decimal | None, key: str, charge: Charge | None = None
) -> PaymentRefund | None:
    """As ``_payment_refunds_write``: the first refund made, or None."""
    made = _payment_refunds_write(order=order, amount=amount, key=key, charge=charge)
    return made[0] if made else None


def _payment_refunds_write(
    *, order: Order, amount: Decimal | None, key: str, charge: Charge | None = None
) -> list[PaymentRefund]:
    """Refunds through the payment provider of ``amount`` (None: the rest), at most what was
    paid and not refunded yet; sent after commit. An order paid more than once (a raise paid
    for) is refunded from its latest payment first, one refund per payment drawn on (a
    provider refunds a payment at most its amount); the first carries ``charge``. None made
    when the order was not paid by card or nothing is left."""
    if not order.payment_reference:
        return []
    payments = list(OrderPayment.objects.filter(order=order).order_by("paid_at", "id"))
    if not payments:
        return []
    refunded: dict[int | None, Decimal] = {
        payment_id: total
        for payment_id, total in PaymentRefund.objects.filter(order=order)
        .values("payment_id")
        .annotate(total=Sum("amount"))
        .values_list("payment_id", "total")
    }
    # Refunds written before payments could be several drew on the first.
    left = {p.id: p.amount - refunded.get(p.id, Decimal(0)) for p in payments}
    left[payments[0].id] -= refunded.get(None, Decimal(0))
    total_left = sum(left.values(), Decimal(0))
    wanted = total_left if amount is None else min(amount, total_left)
    made: list[PaymentRefund] = []
    for payment in reversed(payments):
        part = min(left[payment.id], wanted - sum((r.amount for r in made), Decimal(0)))
        if part <= 0:
            continue
        made.append(
            PaymentRefund.objects.create(
                order=order,
                payment=payment,
                charge=None if made else charge,
                key=f"refund-{key}" if not made else f"refund-{key}-{payment.id}",
                amount=part,
                currency=payment.currency,
            )
        )
    for refund in made:
        task_enqueue_on_commit(PAYMENT_REFUND_SEND_TASK, refund.id)
    return made


def shipping_charged(*, order: Order, shipment: Shipment) -> tuple[Decimal, Decimal]:
    """What the shipment's shipping is charged now, (cost, tax): its Shipping lines added up."""
    charged = ChargeItem.objects.filter(
        charge__order=order, charge__charge_type=ChargeType.SHIPPING, shipment=shipment
    ).aggregate(cost=Sum("cost"), tax=Sum("tax"))
    return charged["cost"] or Decimal(0), charged["tax"] or Decimal(0)


@transaction.atomic
def shipping_adjustment_write(
    *, order: Order, repriced: Sequence[tuple[Shipment, Decimal, Decimal]]
) -> Charge | None:
    """A Shipping charge that brings what each shipment's shipping was charged to its new
    price: ``repriced`` holds (shipment, cost, tax) as the engine priced them now. One line per
    shipment whose price changed (positive: more to pay; negative: a credit); None when none
    did. A later refund of the shipment refunds the adjusted total (``refund_write`` takes
    these lines too)."""
    lines = []
    for shipment, cost, tax in repriced:
        charged_cost, charged_tax = shipping_charged(order=order, shipment=shipment)
        extra_cost = cost - charged_cost
        extra_tax = tax - charged_tax
        if extra_cost or extra_tax:
            lines.append(ChargeItem(shipment=shipment, cost=extra_cost, tax=extra_tax))
    if not lines:
        return None
    return _charge_create(
        order=order, charge_type=ChargeType.SHIPPING, currency=order.currency, lines=lines
    )


def charges_uninvoiced(*, merchant_id: int, before: datetime) -> list[Charge]:
    """The merchant's Live charges created before ``before`` that no invoice numbers yet
    (Sandbox is never billed), oldest first, with their orders. A charge of an order paid by
    card is never among them, whatever the merchant's billing mode is now: the order's card
    payments settle all its charges (a payment recorded, ``OrderPayment``, marks the order)."""
    paid_by_card = Exists(OrderPayment.objects.filter(order=OuterRef("order")))
    return list(
        Charge.objects.filter(
            order__environment__merchant_id=merchant_id,
            order__environment__kind=EnvironmentKind.LIVE,
            service_invoice_number__isnull=True,
            created__lt=before,
        )
        .exclude(paid_by_card)
        .select_related("order")
        .order_by("created", "id")
    )


def charges_invoice_number_set(*, charge_ids: Sequence[int], number: str) -> int:
    """Number the charges with their invoice (``serviceInvoiceNumber``); a charge numbered
    already keeps its number. How many were numbered. The documents of their orders show the
    number: each is written again, in the caller's transaction."""
    numbered = Charge.objects.filter(id__in=charge_ids, service_invoice_number__isnull=True)
    order_ids = set(numbered.values_list("order_id", flat=True))
    count = numbered.update(service_invoice_number=number)
    orders_documents_write(order_ids)
    return count
