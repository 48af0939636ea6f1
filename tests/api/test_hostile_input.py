"""Inputs that once reached the database or the parser unchecked: each is a 400, never a 500."""

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from api.views import csrf_failure
from merchants.models import Merchant
from merchants.services import CreatedMerchant
from orders.models import Order
from tests.support.orders import order_body, order_create_via_api

pytestmark = pytest.mark.usefixtures("catalogue")


def codes(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["outcome"] == "ValidationFailed"
    return {path: [f["code"] for f in found] for path, found in body["data"]["failures"].items()}


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('{"metadata": {"a": 1e400}}', "out of range"),
        ('{"metadata": {"a": NaN}}', "NaN"),
        ('{"metadata": {"a": -Infinity}}', "Infinity"),
        ('{"metadata": {"k": "v\\u0000"}}', "U+0000"),
        ('{"metadata": {"k\\u0000": 1}}', "U+0000"),
        ('{"metadata": {"k": "\\ud800"}}', "lone surrogates"),
        ('{"metadata": {"\\udfff": 1}}', "lone surrogates"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_unstorable_json_is_malformed(sandbox_api: APIClient, raw: str, reason: str) -> None:
    response = sandbox_api.post("/v4.0/orders", raw, content_type="application/json")
    assert codes(response) == {"body": ["MalformedJson"]}
    assert reason in response.json()["data"]["failures"]["body"][0]["description"]
    assert Order.objects.count() == 0


def test_oms_ids_must_fit_in_int64(sandbox_api: APIClient) -> None:
    body = order_body(omsId=2**63)
    body["items"][0]["omsId"] = -(2**70)
    body["items"][0]["assets"][0]["omsId"] = 2**64
    assert codes(sandbox_api.post("/v4.0/orders", body, format="json")) == {
        "omsId": ["MaxValue"],
        "items[0].omsId": ["MinValue"],
        "items[0].assets[0].omsId": ["MaxValue"],
    }
    body = order_body(omsId=2**63 - 1)
    assert sandbox_api.post("/v4.0/orders", body, format="json").status_code == 200


@pytest.mark.parametrize(
    "query",
    [
        "skip=100000000000000000000000",
        "skip=1_0",
        "top=%D9%A5",
        "createdFrom=2024-02-30T00:00:00Z",
        "createdFrom=2024-01-01T25:00:00",
        "createdTo=2024-01-01T00:00:00%2B99:00",
        "createdFrom=9999-12-31T23:59:59-23:00",
    ],
)
def test_impossible_list_parameters_are_validation_failed(
    sandbox_api: APIClient, query: str
) -> None:
    assert len(codes(sandbox_api.get(f"/v4.0/orders?{query}"))) == 1


def test_cancel_refuses_a_body_with_fields(sandbox_api: APIClient) -> None:
    order_id = order_create_via_api(sandbox_api)
    response = sandbox_api.post(
        f"/v4.0/orders/{order_id}/actions/cancel", {"reason": "x"}, format="json"
    )
    assert codes(response) == {"reason": ["UnknownField"]}
    assert Order.objects.get().stage == "InProgress"


def test_an_equivalent_body_with_the_same_key_is_already_exists(sandbox_api: APIClient) -> None:
    first = order_body(idempotencyKey="same-order")
    second = json.loads(json.dumps(first))
    second["recipient"]["address"]["countryCode"] = "gb"
    second["shippingMethod"] = "standard"
    second["items"][0]["sku"] = "global-can-10x10"
    second["items"][0]["sizing"] = "FillPrintArea"

    assert sandbox_api.post("/v4.0/orders", first, format="json").json()["outcome"] == "Created"
    assert (
        sandbox_api.post("/v4.0/orders", second, format="json").json()["outcome"] == "AlreadyExists"
    )


def test_a_currency_without_an_exchange_rate_is_validation_failed(
    sandbox_api: APIClient, merchant: CreatedMerchant
) -> None:
    body: dict[str, Any] = {
        "destinationCountryCode": "GB",
        "items": [{"sku": "GLOBAL-FAP-10X10", "copies": 1, "assets": [{"printArea": "default"}]}],
    }
    asked = {**body, "currencyCode": "XYZ"}
    assert codes(sandbox_api.post("/v4.0/quotes", asked, format="json")) == {
        "currencyCode": ["UnsupportedCurrency"]
    }
    Merchant.objects.filter(id=merchant.merchant.id).update(billing_currency="XYZ")
    assert codes(sandbox_api.post("/v4.0/quotes", body, format="json")) == {
        "currencyCode": ["UnknownCurrency"]
    }
    assert codes(sandbox_api.post("/v4.0/orders", order_body(), format="json")) == {
        "body": ["UnknownCurrency"]
    }
    assert Order.objects.count() == 0


def test_a_lone_surrogate_in_a_quote_attribute_name_is_malformed(sandbox_api: APIClient) -> None:
    raw = (
        '{"destinationCountryCode": "GB", "items": [{"sku": "GLOBAL-CAN-10X10", "copies": 1, '
        '"attributes": {"\\ud800": "x"}}]}'
    )
    response = sandbox_api.post("/v4.0/quotes", raw, content_type="application/json")
    assert codes(response) == {"body": ["MalformedJson"]}


@pytest.mark.parametrize(
    ("path", "failures"),
    [
        ("/v4.0/orders?merchantReferences=a%00b", {"merchantReferences": ["Invalid"]}),
        ("/v4.0/orders?status=draft&orderIds=ord_1%00", {"orderIds": ["Invalid"]}),
        ("/v4.0/products/GLOBAL%00CAN", {"path": ["Invalid"]}),
        ("/v4.0/orders/ord_1%00", {"path": ["Invalid"]}),
    ],
)
def test_nul_in_a_query_value_or_the_path_is_a_validation_failure(
    sandbox_api: APIClient, path: str, failures: dict[str, list[str]]
) -> None:
    assert codes(sandbox_api.get(path)) == failures


def test_a_body_over_the_size_limit_is_413_in_the_envelope(
    sandbox_api: APIClient, settings: Any
) -> None:
    response = sandbox_api.post(
        "/v4.0/orders",
        "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1),
        content_type="application/json",
    )
    assert response.status_code == 413
    assert response.json()["outcome"] == "PayloadTooLarge"
    assert response.json()["data"] == {"maxBytes": settings.DATA_UPLOAD_MAX_MEMORY_SIZE}
    assert Order.objects.count() == 0


def test_a_post_to_an_unknown_path_is_a_json_404_not_a_csrf_page() -> None:
    client = APIClient(enforce_csrf_checks=True)
    response = client.post("/v4.0/orders//actions/cancel")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["outcome"] == "EndpointDoesNotExist"


def test_a_csrf_refusal_on_an_api_path_is_in_the_envelope(rf: Any) -> None:
    response = csrf_failure(rf.post("/v4.0/orders"), reason="CSRF cookie not set.")
    assert response.status_code == 403
    assert json.loads(response.content)["data"] == {
        "reason": "CSRF check failed: CSRF cookie not set."
    }


@pytest.mark.parametrize("copies", ["1", 1.0, True, "\u0661"])
def test_copies_must_be_a_json_integer(sandbox_api: APIClient, copies: Any) -> None:
    body = order_body()
    body["items"][0]["copies"] = copies
    assert codes(sandbox_api.post("/v4.0/orders", body, format="json")) == {
        "items[0].copies": ["Invalid"]
    }
    assert Order.objects.count() == 0


def test_a_url_with_a_port_beyond_65535_is_refused_at_once(sandbox_api: APIClient) -> None:
    body = order_body()
    body["items"][0]["assets"][0]["url"] = "https://example.com:99999/a.jpg"
    assert codes(sandbox_api.post("/v4.0/orders", body, format="json")) == {
        "items[0].assets[0].url": ["Invalid"]
    }


def test_a_chunked_body_without_a_length_is_411_not_read_as_empty(
    sandbox_api: APIClient,
) -> None:
    response = sandbox_api.generic(
        "POST", "/v4.0/orders", "", content_type="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
    )  # fmt: skip
    assert response.status_code == 411
    assert response.json()["outcome"] == "LengthRequired"
    assert Order.objects.count() == 0
