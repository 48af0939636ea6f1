"""A quote and an order of one basket agree on stock: an item out of stock at every lab is an
issue of both (CreatedWithIssues), not a 400 for one and an issue for the other."""

import pytest
from rest_framework.test import APIClient

from labs.models import LabProduct
from tests.support.orders import order_body

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]

PHOTO = {"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"printArea": "default"}]}
CANVAS = {
    "sku": "GLOBAL-CAN-10X10",
    "copies": 1,
    "attributes": {"wrap": "ImageWrap"},
    "assets": [{"printArea": "default"}],
}


def out_of_stock(sku: str) -> None:
    assert LabProduct.objects.filter(product__sku=sku).update(in_stock=False) > 0


@pytest.mark.parametrize("method", [{"shippingMethod": "Standard"}, {}])
def test_a_quote_for_a_sku_out_of_stock_answers_with_the_issue_like_the_order(
    sandbox_api: APIClient, method: dict[str, str]
) -> None:
    out_of_stock("GLOBAL-PHO-4X6")
    body = {"destinationCountryCode": "GB", "items": [CANVAS, PHOTO], **method}

    quote = sandbox_api.post("/v4.0/quotes", body, format="json")
    order = sandbox_api.post(
        "/v4.0/orders",
        order_body(
            items=[
                order_body()["items"][0],
                {"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": "https://x.test/a.jpg"}]},
            ]
        ),
        format="json",
    )

    assert quote.status_code == 200
    assert {k: v for k, v in quote.json().items() if k != "traceParent"} == {
        "outcome": "CreatedWithIssues",
        "quotes": [],
        "issues": [
            {
                "errorCode": "items.ItemUnavailable",
                "description": "items[1]: GLOBAL-PHO-4X6 is temporarily unavailable. "
                "Please contact customer services.",
            }
        ],
    }
    assert order.status_code == 200
    assert order.json()["outcome"] == "CreatedWithIssues"
    issues = order.json()["order"]["status"]["issues"]
    assert [i["errorCode"] for i in issues] == ["order.items.ItemUnavailable"]
    assert issues[0]["objectId"] == order.json()["order"]["items"][1]["id"]


def test_a_quote_is_still_refused_for_what_no_stock_would_fix(sandbox_api: APIClient) -> None:
    out_of_stock("GLOBAL-PHO-4X6")
    body = {
        "shippingMethod": "Standard",
        "destinationCountryCode": "GB",
        "items": [PHOTO, {**CANVAS, "attributes": {"wrap": "ImageWrap"}}],
    }
    LabProduct.objects.filter(product__sku="GLOBAL-CAN-10X10").delete()

    response = sandbox_api.post("/v4.0/quotes", body, format="json")

    assert response.status_code == 400
    assert response.json()["outcome"] == "ValidationFailed"
    assert list(response.json()["data"]["failures"]) == ["items[1].sku"]
    assert response.json()["data"]["failures"]["items[1].sku"][0]["code"] == "NotMade"
