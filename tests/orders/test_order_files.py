"""The packing slip and branding files: downloaded and checked like assets (guarded client,
attempts, issues), their statuses shown, sent to the lab; a spine only where the product has one.
"""

import json
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from orders.models import Order, OrderFile, PipelineStep, Shipment
from orders.pipeline.state_machine import order_advance
from tests.support.images import jpeg_bytes, pdf_bytes, png_bytes
from tests.support.orders import book_item, fetch, order_at_labs, order_body, pk
from tests.support.pipeline import advance_to, make_due
from tests.support.servers import serve
from webhooks.models import CallbackEvent

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]

SLIP = "https://files.example.com/slip.pdf"
POSTCARD = "https://files.example.com/postcard.png"


def photo_items(httpserver: HTTPServer) -> list[dict[str, Any]]:
    url = serve(httpserver, "/photo.jpg", jpeg_bytes(), "image/jpeg")
    return [{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}]


def create(api: APIClient, body: dict[str, Any]) -> str:
    response = api.post("/v4.0/orders", body, format="json")
    assert response.status_code == 200, response.content
    return str(response.json()["order"]["id"])


def test_packing_slip_and_branding_are_downloaded_checked_and_shown_complete(
    sandbox_api: APIClient, httpserver: HTTPServer, settings: Any
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    slip = serve(httpserver, "/slip.pdf", pdf_bytes(1), "application/pdf")
    postcard = serve(httpserver, "/postcard.png", png_bytes(), "image/png")
    order_id = create(
        sandbox_api,
        order_body(
            items=photo_items(httpserver),
            packingSlip={"url": slip},
            branding={"postcard": {"url": postcard}},
        ),
    )
    created = fetch(sandbox_api, order_id)

    advance_to(order_id, PipelineStep.ALLOCATE)

    shown = fetch(sandbox_api, order_id)
    assert created["packingSlip"] == {"url": slip, "status": "InProgress"}
    assert created["branding"] == {"postcard": {"url": postcard, "status": "InProgress"}}
    assert shown["packingSlip"] == {"url": slip, "status": "Complete"}
    assert shown["branding"] == {"postcard": {"url": postcard, "status": "Complete"}}
    assert shown["status"]["details"]["downloadAssets"] == "Complete"
    assert shown["status"]["issues"] == []
    files = OrderFile.objects.filter(order_id=pk(order_id)).order_by("kind")
    assert [(f.kind, f.name, f.download_attempts, f.source_size) for f in files] == [
        ("Branding", "postcard", 1, len(png_bytes())),
        ("PackingSlip", "", 1, len(pdf_bytes(1))),
    ]
    assert [f.source_file.rsplit(".", 1)[1] for f in files] == ["png", "pdf"]


def test_a_failing_packing_slip_or_branding_file_is_retried_then_fails_the_download(
    sandbox_api: APIClient, httpserver: HTTPServer, settings: Any
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.ASSET_DOWNLOAD_ATTEMPTS = 2
    settings.ASSET_PERMANENT_RETRY_SECONDS = [0.0]  # a 404: two attempts, no wait between
    httpserver.expect_request("/slip.pdf").respond_with_data("gone", status=404)
    slip = httpserver.url_for("/slip.pdf")
    # Failures that may pass later (a missing or unavailable file) are retried; a file that
    # arrives but is not an image or PDF fails at once (see test_pipeline).
    httpserver.expect_request("/flyer.png").respond_with_data("busy", status=503)
    flyer = httpserver.url_for("/flyer.png")
    order_id = create(
        sandbox_api,
        order_body(
            items=photo_items(httpserver),
            packingSlip={"url": slip},
            branding={"flyer": {"url": flyer}},
        ),
    )

    order_advance(order_id=pk(order_id))
    retrying = fetch(sandbox_api, order_id)
    make_due(order_id)
    OrderFile.objects.filter(order_id=pk(order_id)).update(next_attempt_at=None)
    advance_to(order_id, PipelineStep.FAILED)
    failed = fetch(sandbox_api, order_id)

    assert retrying["packingSlip"] == {"url": slip, "status": "InProgress"}
    assert retrying["branding"] == {"flyer": {"url": flyer, "status": "InProgress"}}
    assert retrying["status"]["details"]["downloadAssets"] == "InProgress"
    assert [(i["objectId"], i["errorCode"]) for i in retrying["status"]["issues"]] == [
        (order_id, "order.packingSlip.NotDownloaded"),
        (order_id, "order.branding.NotDownloaded"),
    ]
    assert failed["packingSlip"] == {"url": slip, "status": "Error"}
    assert failed["branding"] == {"flyer": {"url": flyer, "status": "Error"}}
    assert failed["status"]["details"]["downloadAssets"] == "Error"
    assert failed["status"]["issues"] == [
        {
            "objectId": order_id,
            "errorCode": "order.packingSlip.FailedToDownloaded",
            "description": f"The packing slip ({slip}) could not be downloaded after 2 "
            f"attempt(s): {OrderFile.objects.get(kind='PackingSlip').last_error}",
        },
        {
            "objectId": order_id,
            "errorCode": "order.branding.FailedToDownloaded",
            "description": f"The branding 'flyer' ({flyer}) could not be downloaded after 2 "
            f"attempt(s): The server answered HTTP 503 SERVICE UNAVAILABLE for {flyer}.",
        },
    ]
    assert "404" in OrderFile.objects.get(kind="PackingSlip").last_error


def test_a_spine_on_a_product_without_one_is_refused_and_nothing_is_stored(
    sandbox_api: APIClient,
) -> None:
    body = order_body()
    body["items"][0]["spine"] = {"text": "Holiday 2026", "backgroundColourHexCode": "#000000"}

    response = sandbox_api.post("/v4.0/orders", body, format="json")

    assert response.status_code == 400
    assert response.json()["outcome"] == "ValidationFailed"
    assert response.json()["data"]["failures"] == {
        "items[0].spine": [
            {
                "code": "SpineNotSupported",
                "description": "GLOBAL-CAN-10X10 has no spine; send the item without one.",
            }
        ]
    }
    assert not Order.objects.exists()


def test_a_spine_is_refused_with_every_other_failure_and_accepted_on_a_photobook(
    sandbox_api: APIClient,
) -> None:
    photo = {"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": SLIP}]}
    wrong = order_body(
        items=[
            {**photo, "spine": {"text": "Holiday"}},
            {**book_item(), "spine": {"text": "Holiday"}, "attributes": {"x": "y"}},
        ]
    )
    book = order_body(items=[{**book_item(), "spine": {"text": "Holiday", "textSizePx": 12}}])

    refused = sandbox_api.post("/v4.0/orders", wrong, format="json")
    accepted = sandbox_api.post("/v4.0/orders", book, format="json")

    assert refused.status_code == 400
    assert sorted(refused.json()["data"]["failures"]) == ["items[0].spine", "items[1].attributes.x"]
    assert accepted.status_code == 200
    assert accepted.json()["order"]["items"][0]["spine"]["text"] == "Holiday"


def test_the_simulators_lab_order_and_maptojson_carry_the_packing_slip_and_branding(
    sandbox_api: APIClient, staff_api: APIClient
) -> None:
    order = order_at_labs(
        sandbox_api,
        packingSlip={"url": SLIP},
        branding={"postcard": {"url": POSTCARD}, "sticker_exterior_round": {"url": POSTCARD}},
    )
    shipment = Shipment.objects.get(order=order)

    mapped = staff_api.get(
        f"/v4.0/orders/{order.public_id}/shipments/{shipment.public_id}/maptojson"
    )

    assert mapped.status_code == 200
    body = mapped.json()
    assert body["packing_slip"] == SLIP
    assert body["branding"] == {"postcard": POSTCARD, "sticker_exterior_round": POSTCARD}
    assert body["shipment_id"] == shipment.public_id


def test_an_order_without_branding_shows_branding_null(
    sandbox_api: APIClient, httpserver: HTTPServer, settings: Any
) -> None:
    # decisions.md, Orders: an order without branding shows `"branding": null` (a published
    # client requires the key and accepts null; `{}` breaks it). Created, read, listed and
    # called back alike.
    settings.ALLOW_PRIVATE_URLS = True
    created = sandbox_api.post(
        "/v4.0/orders", order_body(items=photo_items(httpserver)), format="json"
    ).json()["order"]
    assert "branding" in created and created["branding"] is None
    plain = created["id"]
    postcard = serve(httpserver, "/postcard.png", png_bytes(), "image/png")
    branded = create(
        sandbox_api,
        order_body(
            items=photo_items(httpserver),
            merchantReference="branded",
            branding={"postcard": {"url": postcard}},
        ),
    )
    advance_to(plain, PipelineStep.ALLOCATE)

    listed = {o["id"]: o for o in sandbox_api.get("/v4.0/orders").json()["orders"]}
    assert fetch(sandbox_api, plain)["branding"] is None
    assert listed[plain]["branding"] is None
    assert set(listed[branded]["branding"]) == {"postcard"}
    assert fetch(sandbox_api, branded)["branding"]["postcard"]["url"] == postcard
    events = CallbackEvent.objects.filter(subject=plain)
    assert events.exists()
    assert all(json.loads(bytes(e.body))["data"]["order"]["branding"] is None for e in events)
