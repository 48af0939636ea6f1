"""Reads of orders: one order, list pages, and the shape of their queries.

One read writes: an order's callback event numbers itself with the order row's counter,
incremented in the same round trip (``order_with_parts_numbered_get``)."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Prefetch, QuerySet

from common.db import rows_together, update_returning_joined
from common.errors import EntityNotFound
from common.joined import JoinedRead, TableColumns
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
from orders.parts import OrderParts, ShipmentParts

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


def _reads_together(
    statements: Sequence[tuple[str, list[Any]]], *, write_first: tuple[str, list[Any]] | None = None
) -> list[list[Any]]:
    """The rows of each SELECT, run after ``write_first`` (a statement returning no rows) when
    given; on PostgreSQL in one round trip (``common.db.rows_together``)."""
    if write_first is None:
        return rows_together(statements)
    return rows_together([write_first, *statements])[1:]


_ORDER_COLUMNS = TableColumns(Order, "o")
# An order with its items and their assets; items with their assets; charges with their lines.
_ORDER_ITEMS_ASSETS = JoinedRead(
    "SELECT {columns} FROM {order} o LEFT JOIN {orderitem} i ON i.order_id = o.id "
    "LEFT JOIN {asset} a ON a.item_id = i.id WHERE o.id {in_ids} "
    "ORDER BY o.id, i.position, a.position",
    _ORDER_COLUMNS,
    TableColumns(OrderItem, "i"),
    TableColumns(Asset, "a"),
)
_ITEMS_ASSETS = JoinedRead(
    "SELECT {columns} FROM {orderitem} i LEFT JOIN {asset} a ON a.item_id = i.id "
    "WHERE i.order_id {in_ids} ORDER BY i.order_id, i.position, a.position",
    TableColumns(OrderItem, "i"),
    TableColumns(Asset, "a"),
)
_SHIPMENTS = JoinedRead(
    "SELECT {columns} FROM {shipment} s WHERE s.order_id {in_ids} ORDER BY s.created, s.id",
    TableColumns(Shipment, "s"),
)
_CHARGES_LINES = JoinedRead(
    "SELECT {columns} FROM {charge} c LEFT JOIN {chargeitem} l ON l.charge_id = c.id "
    "WHERE c.order_id {in_ids} ORDER BY c.created, c.id, l.id",
    TableColumns(Charge, "c"),
    TableColumns(ChargeItem, "l"),
)
_ISSUES = JoinedRead(
    "SELECT {columns} FROM {orderissue} x WHERE x.order_id {in_ids} ORDER BY x.created, x.id",
    TableColumns(OrderIssue, "x"),
)

_FILES = JoinedRead(
    "SELECT {columns} FROM {orderfile} f WHERE f.order_id {in_ids} ORDER BY f.id",
    TableColumns(OrderFile, "f"),
)
_SHIPMENT_LABS = JoinedRead(
    "SELECT {columns} FROM {lab} l WHERE l.code IN "
    "(SELECT s.lab_code FROM {shipment} s WHERE s.order_id {in_ids})",
    TableColumns(Lab, "l"),
    models=[Shipment],
)


_PART_JOINS = (_SHIPMENTS, _CHARGES_LINES, _ISSUES)


def _grouped(parents: list[Any], children: dict[int, list[Any]], parent: Any, child: Any) -> None:
    """A joined row's parent (once, in row order) and its child (None: a parent without
    children) added to ``parents`` and ``children`` by parent id."""
    siblings = children.get(parent.id)
    if siblings is None:
        parents.append(parent)
        siblings = children[parent.id] = []
    if child is not None:
        siblings.append(child)


def _parts_fill(
    parts: dict[int, OrderParts], items_assets: list[tuple[Any, ...]], rest: Sequence[Any]
) -> None:
    """``parts`` from the rows read: items and assets (the end of each ``items_assets``
    row), then shipments, charges with their lines and issues (``rest``: the rows of
    ``_PART_JOINS``, in their order)."""
    for *_, item, asset in items_assets:
        if item is not None:
            shown = parts[item.order_id]
            _grouped(shown.items, shown.assets, item, asset)
    shipments, charges, issues = rest
    for (shipment,) in _SHIPMENTS.instances(shipments):
        parts[shipment.order_id].shipments.append(shipment)
    for charge, line in _CHARGES_LINES.instances(charges):
        charged = parts[charge.order_id]
        _grouped(charged.charges, charged.charge_items, charge, line)
    for (issue,) in _ISSUES.instances(issues):
        parts[issue.order_id].issues.append(issue)


def order_parts(*, orders: Sequence[Order]) -> dict[int, OrderParts]:
    """The parts of each order by order id, read in one round trip whatever the number of
    orders (items joined with their assets, shipments, charges joined with their lines, issues:
    four SELECTs, one query each where the database cannot take them together), grouped in
    dicts rather than through ``prefetch_related``, which costs a queryset per row."""
    parts = {order.id: OrderParts() for order in orders}
    if parts:
        ids = list(parts)
        joins = (_ITEMS_ASSETS, *_PART_JOINS)
        items_assets, *rest = _reads_together([join.statement(ids) for join in joins])
        _parts_fill(parts, _ITEMS_ASSETS.instances(items_assets), rest)
    return parts


def order_with_parts_get(*, environment: Environment, order_id: int) -> tuple[Order, OrderParts]:
    """As ``order_get``, with its parts as ``order_representation`` takes them: the order
    joined with its items and assets, and its other parts, in one round trip."""
    return _order_with_parts(environment, order_id)


def order_with_parts_numbered_get(
    *, environment: Environment, order_id: int
) -> tuple[Order, OrderParts]:
    """As ``order_with_parts_get``, after numbering one more callback event of the order: its
    ``callback_sequence`` is incremented in place first, so the order read shows the event's
    number (``orders.events.order_event_create``, inside the event's transaction).

    The one write among these reads. The increment locks the order row until the transaction
    ends, so concurrent events of one order take their numbers in the order of their commits;
    the reads after it run once the lock is ours, and see what the previous holder committed."""
    return _order_with_parts(environment, order_id, write_first=_sequence_increment(order_id))


# The increment of ``order_with_parts_numbered_get`` returning the order row it wrote.
_ORDER_NUMBERED = JoinedRead(
    "UPDATE {order} o SET callback_sequence = o.callback_sequence + 1 WHERE o.id {in_ids} "
    "RETURNING {columns}",
    _ORDER_COLUMNS,
)


def order_numbered_get(*, environment: Environment, order: Order) -> Order:
    """The order row alone, as ``order_with_parts_numbered_get`` reads it after the same
    increment: for a further event of ``order`` in the transaction of an earlier one, whose
    parts it reuses (``orders.events.PartsKept``)."""
    with connection.cursor() as cursor:
        if update_returning_joined():
            cursor.execute(*_ORDER_NUMBERED.statement([order.id]))
            rows = _ORDER_NUMBERED.instances(cursor.fetchall())
        else:  # the increment, then the row
            cursor.execute(*_sequence_increment(order.id))
            rows = [(row,) for row in Order.objects.filter(id=order.id)]
    if not rows or rows[0][0].environment_id != environment.id:
        raise EntityNotFound(f"No order {order.public_id} in this environment.")
    return rows[0][0]


def _sequence_increment(order_id: int) -> tuple[str, list[Any]]:
    """The UPDATE adding one to the order's ``callback_sequence``."""
    quote = connection.ops.quote_name
    column = quote(str(Order._meta.get_field("callback_sequence").column))
    return (
        f"UPDATE {quote(Order._meta.db_table)} SET {column} = {column} + 1 WHERE id = %s",
        [order_id],
    )


def _order_with_parts(
    environment: Environment, order_id: int, *, write_first: tuple[str, list[Any]] | None = None
) -> tuple[Order, OrderParts]:
    joins = (_ORDER_ITEMS_ASSETS, *_PART_JOINS)
    order_rows, *rest = _reads_together(
        [join.statement([order_id]) for join in joins], write_first=write_first
    )
    rows = _ORDER_ITEMS_ASSETS.instances(order_rows)
    if not rows or rows[0][0].environment_id != environment.id:
        raise EntityNotFound(f"No order {Order(id=order_id).public_id} in this environment.")
    order = rows[0][0]
    parts = {order.id: OrderParts()}
    _parts_fill(parts, rows, rest)
    return order, parts[order.id]


def order_items_get(*, order: Order) -> tuple[list[OrderItem], dict[int, list[Asset]]]:
    """The order's items by position and their assets by item id (in position order), in
    one query."""
    (rows,) = _reads_together([_ITEMS_ASSETS.statement([order.id])])
    items: list[OrderItem] = []
    assets: dict[int, list[Asset]] = {}
    for item, asset in _ITEMS_ASSETS.instances(rows):
        _grouped(items, assets, item, asset)
    return items, assets


def order_allocation_parts(*, order: Order) -> OrderParts:
    """What allocating the order reads: its items with their assets, its shipments (it has
    some once allocated) and its issues, in one round trip (its charges are not read)."""
    joins = (_ITEMS_ASSETS, _SHIPMENTS, _ISSUES)
    items_assets, shipments, issues = _reads_together(
        [join.statement([order.id]) for join in joins]
    )
    parts = {order.id: OrderParts()}
    _parts_fill(parts, _ITEMS_ASSETS.instances(items_assets), [shipments, [], issues])
    return parts[order.id]


def order_shipment_parts(*, order: Order) -> ShipmentParts:
    """The order's shipments that are not cancelled (``order`` set as their order), each
    one's items with their assets, the order's files and the shipments' labs: what
    ``orders.lab_orders.lab_order`` sends and a step asks the labs, in one round trip."""
    joins = (_SHIPMENTS, _ITEMS_ASSETS, _FILES, _SHIPMENT_LABS)
    shipments, items_assets, files, labs = _reads_together(
        [join.statement([order.id]) for join in joins]
    )
    parts = ShipmentParts()
    for (shipment,) in _SHIPMENTS.instances(shipments):
        if shipment.status != ShipmentStatus.CANCELLED:
            shipment.order = order
            parts.shipments.append(shipment)
            parts.items[shipment.id] = []
    items: list[OrderItem] = []
    for item, asset in _ITEMS_ASSETS.instances(items_assets):
        _grouped(items, parts.assets, item, asset)
    for item in items:
        if item.shipment_id in parts.items:
            parts.items[item.shipment_id].append(item)
    parts.files = [order_file for (order_file,) in _FILES.instances(files)]
    parts.labs = {lab.code: lab for (lab,) in _SHIPMENT_LABS.instances(labs)}
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
    page = [
        _ORDER_COLUMNS.built(values, queryset.db)
        for values in queryset.order_by("-id").values_list(*_ORDER_COLUMNS.attnames)[
            offset : offset + filters.top + 1
        ]
    ]
    return page[: filters.top], len(page) > filters.top


def charges_of_invoice(*, merchant_id: int, number: str) -> list[Charge]:
    """The merchant's charges numbered with invoice ``number``, oldest first, with their order."""
    return list(
        Charge.objects.filter(
            order__environment__merchant_id=merchant_id, service_invoice_number=number
        )
        .select_related("order")
        .order_by("created", "id")
    )
