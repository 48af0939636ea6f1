"""Charges of an order: Item and Shipping from the allocation plan, Refund on cancellation.

The amounts are exactly the plan's (the same engine prices quotes), so a quote for a basket
equals the charges of an order for it, to the cent. Sandbox orders show charges but are never
billed (no invoice number is ever set for them).
"""

from decimal import Decimal

from django.db import transaction

from labs.allocation import AllocationPlan
from orders.models import Charge, ChargeItem, ChargeType, Order, OrderItem, Shipment


@transaction.atomic
def charges_write(
    *,
    order: Order,
    plan: AllocationPlan,
    items: dict[str, OrderItem],
    shipments: dict[str, Shipment],
) -> None:
    """Write the Item and Shipping charges once (``totalCost`` is the sum of the lines, tax apart).

    ``items`` and ``shipments`` are keyed as in the plan
    (item key, lab code). Running it again for an order that has them does nothing."""
    if Charge.objects.filter(
        order=order, charge_type__in=[ChargeType.ITEM, ChargeType.SHIPPING]
    ).exists():
        return
    item_charge = Charge.objects.create(
        order=order,
        charge_type=ChargeType.ITEM,
        currency=plan.currency,
        total_cost=plan.items_cost,
        total_tax=plan.items_tax,
    )
    ChargeItem.objects.bulk_create(
        ChargeItem(
            charge=item_charge,
            charge_type=ChargeType.ITEM,
            item=items[line.key],
            cost=line.total_cost,
            tax=line.tax,
        )
        for line in plan.item_lines
    )
    shipping_charge = Charge.objects.create(
        order=order,
        charge_type=ChargeType.SHIPPING,
        currency=plan.currency,
        total_cost=plan.shipping_cost,
        total_tax=plan.shipping_tax,
    )
    ChargeItem.objects.bulk_create(
        ChargeItem(
            charge=shipping_charge,
            charge_type=ChargeType.SHIPPING,
            shipment=shipments[planned.lab_code],
            cost=planned.shipping_cost,
            tax=planned.shipping_tax,
        )
        for planned in plan.shipments
    )


@transaction.atomic
def refund_write(*, order: Order) -> Charge | None:
    """A Refund charge crediting everything charged so far (none if nothing was charged)."""
    charges = list(Charge.objects.filter(order=order).prefetch_related("items"))
    if any(c.charge_type == ChargeType.REFUND for c in charges):
        return None
    charged = [c for c in charges if c.charge_type in (ChargeType.ITEM, ChargeType.SHIPPING)]
    if not charged:
        return None
    refund = Charge.objects.create(
        order=order,
        charge_type=ChargeType.REFUND,
        currency=charged[0].currency,
        total_cost=-sum((c.total_cost for c in charged), Decimal(0)),
        total_tax=-sum((c.total_tax for c in charged), Decimal(0)),
    )
    ChargeItem.objects.bulk_create(
        ChargeItem(
            charge=refund,
            charge_type=ChargeType.REFUND,
            item_id=line.item_id,
            shipment_id=line.shipment_id,
            cost=-line.cost,
            tax=-line.tax,
        )
        for charge in charged
        for line in charge.items.all()
    )
    return refund
