"""Reads of orders: one order, list pages, and the parts of orders the pipeline works on.

The API's reads (``order_with_parts_get``, ``order_list``, ``order_parts``) give plain rows
(``common.joined.Row``: the fields' values, ``public_id``), not model instances: what
``order_representation`` reads, at a fraction of the CPU of making instances.

One read writes: an order's callback event numbers itself with the order row's counter,
incremented before the order is read (``order_with_parts_numbered_get``)."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Prefetch, QuerySet

from common.db import Statement, rows_together
from common.errors import EntityNotFound
from common.joined import (
    CounterIncrement,
    JoinedRead,
    Row,
    RowsPage,
    Table,
    UnitedRead,
    Within,
    rows_by_ids,
    rows_referred_to,
)
from common.versions import versions_read_with
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
from orders.parts import SHOWN_FIELDS, OrderParts, ShipmentParts, items_shipment_id

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
    """Everything ``order_representation`` reads, prefetched: as many queries for a page of
    orders as for one."""
    return queryset.prefetch_related(
        Prefetch("items", queryset=OrderItem.objects.order_by("position")),
        Prefetch("items__assets", queryset=Asset.objects.order_by("position")),
        "shipments",
        Prefetch("charges", queryset=Charge.objects.order_by("created", "id")),
        "charges__items",
        "issues",
    )


def _reads_together(
    statements: Sequence[Statement], *, write_first: Statement | None = None
) -> list[list[Any]]:
    """The rows of each SELECT, run after ``write_first`` (a statement returning no rows) when
    given, together (``common.db.rows_together``)."""
    if write_first is None:
        return rows_together(statements)
    return rows_together([write_first, *statements])[1:]


# The order reads are statements built once per process (``common.joined``): through the ORM
# (``orders_with_parts``) the same order and parts cost 13 times the CPU (measured on
# 26 November: 3.2 against 0.24 ms an order on SQLite, 3.6 against 0.5 ms on PostgreSQL).
_ITEMS = Table(OrderItem, order_by=("order", "position"))
_ASSETS = Table(Asset, order_by=("position",), refers_by="item")
# An order with its items and their assets; items with their assets; charges with their lines.
_ORDER_ITEMS_ASSETS = rows_by_ids(
    Table(Order, order_by=("id",)),
    Table(OrderItem, order_by=("position",), refers_by="order"),
    _ASSETS,
    by="pk",
)
_ITEMS_ASSETS = rows_by_ids(_ITEMS, _ASSETS, by="order")
_SHIPMENTS = rows_by_ids(Table(Shipment, order_by=("order", "created", "id")), by="order")
_CHARGES_LINES = rows_by_ids(
    Table(Charge, order_by=("order", "created", "id")),
    Table(ChargeItem, order_by=("id",), refers_by="charge"),
    by="order",
)
_ISSUES = rows_by_ids(Table(OrderIssue, order_by=("order", "created", "id")), by="order")
_FILES = rows_by_ids(Table(OrderFile, order_by=("id",)), by="order")
_SHIPMENT_LABS = rows_referred_to(Lab, "code", by=Shipment, naming="lab_code", among="order")
_CALLBACK_SEQUENCE = CounterIncrement(Order, "callback_sequence", alias="o")


_PART_JOINS = (_SHIPMENTS, _CHARGES_LINES, _ISSUES)
# One order and all its parts in one statement.
_ORDER_WITH_PARTS = UnitedRead(_ORDER_ITEMS_ASSETS, *_PART_JOINS)


def _shown(model: type[Any], order_by: tuple[str, ...], refers_by: str = "") -> Table:
    return Table(model, order_by, refers_by, fields=SHOWN_FIELDS[model])


# The list's reads: the fields the representation shows alone, timestamps as its text (two
# thirds of the columns of an order; a third of a page's CPU went to reading the others).
_ORDER_PAGE = RowsPage(Order, fields=SHOWN_FIELDS[Order], iso_timestamps=True)
_SHOWN_ITEMS_ASSETS = rows_by_ids(
    _shown(OrderItem, ("order", "position")),
    _shown(Asset, ("position",), refers_by="item"),
    by="order",
    iso_timestamps=True,
)
_SHOWN_PART_JOINS = (
    rows_by_ids(_shown(Shipment, ("order", "created", "id")), by="order", iso_timestamps=True),
    rows_by_ids(
        _shown(Charge, ("order", "created", "id")),
        _shown(ChargeItem, ("id",), refers_by="charge"),
        by="order",
        iso_timestamps=True,
    ),
    rows_by_ids(_shown(OrderIssue, ("order", "created", "id")), by="order", iso_timestamps=True),
)
# The API's read of one order: the same fields (and the order's environment, checked) in one
# statement.
_SHOWN_ORDER_ITEMS_ASSETS = rows_by_ids(
    Table(Order, ("id",), fields=(*SHOWN_FIELDS[Order], "environment")),
    _shown(OrderItem, ("position",), refers_by="order"),
    _shown(Asset, ("position",), refers_by="item"),
    by="pk",
    iso_timestamps=True,
)
_ORDER_WITH_SHOWN_PARTS = UnitedRead(_SHOWN_ORDER_ITEMS_ASSETS, *_SHOWN_PART_JOINS)


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
    parts: dict[int, OrderParts],
    items_assets: list[tuple[Any, ...]],
    rest: Sequence[Any],
    *,
    plain: bool = False,
    joins: Sequence[JoinedRead] = _PART_JOINS,
) -> None:
    """``parts`` from the rows read: items and assets (the end of each ``items_assets``
    row), then shipments, charges with their lines and issues (``rest``: the rows of
    ``joins``, in their order), as instances or with ``plain`` as ``Row``s."""
    for *_, item, asset in items_assets:
        if item is not None:
            shown = parts[item.order_id]
            _grouped(shown.items, shown.assets, item, asset)
    shipments, charges, issues = rest
    shipments_join, charges_join, issues_join = joins
    for (shipment,) in shipments_join.instances(shipments, plain=plain):
        parts[shipment.order_id].shipments.append(shipment)
    for charge, line in charges_join.instances(charges, plain=plain):
        charged = parts[charge.order_id]
        _grouped(charged.charges, charged.charge_items, charge, line)
    for (issue,) in issues_join.instances(issues, plain=plain):
        parts[issue.order_id].issues.append(issue)


def order_parts(*, orders: Sequence[Order | Row]) -> dict[int, OrderParts]:
    """The parts of each order by order id (items with their assets, shipments, charges with
    their lines, issues, each in display order, as ``Row``s of the fields the representation
    shows, timestamps as its text), read together whatever the number of orders; an order
    without parts has empty ones."""
    parts = {order.id: OrderParts() for order in orders}
    if parts:
        ids = list(parts)
        joins = (_SHOWN_ITEMS_ASSETS, *_SHOWN_PART_JOINS)
        items_assets, *rest = _reads_together([join.statement(ids) for join in joins])
        _parts_fill(
            parts,
            _SHOWN_ITEMS_ASSETS.instances(items_assets, plain=True),
            rest,
            plain=True,
            joins=_SHOWN_PART_JOINS,
        )
    return parts


def order_with_parts_get(*, environment: Environment, order_id: int) -> tuple[Row, OrderParts]:
    """As ``order_get``, with its parts as ``order_representation`` takes them, the order and
    its parts read together, as ``Row``s."""
    return _order_with_parts(environment, order_id, plain=True)


@dataclass(frozen=True)
class OrderReadAhead:
    """The rows ``order_shown_get`` makes an order of, read before the request's key is checked
    (for the environment of a key this process keeps), in the statement that reads the
    request's versions (``common.versions.versions_read_with``)."""

    order_id: int
    environment_id: int
    rows: list[Sequence[Any]]


def _in_environment(environment_id: int) -> Within:
    """An order read's ids narrowed to the orders of one environment: another environment's
    order, and its parts, are never read (asking for it costs what a missing id does)."""
    return Within(Order, "environment", environment_id)


def order_shown_read_ahead(*, order_id: int, environment_id: int) -> OrderReadAhead:
    rows = versions_read_with(_ORDER_WITH_SHOWN_PARTS, order_id, _in_environment(environment_id))
    return OrderReadAhead(order_id, environment_id, rows)


def order_shown_get(
    *, environment: Environment, order_id: int, read_ahead: OrderReadAhead | None = None
) -> tuple[Row, OrderParts]:
    """As ``order_with_parts_get``, the order and its parts as ``Row``s of the fields the
    representation shows (``orders.parts.SHOWN_FIELDS``, timestamps as its text, as the list
    reads them): what ``GET`` of an order renders. With ``read_ahead`` of the same order, its
    rows rather than a read now (when it was read for this environment)."""
    united = (
        read_ahead.rows
        if read_ahead is not None
        and (read_ahead.order_id, read_ahead.environment_id) == (order_id, environment.id)
        else None
    )
    return _order_with_parts(environment, order_id, plain=True, shown=True, united=united)


def order_with_parts_numbered_get(
    *, environment: Environment, order_id: int
) -> tuple[Order, OrderParts]:
    """As ``order_with_parts_get``, after numbering one more callback event of the order: its
    ``callback_sequence`` is incremented in place first, so the order read shows the event's
    number (``orders.events.order_event_create``, inside the event's transaction).

    The one write among these reads. The increment locks the order row until the transaction
    ends, so concurrent events of one order take their numbers in the order of their commits;
    the reads after it run once the lock is ours, and see what the previous holder committed."""
    increment = _CALLBACK_SEQUENCE.statement(order_id)
    return _order_with_parts(environment, order_id, write_first=increment)


def order_numbered_get(*, environment: Environment, order: Order) -> Order:
    """The order row alone, as ``order_with_parts_numbered_get`` reads it after the same
    increment: for a further event of ``order`` in the transaction of an earlier one, whose
    parts it reuses (``orders.events.PartsKept``)."""
    current = _CALLBACK_SEQUENCE.row(order.id)
    if current is None or current.environment_id != environment.id:
        raise EntityNotFound(f"No order {order.public_id} in this environment.")
    return current  # type: ignore[no-any-return]


def _order_with_parts(
    environment: Environment,
    order_id: int,
    *,
    write_first: Statement | None = None,
    plain: bool = False,
    shown: bool = False,
    united: Sequence[Any] | None = None,
) -> tuple[Any, OrderParts]:
    read, first, joins = (
        (_ORDER_WITH_SHOWN_PARTS, _SHOWN_ORDER_ITEMS_ASSETS, _SHOWN_PART_JOINS)
        if shown
        else (_ORDER_WITH_PARTS, _ORDER_ITEMS_ASSETS, _PART_JOINS)
    )
    if united is None:  # else read already (an ``OrderReadAhead``'s rows)
        # The API's read (``shown``) narrowed to the key's environment; the other callers
        # name orders the service found itself.
        statement = read.statement([order_id], _in_environment(environment.id) if shown else None)
        (united,) = _reads_together([statement], write_first=write_first)
    order_rows, *rest = read.split(united)
    rows = first.instances(order_rows, plain=plain)
    if not rows or rows[0][0].environment_id != environment.id:
        raise EntityNotFound(f"No order {Order(id=order_id).public_id} in this environment.")
    order = rows[0][0]
    parts = {order.id: OrderParts()}
    _parts_fill(parts, rows, rest, plain=plain, joins=joins)
    return order, parts[order.id]


def order_items_get(*, order: Order) -> tuple[list[OrderItem], dict[int, list[Asset]]]:
    """The order's items by position and their assets by item id (in position order)."""
    (rows,) = _reads_together([_ITEMS_ASSETS.statement([order.id])])
    items: list[OrderItem] = []
    assets: dict[int, list[Asset]] = {}
    for item, asset in _ITEMS_ASSETS.instances(rows):
        _grouped(items, assets, item, asset)
    return items, assets


def order_allocation_parts(*, order: Order) -> OrderParts:
    """What allocating the order reads: its items with their assets, its shipments (it has
    some once allocated) and its issues; its charges are left empty."""
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
    ``orders.lab_orders.lab_order`` sends and a step asks the labs."""
    joins = (_SHIPMENTS, _ITEMS_ASSETS, _FILES, _SHIPMENT_LABS)
    shipments, items_assets, files, labs = _reads_together(
        [join.statement([order.id]) for join in joins]
    )
    parts = ShipmentParts()
    for (shipment,) in _SHIPMENTS.instances(shipments):
        if shipment.status != ShipmentStatus.CANCELLED:
            shipment.order = order
            parts.shipments.append(shipment)
    items: list[OrderItem] = []
    for item, asset in _ITEMS_ASSETS.instances(items_assets):
        _grouped(items, parts.assets, item, asset)
    by_shipment: dict[int | None, list[OrderItem]] = {}
    for item in items:
        by_shipment.setdefault(item.shipment_id, []).append(item)
    for shipment in parts.shipments:  # a reprint is made of the items of what it reprints
        parts.items[shipment.id] = by_shipment.get(items_shipment_id(shipment), [])
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


def order_list(*, environment: Environment, filters: OrderFilter) -> tuple[list[Row], bool]:
    """A page of orders (``Row``s of the fields the representation shows), newest (highest id)
    first, and whether more follow (their parts come from ``order_parts``).

    ``before_id`` (the cursor of ``nextUrl``) starts the page after that id, so a deep page
    costs an index seek rather than skipping every row before it.
    """
    if filters.status in EMPTY_STATUSES:
        return [], False
    conditions: list[tuple[str, str, Any]] = [("environment", "exact", environment.id)]
    if filters.status is not None:
        conditions.append(("stage", "exact", LIST_STATUS_STAGES[filters.status]))
    if filters.created_from is not None:
        conditions.append(("created", "gt", filters.created_from))
    if filters.created_to is not None:
        conditions.append(("created", "lt", filters.created_to))
    if filters.order_ids:
        conditions.append(("pk", "in", filters.order_ids))
    if filters.merchant_references:
        conditions.append(("merchant_reference", "in", filters.merchant_references))
    if filters.before_id is not None:
        conditions.append(("pk", "lt", filters.before_id))
        offset = 0
    else:
        offset = filters.skip
    page = _ORDER_PAGE.rows(conditions, limit=filters.top + 1, offset=offset)
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
