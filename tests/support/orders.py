"""Orders as merchants send them, created and read through the API.

``order_body`` is the one order request the tests start from; ``order_create_via_api`` and
``order_via_api`` post it (changed as a test needs) and return the public id or the stored row.
"""

import copy
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from orders.models import Asset, Order, OrderItem, Shipment
from orders.pipeline.steps.allocate import order_allocate
from tests.support.documents import document_rewritten
from tests.support.images import jpeg_bytes, pdf_bytes
from tests.support.servers import serve
from webhooks.models import CallbackEvent

TYPE = "com.service.order"

BASE_ORDER: dict[str, Any] = {
    "merchantReference": "MR-1001",
    "shippingMethod": "Standard",
    "recipient": {
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "phoneNumber": "+44 7700 900123",
        "address": {
            "line1": "1 Analytical Row",
            "line2": "Flat 2",
            "postalOrZipCode": "SW1A 1AA",
            "countryCode": "GB",
            "townOrCity": "London",
            "stateOrCounty": "Greater London",
        },
    },
    "items": [
        {
            "merchantReference": "item-1",
            "sku": "GLOBAL-CAN-10X10",
            "copies": 2,
            "sizing": "fillPrintArea",
            "attributes": {"wrap": "ImageWrap"},
            "assets": [{"printArea": "default", "url": "https://images.example.com/cat.jpg"}],
        }
    ],
    "metadata": {"channel": "web"},
}


def order_body(**changes: Any) -> dict[str, Any]:
    """The base order request with top-level ``changes``."""
    body = copy.deepcopy(BASE_ORDER)
    body.update(changes)
    return body


def book_item(pages: int | None = 40) -> dict[str, Any]:
    asset: dict[str, Any] = {"printArea": "default", "url": "https://images.example.com/book.pdf"}
    if pages is not None:
        asset["pageCount"] = pages
    return {
        "sku": "BOOK-A4-L-HARD-M",
        "copies": 1,
        "assets": [asset, {"printArea": "spine", "url": "https://images.example.com/spine.jpg"}],
    }


def pk(public_id: str) -> int:
    """The primary key inside a public id (``ord_123`` is 123)."""
    return int(public_id.split("_", 1)[1])


def order_create_via_api(
    api: APIClient,
    body: dict[str, Any] | None = None,
    *,
    outcome: str = "Created",
    **changes: Any,
) -> str:
    """Post ``body`` (by default the base order with ``changes``); the new order's public id.

    The request must succeed with ``outcome``.
    """
    sent = order_body(**changes) if body is None else body
    response = api.post("/v4.0/orders", sent, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["outcome"] == outcome
    return str(response.json()["order"]["id"])


def order_via_api(
    api: APIClient,
    body: dict[str, Any] | None = None,
    *,
    outcome: str = "Created",
    **changes: Any,
) -> Order:
    """As ``order_create_via_api``, but the stored order."""
    order_id = order_create_via_api(api, body, outcome=outcome, **changes)
    return Order.objects.get(id=pk(order_id))


def fetch(api: APIClient, order_id: str) -> dict[str, Any]:
    """The order as ``GET /v4.0/orders/{id}`` shows it."""
    response = api.get(f"/v4.0/orders/{order_id}")
    assert response.status_code == 200, response.content
    return dict(response.json()["order"])


def stage_is(api: APIClient, order_id: str, stage: str) -> Callable[[], dict[str, Any] | None]:
    """A check for ``wait_for``: the order as shown once its stage is ``stage``."""

    def check() -> dict[str, Any] | None:
        order = fetch(api, order_id)
        return order if order["status"]["stage"] == stage else None

    return check


def photo_order(api: APIClient, httpserver: HTTPServer, name: str, **changes: Any) -> str:
    """One 4x6 print of a JPEG served at ``/<name>.jpg``."""
    url = serve(httpserver, f"/{name}.jpg", jpeg_bytes(), "image/jpeg")
    items = [{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}]
    return order_create_via_api(api, items=items, **changes)


def split_order(api: APIClient, httpserver: HTTPServer, **changes: Any) -> str:
    """A photobook (made by gb3) and a framed print (made by gb2): two shipments, two labs."""
    items = [
        {
            "sku": "BOOK-A4-L-HARD-M",
            "copies": 1,
            "assets": [
                {
                    "url": serve(httpserver, "/book.pdf", pdf_bytes(40), "application/pdf"),
                    "pageCount": 40,
                },
                {
                    "printArea": "spine",
                    "url": serve(httpserver, "/spine.jpg", jpeg_bytes(60, 900), "image/jpeg"),
                },
            ],
        },
        {
            "sku": "GLOBAL-CFPM-12X16",
            "copies": 1,
            "attributes": {"color": "black"},
            "assets": [{"url": serve(httpserver, "/frame.jpg", jpeg_bytes(), "image/jpeg")}],
        },
    ]
    return order_create_via_api(api, items=items, **changes)


def quote_for(api: APIClient, body: dict[str, Any]) -> dict[str, Any]:
    """The one quote ``POST /v4.0/quotes`` gives for the items of an order request."""
    items = [
        {k: v for k, v in item.items() if k in ("sku", "copies", "attributes", "assets")}
        for item in body["items"]
    ]
    for item in items:
        item["assets"] = [
            {
                "printArea": "default",
                **{k: v for k, v in a.items() if k in ("printArea", "pageCount")},
            }
            for a in item["assets"]
        ]
    response = api.post(
        "/v4.0/quotes",
        {
            "shippingMethod": body["shippingMethod"],
            "destinationCountryCode": body["recipient"]["address"]["countryCode"],
            "items": items,
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    [quote] = response.json()["quotes"]
    return dict(quote)


def charge_totals(order: dict[str, Any]) -> dict[str, dict[str, str]]:
    """An order's charges as shown, by charge type."""
    return {c["chargeType"]: c["totalCost"] for c in order["charges"]}


def events_of(order_id: str) -> list[dict[str, Any]]:
    """The CloudEvents written for an order, in sequence."""
    return [
        json.loads(bytes(e.body))
        for e in CallbackEvent.objects.filter(subject=order_id).order_by("sequence")
    ]


def order_allocated(api: APIClient, **changes: Any) -> Order:
    order = order_via_api(api, **changes)
    with transaction.atomic():
        assert order_allocate(order=order)
    return order


def order_at_labs(api: APIClient, *, two_shipments: bool = False, **changes: Any) -> Order:
    """An order whose shipments its labs accepted just now (one, or two at different labs)."""
    if two_shipments:
        changes.setdefault("items", [order_body()["items"][0], book_item()])
    order = order_allocated(api, **changes)
    for shipment in Shipment.objects.filter(order=order):
        shipment.submitted_at = timezone.now()
        shipment.lab_order_reference = f"SIM-{shipment.lab_code.upper()}-{shipment.id}"
        shipment.save(update_fields=["submitted_at", "lab_order_reference"])
    return order


def submitted_order_with_files(api: APIClient, *, days_ago: int) -> tuple[Order, list[str]]:
    """An order submitted ``days_ago`` days ago whose asset has a source, a print file and a
    thumbnail in the media storage (the item showing the thumbnail too), and those files'
    names, as retention finds one."""
    order = order_via_api(api)
    asset = Asset.objects.get(item__order=order)
    names = [
        default_storage.save(f"orders/{order.id}/assets/{asset.id}/{kind}", ContentFile(b"data"))
        for kind in ("source.jpg", "print.jpg", "thumbnail.jpg")
    ]
    Asset.objects.filter(id=asset.id).update(
        source_file=names[0], print_file=names[1], thumbnail=names[2]
    )
    OrderItem.objects.filter(order=order).update(thumbnail=names[2])
    Order.objects.filter(id=order.id).update(submitted_at=timezone.now() - timedelta(days=days_ago))
    document_rewritten(order)
    return order, names
