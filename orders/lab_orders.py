"""What a lab is sent for a shipment (the connectors' ``LabOrder``)."""

from collections.abc import Mapping

from django.conf import settings

from common.files import file_url
from labs.catalogue import catalogue_snapshot
from labs.connectors import LabOrder, LabOrderItem
from orders.artwork.spine import SPINE_AREA
from orders.models import Asset, OrderFile, OrderFileKind, OrderItem, Shipment
from orders.parts import ShipmentParts, items_shipment_id
from orders.representation import shipment_recipient
from products.models import Product
from products.validation import resolve_attributes


def lab_file_url(name: str, base_url: str) -> str | None:
    """A print file's URL for its lab: signed, and valid long enough for any production."""
    return file_url(name, base_url, max_age_seconds=settings.LAB_FILE_URL_DAYS * 24 * 3600)


def item_attributes(
    item: OrderItem, products: Mapping[str, Product] | None = None
) -> dict[str, str]:
    """The item's canonical attributes, as a lab needs them: every attribute of its product in
    the catalogue's spelling, defaults filled in for those the order did not name (the order
    stores only those it named). A product gone from the catalogue, or one whose values
    changed since the order: the item's own."""
    catalogue = catalogue_snapshot().products if products is None else products
    product = catalogue.get(item.sku.strip().upper())
    if product is None:
        return dict(item.attributes)
    try:
        return resolve_attributes(product=product, attributes=item.attributes)
    except StopIteration:  # a value the catalogue no longer lists
        return dict(item.attributes)


def lab_order(shipment: Shipment, parts: ShipmentParts | None = None) -> LabOrder:
    """The shipment's lab order: the recipient its lab holds (``shipment_recipient``: its own
    when its lab kept another than the order's, whole), and the order's packing slip and
    branding files (the checked copies this service stored, as for print files).

    Its items (a reprint's: those of the shipment it reprints), their assets and the order's
    files are read here unless ``parts`` (from ``orders.selectors.order_shipment_parts``) has
    them."""
    order = shipment.order
    base_url = order.environment.base_url
    if parts is None:
        items = list(OrderItem.objects.filter(shipment_id=items_shipment_id(shipment)))
        assets = {item.id: list(item.assets.all()) for item in items}
        files = list(order.files.all())
    else:
        items, assets, files = parts.items[shipment.id], parts.assets, parts.files
    products = catalogue_snapshot().products
    return LabOrder(
        shipment_id=shipment.public_id,
        order_id=order.public_id,
        lab_code=shipment.lab_code,
        shipping_method=shipment.shipping_method,
        recipient=shipment_recipient(shipment),
        items=tuple(
            LabOrderItem(
                item_id=item.public_id,
                sku=item.sku,
                copies=item.copies,
                attributes=item_attributes(item, products),
                files=_item_files(item, assets[item.id], base_url),
                spine=item.spine or None,
            )
            for item in items
        ),
        packing_slip=next(
            (_file_url(f, base_url) for f in files if f.kind == OrderFileKind.PACKING_SLIP), ""
        ),
        branding={
            f.name: _file_url(f, base_url) for f in files if f.kind == OrderFileKind.BRANDING
        },
        reference=shipment.lab_order_reference,
        held_since=shipment.held_since,
        held_seconds=shipment.held_seconds,
    )


def _item_files(item: OrderItem, assets: list[Asset], base_url: str) -> dict[str, str]:
    """Print area → print file URL: the assets' and, for a photobook whose spine was drawn
    (no ``spine`` asset), the drawn spine."""
    # Never the merchant's original: an unprocessed file is no print file (a submission after
    # retention deleted them renders them again first: ``steps.prepare``).
    files = {a.print_area: lab_file_url(a.print_file, base_url) or "" for a in assets}
    if item.spine_print_file and SPINE_AREA not in files:
        files[SPINE_AREA] = lab_file_url(item.spine_print_file, base_url) or ""
    return files


def _file_url(order_file: OrderFile, base_url: str) -> str:
    return lab_file_url(order_file.source_file, base_url) or order_file.url
