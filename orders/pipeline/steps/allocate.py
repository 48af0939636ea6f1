"""Step 3: allocate the order with the labs engine, create its shipments, write its charges."""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from labs.allocation import AllocationPlan, BasketItem, Infeasible, plan_basket
from orders.charges import charges_write
from orders.issues import ITEM_UNAVAILABLE
from orders.models import ItemAvailability, Order, OrderIssue, OrderItem, Shipment
from products.validation import item_page_count


def order_basket(order: Order, items: list[OrderItem]) -> list[BasketItem]:
    basket = []
    for item in items:
        pages = item_page_count((a.print_area, a.page_count) for a in item.assets.all())
        basket.append(
            BasketItem(
                key=str(item.id),
                sku=item.sku,
                attributes=item.attributes,
                copies=item.copies,
                pages=pages,
            )
        )
    return basket


def order_plan(order: Order) -> AllocationPlan:
    """The cheapest plan for the order as it stands (as a quote gives); may raise Infeasible."""
    items = list(order.items.prefetch_related("assets").order_by("position"))
    return plan_basket(
        items=order_basket(order, items),
        country_code=order.address_country_code,
        shipping_method=order.shipping_method,
        currency=order.currency,
    )


TEMPORARILY_UNAVAILABLE = "TemporarilyUnavailable"


def order_allocate(*, order: Order) -> bool | None:
    """Create shipments and charges (inside the caller's transaction).

    True when allocated; None when every failure is ``TemporarilyUnavailable`` (out of stock at
    every lab: the order waits and allocation is tried again later); False when no plan can
    ever exist. Each item that cannot be placed has one ``order.items.ItemUnavailable`` issue,
    updated at each attempt (not appended) and removed once the order is allocated.
    """
    items = {str(i.id): i for i in order.items.prefetch_related("assets").order_by("position")}
    if Shipment.objects.filter(order=order).exists():
        return True  # allocated by an earlier run whose claim release was lost
    try:
        plan = order_plan(order)
    except Infeasible as infeasible:
        temporary = True
        for key, failures in infeasible.failures_by_item_key.items():
            temporary = temporary and all(f.code == TEMPORARILY_UNAVAILABLE for f in failures)
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
        return None if temporary and infeasible.failures_by_item_key else False
    OrderIssue.objects.filter(order=order, error_code=ITEM_UNAVAILABLE).delete()
    OrderItem.objects.filter(order=order).update(availability=ItemAvailability.AVAILABLE)
    assert transaction.get_connection().in_atomic_block
    shipments: dict[str, Shipment] = {}
    for planned in plan.shipments:
        shipment = Shipment.objects.create(
            order=order,
            lab_code=planned.lab_code,
            lab_country_code=planned.lab_country_code,
            shipping_method=planned.shipping_method,
            carrier_name=planned.carrier_name,
            carrier_service=planned.carrier_service,
        )
        shipments[planned.lab_code] = shipment
        OrderItem.objects.filter(id__in=[int(k) for k in planned.item_keys]).update(
            shipment=shipment
        )
    charges_write(order=order, plan=plan, items=items, shipments=shipments)
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
