"""Step 3: allocate the order with the labs engine, create its shipments, write its charges."""

from collections.abc import Iterable
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q, Sum

from labs.allocation import (
    UNAVAILABLE_FOR_NOW,
    AllocationPlan,
    BasketItem,
    Infeasible,
    plan_basket,
)
from orders.charges import charges_write
from orders.document import order_document_write
from orders.issues import ITEM_UNAVAILABLE
from orders.models import (
    Asset,
    Charge,
    ChargeType,
    ItemAvailability,
    Order,
    OrderIssue,
    OrderItem,
    Shipment,
)
from orders.selectors import order_allocation_parts, order_items_get
from products.validation import item_page_count


def basket_item(item: OrderItem, assets: Iterable[Asset]) -> BasketItem:
    """The item as the engine takes it (its pages from its ``assets``)."""
    return BasketItem(
        key=str(item.id),
        sku=item.sku,
        attributes=item.attributes,
        copies=item.copies,
        pages=item_page_count((a.print_area, a.page_count) for a in assets),
    )


def order_basket(order: Order, items: list[OrderItem]) -> list[BasketItem]:
    return [basket_item(item, item.assets.all()) for item in items]


def _plan(order: Order, basket: list[BasketItem]) -> AllocationPlan:
    """At the labs that may make the order's environment's orders: a Live order goes only to
    labs with a real connector unless the simulator may make Live orders."""
    return plan_basket(
        items=basket,
        country_code=order.address_country_code,
        shipping_method=order.shipping_method,
        currency=order.currency,
        sandbox=order.environment.is_sandbox,
    )


def order_plan(order: Order) -> AllocationPlan:
    """The cheapest plan for the order as it stands (as a quote gives); may raise Infeasible."""
    items, assets = order_items_get(order=order)
    return _plan(order, [basket_item(item, assets[item.id]) for item in items])


def order_cost(order: Order) -> Decimal | None:
    """What the order costs now, tax included: its charges once allocated (refunds and
    adjustments counted), else what a quote for it gives; None when it cannot be priced. An
    order is allocated when it has Item or Shipping charges: a card refund of a payment beyond
    the cost before that (an Other charge and its Refund, adding up to zero) prices nothing."""
    charged = Charge.objects.filter(order=order).aggregate(
        total=Sum(F("total_cost") + F("total_tax")),
        allocated=Count("id", filter=Q(charge_type__in=[ChargeType.ITEM, ChargeType.SHIPPING])),
    )
    if charged["allocated"]:
        return Decimal(charged["total"])
    try:
        return order_plan(order).total_cost
    except Infeasible:
        return None


def order_allocate(*, order: Order) -> bool | None:
    """Create shipments and charges (inside the caller's transaction, which they share with
    the order's document, written here).

    True when allocated; None when every failure is ``TemporarilyUnavailable`` (out of stock at
    every lab) or ``NoConfiguredLab`` (a Live item only the simulator makes, where it may not):
    the order waits and allocation is tried again later; False when no plan can ever exist.
    Each item that cannot be placed has one ``order.items.ItemUnavailable`` issue, updated at
    each attempt (not appended) and removed once the order is allocated. The order's document
    is written with what changed (its shipments, charges, items' availability and issues), as
    tests and tools call the step directly.
    """
    parts = order_allocation_parts(order=order)
    if parts.shipments:
        return True  # allocated by an earlier run whose claim release was lost
    items = {str(item.id): item for item in parts.items}
    try:
        plan = _plan(order, [basket_item(item, parts.assets[item.id]) for item in parts.items])
    except Infeasible as infeasible:
        temporary = True
        for key, failures in infeasible.failures_by_item_key.items():
            temporary = temporary and all(f.code in UNAVAILABLE_FOR_NOW for f in failures)
            item = items.get(key)
            if item is None:
                continue
            OrderItem.objects.filter(id=item.id).update(availability=ItemAvailability.UNAVAILABLE)
            OrderIssue.objects.update_or_create(
                order=order,
                object_id=item.public_id,
                error_code=ITEM_UNAVAILABLE,
                defaults={"description": "; ".join(f.description for f in failures)},
            )
        order_document_write(order.id)
        return None if temporary and infeasible.failures_by_item_key else False
    # ItemUnavailable issues are written at creation and by allocation alone (under the
    # order's claim, or its row lock in orders.actions): those read are all there are.
    unavailable = [issue.id for issue in parts.issues if issue.error_code == ITEM_UNAVAILABLE]
    if unavailable:
        OrderIssue.objects.filter(id__in=unavailable).delete()
    assert transaction.get_connection().in_atomic_block
    shipments = {
        planned.lab_code: Shipment(
            order=order,
            lab_code=planned.lab_code,
            lab_country_code=planned.lab_country_code,
            shipping_method=planned.shipping_method,
            carrier_name=planned.carrier_name,
            carrier_service=planned.carrier_service,
        )
        for planned in plan.shipments
    }
    Shipment.objects.bulk_create(shipments.values())
    # A plan places every item: each is available again, in its lab's shipment.
    for planned in plan.shipments:
        OrderItem.objects.filter(id__in=[int(k) for k in planned.item_keys]).update(
            shipment=shipments[planned.lab_code], availability=ItemAvailability.AVAILABLE
        )
    # No shipment, so no charges of an earlier allocation either: both are written together
    # (and ``orders.actions`` deletes both to allocate again).
    charges_write(order=order, plan=plan, items=items, shipments=shipments)
    order_document_write(order.id)
    return True


def allocation_retry_at(*, order: Order, now: datetime) -> datetime:
    """When to try a temporarily unavailable order again: the wait doubles from
    ALLOCATION_RETRY_BASE_SECONDS (the delay is the time waited so far since the first
    ``ItemUnavailable`` issue, so no counter is needed), capped at ALLOCATION_RETRY_MAX_SECONDS."""
    first = (
        OrderIssue.objects.filter(order=order, error_code=ITEM_UNAVAILABLE)
        .order_by("created")
        .values_list("created", flat=True)
        .first()
    )
    waited = (now - first).total_seconds() if first is not None else 0.0
    base = float(settings.ALLOCATION_RETRY_BASE_SECONDS)
    cap = float(settings.ALLOCATION_RETRY_MAX_SECONDS)
    return now + timedelta(seconds=min(max(base, waited), cap))
