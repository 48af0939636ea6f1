"""The rows of an order that its representation shows, loaded apart from the order."""

from dataclasses import dataclass, field

from labs.models import Lab
from orders.models import (
    Asset,
    Charge,
    ChargeItem,
    Order,
    OrderFile,
    OrderIssue,
    OrderItem,
    Shipment,
)


def items_shipment_id(shipment: Shipment) -> int:
    """The shipment whose items ``shipment`` makes: the shipment it
    reprints (``Shipment.reprint_of``), else itself."""
    return int(shipment.reprint_of_id or shipment.id)


@dataclass
class OrderParts:
    """The rows of one order that its representation shows, each list in display order."""

    items: list[OrderItem] = field(default_factory=list)
    assets: dict[int, list[Asset]] = field(default_factory=dict)  # by item id
    shipments: list[Shipment] = field(default_factory=list)
    charges: list[Charge] = field(default_factory=list)
    charge_items: dict[int, list[ChargeItem]] = field(default_factory=dict)  # by charge id
    issues: list[OrderIssue] = field(default_factory=list)

    @classmethod
    def of_prefetched(cls, order: Order) -> "OrderParts":
        """From an order read with ``orders_with_parts`` (its prefetched relations)."""
        items = list(order.items.all())
        charges = list(order.charges.all())
        return cls(
            items=items,
            assets={item.id: list(item.assets.all()) for item in items},
            shipments=list(order.shipments.all()),
            charges=charges,
            charge_items={charge.id: list(charge.items.all()) for charge in charges},
            issues=list(order.issues.all()),
        )


@dataclass
class ShipmentParts:
    """An order's shipments that are not cancelled, with what their lab orders are made of."""

    shipments: list[Shipment] = field(default_factory=list)  # in created order
    items: dict[int, list[OrderItem]] = field(default_factory=dict)  # by shipment id (reprints too)
    assets: dict[int, list[Asset]] = field(default_factory=dict)  # by item id
    files: list[OrderFile] = field(default_factory=list)  # the order's own, by id
    labs: dict[str, Lab] = field(default_factory=dict)  # the shipments' labs, by code
