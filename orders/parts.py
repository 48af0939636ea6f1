"""The rows of an order that its representation shows, loaded apart from the order."""

from dataclasses import dataclass, field

from django.db.models import Model

from common.joined import Row
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


def items_shipment_id(shipment: Shipment | Row) -> int:
    """The shipment whose items ``shipment`` (an instance or a ``Row``) makes: the shipment it
    reprints (``Shipment.reprint_of``), else itself."""
    return int(shipment.reprint_of_id or shipment.id)


# The fields of each model that ``orders.representation`` reads (besides the key and
# ``public_id``), and the foreign keys its parts are grouped by: what the list reads.
SHOWN_FIELDS: dict[type[Model], tuple[str, ...]] = {
    Order: (
        "oms_id",
        "created",
        "last_updated",
        "callback_url",
        "merchant_reference",
        "shipping_method",
        "idempotency_key",
        "stage",
        "download_assets",
        "allocate_production_location",
        "print_ready_assets_prepared",
        "in_production",
        "shipping",
        "recipient_name",
        "recipient_email",
        "recipient_phone",
        "address_line1",
        "address_line2",
        "address_postal_or_zip_code",
        "address_country_code",
        "address_town_or_city",
        "address_state_or_county",
        "packing_slip_url",
        "packing_slip_status",
        "branding",
        "metadata",
        "tag",
        "us_sales_tax_already_collected",
    ),
    OrderItem: (
        "order",
        "oms_id",
        "status",
        "merchant_reference",
        "sku",
        "copies",
        "sizing",
        "thumbnail",
        "attributes",
        "spine",
        "recipient_cost_amount",
        "recipient_cost_currency",
        "shipment",
        "availability",
    ),
    Asset: ("item", "oms_id", "print_area", "status", "url", "thumbnail", "md5_hash", "page_count"),
    Shipment: (
        "order",
        "status",
        "carrier_name",
        "carrier_service",
        "tracking_url",
        "tracking_number",
        "dispatch_date",
        "lab_country_code",
        "lab_code",
        "reprint_of",
    ),
    Charge: (
        "order",
        "charge_type",
        "service_invoice_number",
        "currency",
        "total_cost",
        "total_tax",
    ),
    ChargeItem: ("charge", "item", "shipment", "cost", "charge_type"),
    OrderIssue: (
        "order",
        "object_id",
        "error_code",
        "description",
        "authorisation_url",
        "payment_amount",
        "payment_currency",
    ),
}


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
