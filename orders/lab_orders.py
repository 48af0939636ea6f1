"""What a lab is sent for a shipment (the connectors' ``LabOrder``)."""

from django.conf import settings

from common.files import file_url
from labs.connectors import LabOrder, LabOrderItem
from orders.models import OrderFile, OrderFileKind, Shipment
from orders.parts import ShipmentParts
from orders.representation import order_recipient, shipment_address


def lab_file_url(name: str, base_url: str) -> str | None:
    """A print file's URL for its lab: signed, and valid long enough for any production."""
    return file_url(name, base_url, max_age_seconds=settings.LAB_FILE_URL_DAYS * 24 * 3600)


def lab_order(shipment: Shipment, parts: ShipmentParts | None = None) -> LabOrder:
    """The shipment's lab order: the order's recipient, at the shipment's own address when
    staff changed it (``updateAddress`` on one shipment of several), and the order's packing
    slip and branding files (the checked copies this service stored, as for print files).

    Its items, their assets and the order's files are read here unless ``parts`` (from
    ``orders.selectors.order_shipment_parts``) has them."""
    order = shipment.order
    base_url = order.environment.base_url
    if parts is None:
        items = list(shipment.items.all())
        assets = {item.id: list(item.assets.all()) for item in items}
        files = list(order.files.all())
    else:
        items, assets, files = parts.items[shipment.id], parts.assets, parts.files
    return LabOrder(
        shipment_id=shipment.public_id,
        order_id=order.public_id,
        lab_code=shipment.lab_code,
        shipping_method=shipment.shipping_method,
        recipient={**order_recipient(order), "address": shipment_address(shipment)},
        items=tuple(
            LabOrderItem(
                item_id=item.public_id,
                sku=item.sku,
                copies=item.copies,
                attributes=item.attributes,
                files={
                    a.print_area: lab_file_url(a.print_file, base_url) or a.url
                    for a in assets[item.id]
                },
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


def _file_url(order_file: OrderFile, base_url: str) -> str:
    return lab_file_url(order_file.source_file, base_url) or order_file.url
