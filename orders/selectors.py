"""Reads of orders: one order, list pages, and the shape of their queries."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Prefetch, QuerySet

from common.errors import EntityNotFound
from merchants.models import Environment
from orders.models import Asset, Charge, Order, OrderItem, Shipment, Stage

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
    """A page of orders, newest (highest id) first, and whether more follow.

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
    page = list(orders_with_parts(queryset.order_by("-id"))[offset : offset + filters.top + 1])
    return page[: filters.top], len(page) > filters.top
