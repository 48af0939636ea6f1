"""Reads of orders: one order, list pages, and the parts of orders the pipeline works on.

The API reads orders' stored documents (``orders.document``); these are what the services and
the pipeline read, through the ORM."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Prefetch, QuerySet

from common.errors import EntityNotFound
from labs.models import Lab
from merchants.models import Environment
from orders.models import (
    Asset,
    Charge,
    ChargeItem,
    Order,
    OrderFile,
    OrderIssue,
    OrderItem,
    Shipment,
    ShipmentStatus,
    Stage,
)
from orders.parts import OrderParts, ShipmentParts, items_shipment_id

LIST_STATUS_STAGES = {
    "draft": Stage.ON_HOLD,
    "awaitingPayment": Stage.AWAITING_PAYMENT,
    "inProgress": Stage.IN_PROGRESS,
    "complete": Stage.COMPLETE,
    "cancelled": Stage.CANCELLED,
}

_ITEMS = Prefetch("items", queryset=OrderItem.objects.order_by("position"))
_ASSETS = Prefetch("items__assets", queryset=Asset.objects.order_by("position"))


def orders_with_parts(queryset: QuerySet[Order]) -> QuerySet[Order]:
    """Everything ``order_representation`` reads, prefetched: as many queries for a page of
    orders as for one."""
    return queryset.prefetch_related(
        _ITEMS,
        _ASSETS,
        Prefetch("shipments", queryset=Shipment.objects.order_by("created", "id")),
        Prefetch("charges", queryset=Charge.objects.order_by("created", "id")),
        Prefetch("charges__items", queryset=ChargeItem.objects.order_by("id")),
        Prefetch("issues", queryset=OrderIssue.objects.order_by("created", "id")),
    )


def _items_assets(order: Order) -> tuple[list[OrderItem], dict[int, list[Asset]]]:
    items = list(
        OrderItem.objects.filter(order=order)
        .order_by("position")
        .prefetch_related(Prefetch("assets", queryset=Asset.objects.order_by("position")))
    )
    return items, {item.id: list(item.assets.all()) for item in items}


def order_items_get(*, order: Order) -> tuple[list[OrderItem], dict[int, list[Asset]]]:
    """The order's items by position and their assets by item id (in position order)."""
    return _items_assets(order)


def order_allocation_parts(*, order: Order) -> OrderParts:
    """What allocating the order reads: its items with their assets, its shipments (it has
    some once allocated) and its issues; its charges are left empty."""
    items, assets = _items_assets(order)
    return OrderParts(
        items=items,
        assets=assets,
        shipments=list(Shipment.objects.filter(order=order).order_by("created", "id")),
        issues=list(OrderIssue.objects.filter(order=order).order_by("created", "id")),
    )


def order_shipment_parts(*, order: Order) -> ShipmentParts:
    """The order's shipments that are not cancelled (``order`` set as their order), each
    one's items with their assets, the order's files and the shipments' labs: what
    ``orders.lab_orders.lab_order`` sends and a step asks the labs."""
    parts = ShipmentParts()
    for shipment in Shipment.objects.filter(order=order).order_by("created", "id"):
        if shipment.status != ShipmentStatus.CANCELLED:
            shipment.order = order
            parts.shipments.append(shipment)
    items, parts.assets = _items_assets(order)
    by_shipment: dict[int | None, list[OrderItem]] = {}
    for item in items:
        by_shipment.setdefault(item.shipment_id, []).append(item)
    for shipment in parts.shipments:  # a reprint is made of the items of what it reprints
        parts.items[shipment.id] = by_shipment.get(items_shipment_id(shipment), [])
    parts.files = list(OrderFile.objects.filter(order=order).order_by("id"))
    codes = {shipment.lab_code for shipment in parts.shipments}
    parts.labs = {lab.code: lab for lab in Lab.objects.filter(code__in=codes)}
    return parts


def order_get(*, environment: Environment, order_id: int) -> Order:
    """The order with all its parts, or ``EntityNotFound`` (also for other environments')."""
    order = orders_with_parts(Order.objects.filter(environment=environment, id=order_id)).first()
    if order is None:
        raise EntityNotFound(f"No order {Order(id=order_id).public_id} in this environment.")
    return order


def shipment_get(*, order_id: int, shipment_id: int) -> Shipment:
    """A shipment of the order, in any environment (staff endpoints), or ``EntityNotFound``
    (also when the shipment belongs to another order)."""
    shipment = (
        Shipment.objects.select_related("order__environment__merchant")
        .filter(order_id=order_id, id=shipment_id)
        .first()
    )
    if shipment is None:
        raise EntityNotFound(
            f"No shipment {Shipment(id=shipment_id).public_id} "
            f"in order {Order(id=order_id).public_id}."
        )
    return shipment


@dataclass(frozen=True)
class OrderFilter:
    top: int = 10
    skip: int = 0
    before_id: int | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    status: str | None = None
    order_ids: tuple[int, ...] = ()
    merchant_references: tuple[str, ...] = ()


def order_list(*, environment: Environment, filters: OrderFilter) -> QuerySet[Order]:
    """A page of orders, newest (highest id) first, one more than ``top`` (when it is there,
    more follow).

    ``before_id`` (the cursor of ``nextUrl``) starts the page after that id, so a deep page
    costs an index seek rather than skipping every row before it.
    """
    orders = Order.objects.filter(environment=environment)
    if filters.status is not None:
        orders = orders.filter(stage=LIST_STATUS_STAGES[filters.status])
    if filters.created_from is not None:
        orders = orders.filter(created__gt=filters.created_from)
    if filters.created_to is not None:
        orders = orders.filter(created__lt=filters.created_to)
    if filters.order_ids:
        orders = orders.filter(pk__in=filters.order_ids)
    if filters.merchant_references:
        orders = orders.filter(merchant_reference__in=filters.merchant_references)
    offset = filters.skip
    if filters.before_id is not None:
        orders, offset = orders.filter(pk__lt=filters.before_id), 0
    return orders.order_by("-id")[offset : offset + filters.top + 1]


def charges_of_invoice(*, merchant_id: int, number: str) -> list[Charge]:
    """The merchant's charges numbered with invoice ``number``, oldest first, with their order."""
    return list(
        Charge.objects.filter(
            order__environment__merchant_id=merchant_id, service_invoice_number=number
        )
        .select_related("order")
        .order_by("created", "id")
    )
