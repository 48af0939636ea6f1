"""Reads of orders: one order, list pages, and the shape of their queries."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Prefetch, QuerySet

from common.errors import EntityNotFound
from merchants.models import Environment
from orders.models import Asset, Charge, ChargeItem, Order, OrderIssue, OrderItem, Shipment, Stage
from orders.parts import OrderParts

LIST_STATUS_STAGES = {
    "draft": Stage.ON_HOLD,
    "awaitingPayment": Stage.AWAITING_PAYMENT,
    "inProgress": Stage.IN_PROGRESS,
    "complete": Stage.COMPLETE,
    "cancelled": Stage.CANCELLED,
}
# List statuses no order can be in (an empty page without a query); none at present.
EMPTY_STATUSES: frozenset[str] = frozenset()


def orders_with_parts(queryset: QuerySet[Order]) -> QuerySet[Order]:
    """Everything ``order_representation`` reads, in a fixed number of queries."""
    return queryset.prefetch_related(
        Prefetch("items", queryset=OrderItem.objects.order_by("position")),
        Prefetch("items__assets", queryset=Asset.objects.order_by("position")),
        "shipments",
        Prefetch("charges", queryset=Charge.objects.order_by("created", "id")),
        "charges__items",
        "issues",
    )


def order_parts(*, orders: Sequence[Order]) -> dict[int, OrderParts]:
    """The parts of each order by order id: one query per kind of part with ``IN`` whatever
    the number of orders (none for assets without items or charge lines without charges),
    grouped in dicts rather than through ``prefetch_related``, which costs a queryset per row.
    """
    parts = {order.id: OrderParts() for order in orders}
    if not parts:
        return parts
    ids = list(parts)
    items = list(OrderItem.objects.filter(order_id__in=ids).order_by("order_id", "position"))
    for item in items:
        parts[item.order_id].items.append(item)
    if items:
        assets: dict[int, list[Asset]] = {}
        item_order = {item.id: item.order_id for item in items}
        for asset in Asset.objects.filter(item_id__in=list(item_order)).order_by(
            "item_id", "position"
        ):
            assets.setdefault(asset.item_id, []).append(asset)
        for item_id, order_id in item_order.items():
            parts[order_id].assets[item_id] = assets.get(item_id, [])
    for shipment in Shipment.objects.filter(order_id__in=ids).order_by("created", "id"):
        parts[shipment.order_id].shipments.append(shipment)
    charges = list(Charge.objects.filter(order_id__in=ids).order_by("created", "id"))
    for charge in charges:
        parts[charge.order_id].charges.append(charge)
    if charges:
        charge_order = {charge.id: charge.order_id for charge in charges}
        for line in ChargeItem.objects.filter(charge_id__in=list(charge_order)).order_by("id"):
            parts[charge_order[line.charge_id]].charge_items.setdefault(line.charge_id, []).append(
                line
            )
    for issue in OrderIssue.objects.filter(order_id__in=ids).order_by("created", "id"):
        parts[issue.order_id].issues.append(issue)
    return parts


def order_with_parts_get(*, environment: Environment, order_id: int) -> tuple[Order, OrderParts]:
    """As ``order_get``, with its parts as ``order_representation`` takes them."""
    order = Order.objects.filter(environment=environment, id=order_id).first()
    if order is None:
        raise EntityNotFound(f"No order {Order(id=order_id).public_id} in this environment.")
    return order, order_parts(orders=[order])[order.id]


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


def order_list(*, environment: Environment, filters: OrderFilter) -> tuple[list[Order], bool]:
    """A page of orders, newest (highest id) first, and whether more follow (their parts come
    from ``order_parts``).

    ``before_id`` (the cursor of ``nextUrl``) starts the page after that id, so a deep page
    costs an index seek rather than skipping every row before it.
    """
    if filters.status in EMPTY_STATUSES:
        return [], False
    queryset = Order.objects.filter(environment=environment)
    if filters.status is not None:
        queryset = queryset.filter(stage=LIST_STATUS_STAGES[filters.status])
    if filters.created_from is not None:
        queryset = queryset.filter(created__gt=filters.created_from)
    if filters.created_to is not None:
        queryset = queryset.filter(created__lt=filters.created_to)
    if filters.order_ids:
        queryset = queryset.filter(id__in=filters.order_ids)
    if filters.merchant_references:
        queryset = queryset.filter(merchant_reference__in=filters.merchant_references)
    if filters.before_id is not None:
        queryset = queryset.filter(id__lt=filters.before_id)
        offset = 0
    else:
        offset = filters.skip
    page = list(queryset.order_by("-id")[offset : offset + filters.top + 1])
    return page[: filters.top], len(page) > filters.top
