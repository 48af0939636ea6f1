"""The order as the API shows it: what ``orders.document`` stores as the order's document
(the body of ``GET /v4.0/orders/{id}``, list pages, callbacks).

A plain function over instances already loaded (``OrderParts``, by default the order's
prefetched relations: ``orders.selectors.orders_with_parts``); it reads nothing from the
database itself.
"""

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings

from common.files import file_url as signed_file_url
from common.files import url_expiry
from common.ids import PREFIXES, format_id
from orders.models import Asset, Charge, ChargeItem, Order, OrderItem, Shipment, ShipmentStatus
from orders.parts import OrderParts, items_shipment_id


def money(amount: Decimal, currency: str) -> dict[str, str]:
    return {"amount": f"{amount.quantize(Decimal('0.01'))}", "currency": currency}


def iso(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with a ``Z``, to the millisecond."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def file_url(name: str, base_url: str) -> str | None:
    """A signed URL of a stored file shown to the merchant (thumbnails); None for none."""
    return Urls(base_url)(name)


class Urls:
    """How an order's file URLs are made: absolute under ``base_url``, signed to expire at
    ``expires`` (Unix time; by default ``settings.FILE_URL_DAYS`` from now, rounded up to a
    day); ``signed`` tells whether any was made."""

    def __init__(self, base_url: str, expires: int | None = None) -> None:
        self.base_url = base_url
        self.expires = expires or url_expiry(settings.FILE_URL_DAYS * 24 * 3600)
        self.signed = False

    def __call__(self, name: str) -> str | None:
        if not name:
            return None
        self.signed = True
        return signed_file_url(name, self.base_url, expires=self.expires)


def _asset(asset: Asset, file_url: Urls) -> dict[str, Any]:
    return {
        "id": asset.public_id,
        "omsId": str(asset.oms_id) if asset.oms_id is not None else None,
        "printArea": asset.print_area,
        "status": asset.status,
        "url": asset.url,
        "thumbnailUrl": file_url(asset.thumbnail),
        "md5Hash": asset.md5_hash or None,
        "pageCount": asset.page_count,
    }


def _item(item: OrderItem, assets: list[Asset], file_url: Urls) -> dict[str, Any]:
    return {
        "id": item.public_id,
        "omsId": str(item.oms_id) if item.oms_id is not None else None,
        "status": item.status,
        "merchantReference": item.merchant_reference or None,
        "sku": item.sku,
        "copies": item.copies,
        "sizing": item.sizing,
        "thumbnailUrl": file_url(item.thumbnail),
        "attributes": item.attributes,
        "spine": item.spine,
        "assets": [_asset(a, file_url) for a in assets],
        "recipientCost": (
            money(item.recipient_cost_amount, item.recipient_cost_currency)
            if item.recipient_cost_amount is not None
            else None
        ),
    }


def _shipment(shipment: Shipment, items: list[OrderItem]) -> dict[str, Any]:
    """``items``: the order's (a reprint shows the items of the shipment it reprints)."""
    tracked = bool(shipment.tracking_number or shipment.tracking_url)
    made = items_shipment_id(shipment)
    return {
        "id": shipment.public_id,
        "status": shipment.status,
        "carrier": {"name": shipment.carrier_name, "service": shipment.carrier_service},
        "tracking": {"url": shipment.tracking_url, "number": shipment.tracking_number}
        if tracked
        else None,
        "dispatchDate": iso(shipment.dispatch_date),
        "items": [
            {"itemId": item.public_id, "availability": item.availability}
            for item in items
            if item.shipment_id == made
        ],
        "fulfillmentLocation": {
            "countryCode": shipment.lab_country_code,
            "labCode": shipment.lab_code,
        },
        "cancelled": shipment.status == ShipmentStatus.CANCELLED,
    }


def shipment_representation(shipment: Shipment) -> dict[str, Any]:
    """A shipment as an order's ``GET`` shows it."""
    return _shipment(
        shipment, list(OrderItem.objects.filter(shipment_id=items_shipment_id(shipment)))
    )


def _charge(charge: Charge, lines: list[ChargeItem]) -> dict[str, Any]:
    return {
        "id": charge.public_id,
        "chargeType": charge.charge_type,
        "serviceInvoiceNumber": charge.service_invoice_number,
        "totalCost": money(charge.total_cost, charge.currency),
        "totalTax": money(charge.total_tax, charge.currency),
        "items": [
            {
                "id": line.public_id,
                "itemId": format_id(PREFIXES["order_item"], line.item_id) if line.item_id else None,
                "shipmentId": format_id(PREFIXES["shipment"], line.shipment_id)
                if line.shipment_id
                else None,
                "cost": money(line.cost, charge.currency),
                "chargeType": line.charge_type,
            }
            for line in lines
        ],
    }


def order_recipient(order: Order) -> dict[str, Any]:
    """The recipient as stored: blank parts as empty strings (what labs and the order's own
    create request carry; ``GET`` shows blanks as null)."""
    return {
        "name": order.recipient_name,
        "email": order.recipient_email,
        "phoneNumber": order.recipient_phone,
        "address": {
            "line1": order.address_line1,
            "line2": order.address_line2,
            "postalOrZipCode": order.address_postal_or_zip_code,
            "countryCode": order.address_country_code,
            "townOrCity": order.address_town_or_city,
            "stateOrCounty": order.address_state_or_county,
        },
    }


def shipment_recipient(shipment: Shipment) -> dict[str, Any]:
    """The whole recipient the shipment's lab holds (name, email, phone and address, blanks as
    empty strings): its own when its lab kept another than the order's (a refused
    ``updateRecipient``, or staff's ``updateAddress`` on one shipment of several), else the
    order's. What the lab is sent, and what ``maptojson`` shows; never the order's GET."""
    if shipment.recipient is None:
        return order_recipient(shipment.order)
    return {**shipment.recipient, "address": dict(shipment.recipient["address"])}


def shipment_address(shipment: Shipment) -> dict[str, str]:
    """Where the shipment goes: the address of ``shipment_recipient``."""
    return dict(shipment_recipient(shipment)["address"])


def order_representation(
    order: Order, *, urls: Urls, parts: OrderParts | None = None
) -> dict[str, Any]:
    """The complete order; ``urls`` makes its file URLs. ``parts`` are its rows (by default
    its prefetched relations)."""
    if parts is None:
        parts = OrderParts.of_prefetched(order)
    items = parts.items
    issues = []
    for issue in parts.issues:
        entry: dict[str, Any] = {
            "objectId": issue.object_id,
            "errorCode": issue.error_code,
            "description": issue.description,
        }
        if issue.authorisation_url:
            entry["authorisationDetails"] = {
                "authorisationUrl": issue.authorisation_url,
                "paymentDetails": money(issue.payment_amount or Decimal(0), issue.payment_currency),
            }
        issues.append(entry)
    return {
        "id": order.public_id,
        "omsId": str(order.oms_id) if order.oms_id is not None else None,
        "created": iso(order.created),
        "lastUpdated": iso(order.last_updated),
        "callbackUrl": order.callback_url or None,
        "merchantReference": order.merchant_reference or None,
        "shippingMethod": order.shipping_method,
        "idempotencyKey": order.idempotency_key,
        "status": {
            "stage": order.stage,
            "details": {
                "downloadAssets": order.download_assets,
                "allocateProductionLocation": order.allocate_production_location,
                "printReadyAssetsPrepared": order.print_ready_assets_prepared,
                "inProduction": order.in_production,
                "shipping": order.shipping,
            },
            "issues": issues,
        },
        "charges": [_charge(c, parts.charge_items.get(c.id, [])) for c in parts.charges],
        "shipments": [_shipment(s, items) for s in parts.shipments],
        "recipient": {
            "name": order.recipient_name,
            "email": order.recipient_email or None,
            "phoneNumber": order.recipient_phone or None,
            "address": {
                "line1": order.address_line1,
                "line2": order.address_line2 or None,
                "postalOrZipCode": order.address_postal_or_zip_code,
                "countryCode": order.address_country_code,
                "townOrCity": order.address_town_or_city,
                "stateOrCounty": order.address_state_or_county or None,
            },
        },
        "items": [_item(i, parts.assets.get(i.id, []), urls) for i in items],
        "packingSlip": (
            {"url": order.packing_slip_url, "status": order.packing_slip_status or None}
            if order.packing_slip_url
            else None
        ),
        "branding": order.branding or None,
        "metadata": order.metadata,
        "tag": order.tag or None,
        "usSalesTaxAlreadyCollected": order.us_sales_tax_already_collected,
    }
