"""Every field the service sends is declared in its document: real answers of each document's
operations, checked against their documented schema with no undeclared property allowed, as a
client generated from the document would read them."""

from typing import Any

import pytest
from rest_framework.test import APIClient

from orders.models import Shipment
from tests.support.openapi import MERCHANT_DOCUMENT, STAFF_DOCUMENT, body_errors, response_schema
from tests.support.orders import book_item, order_at_labs, order_body

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]

SLIP = "https://files.example.com/slip.pdf"
POSTCARD = "https://files.example.com/postcard.png"


def undeclared(document: dict[str, Any], path: str, method: str, body: Any) -> list[str]:
    return body_errors(document, response_schema(document, path, method), body, strict=True)


def test_the_merchant_operations_answers_declare_every_field(sandbox_api: APIClient) -> None:
    order = order_at_labs(
        sandbox_api,
        two_shipments=True,
        omsId=42,
        packingSlip={"url": SLIP},
        branding={"postcard": {"url": POSTCARD}},
    )
    order_path = f"/v4.0/orders/{order.public_id}"
    answers = {
        ("/v4.0/orders", "post"): sandbox_api.post(
            "/v4.0/orders", order_body(items=[book_item()]), format="json"
        ),
        ("/v4.0/orders", "get"): sandbox_api.get("/v4.0/orders"),
        ("/v4.0/orders/{orderId}", "get"): sandbox_api.get(order_path),
        ("/v4.0/orders/{orderId}/actions", "get"): sandbox_api.get(f"{order_path}/actions"),
        ("/v4.0/orders/{orderId}/actions/updateMetadata", "post"): sandbox_api.post(
            f"{order_path}/actions/updateMetadata", {"metadata": {"a": 1}}, format="json"
        ),
        ("/v4.0/quotes", "post"): sandbox_api.post(
            "/v4.0/quotes",
            {
                "destinationCountryCode": "US",
                "items": [
                    {
                        "sku": "GLOBAL-CAN-10X10",
                        "copies": 1,
                        "attributes": {"wrap": "ImageWrap"},
                        "assets": [{"printArea": "default"}],
                    }
                ],
            },
            format="json",
        ),
        ("/v4.0/products", "get"): sandbox_api.get("/v4.0/products"),
        ("/v4.0/products/{sku}", "get"): sandbox_api.get("/v4.0/products/BOOK-A4-L-HARD-M"),
        ("/v4.0/products/spine", "post"): sandbox_api.post(
            "/v4.0/products/spine",
            {"sku": "BOOK-A4-L-HARD-M", "numberOfPages": 40},
            format="json",
        ),
        ("/v4.0/orders/{orderId}/actions/cancel", "post"): sandbox_api.post(
            f"{order_path}/actions/cancel"
        ),
    }

    shown = answers[("/v4.0/orders/{orderId}", "get")].json()["order"]
    assert len(shown["shipments"]) == 2 and shown["charges"] and shown["branding"]
    for (path, method), response in answers.items():
        assert response.status_code == 200, (path, response.content[:300])
        assert undeclared(MERCHANT_DOCUMENT, path, method, response.json()) == [], (path, method)


def test_the_staff_operations_answers_declare_every_field(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    order = order_at_labs(
        sandbox_api, packingSlip={"url": SLIP}, branding={"postcard": {"url": POSTCARD}}
    )
    shipment = Shipment.objects.get(order=order)
    shipment_path = f"/v4.0/orders/{order.public_id}/shipments/{shipment.public_id}"
    answers = {
        ("/v4.0/orders/{orderId}/shipments/{shipmentId}/maptojson", "get"): staff_api.get(
            f"{shipment_path}/maptojson"
        ),
        (
            "/v4.0/orders/{orderId}/shipments/{shipmentId}/fulfilmentLocationCapabilities",
            "get",
        ): staff_api.get(f"{shipment_path}/fulfilmentLocationCapabilities"),
        ("/v4.0/orders/{orderId}/shipments/{shipmentId}/hold", "post"): staff_api.post(
            f"{shipment_path}/hold"
        ),
        ("/v4.0/fulfilmentLocations/{labCode}/capabilities", "get"): staff_api.get(
            f"/v4.0/fulfilmentLocations/{shipment.lab_code}/capabilities"
        ),
        ("/v4.0/micro-ui/bulk-resubmission/form-options", "get"): staff_api.get(
            "/v4.0/micro-ui/bulk-resubmission/form-options"
        ),
    }

    mapped = answers[("/v4.0/orders/{orderId}/shipments/{shipmentId}/maptojson", "get")].json()
    assert mapped["packing_slip"] == SLIP and mapped["branding"] == {"postcard": POSTCARD}
    for (path, method), response in answers.items():
        assert response.status_code == 200, (path, response.content[:300])
        assert undeclared(STAFF_DOCUMENT, path, method, response.json()) == [], (path, method)


def test_an_empty_callback_url_is_still_taken_as_none(sandbox_api: APIClient) -> None:
    # The document types callbackUrl once (a URL or null); an empty string stays accepted.
    response = sandbox_api.post("/v4.0/orders", order_body(callbackUrl=""), format="json")

    assert response.status_code == 200, response.content
    assert response.json()["order"]["callbackUrl"] is None
