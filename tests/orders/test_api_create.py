"""POST /v4.0/orders: validation of the whole body, outcomes, idempotency, pause window."""

import re
import threading
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from labs.models import LabProduct
from merchants.models import Environment, PauseMode
from merchants.services import CreatedMerchant
from orders.models import Asset, Order, OrderItem, Stage
from tests.support.orders import book_item, order_body, order_create_via_api

pytestmark = pytest.mark.usefixtures("catalogue")
TRACE = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")


def post(api: APIClient, body: Any, query: str = "") -> Any:
    return api.post(f"/v4.0/orders{query}", body, format="json")


def failures(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["outcome"] == "ValidationFailed"
    assert body["statusCode"] == 400
    assert TRACE.match(body["traceParent"])
    return {path: [f["code"] for f in found] for path, found in body["data"]["failures"].items()}


def test_create_returns_the_whole_order(sandbox_api: APIClient) -> None:
    response = post(sandbox_api, order_body(idempotencyKey="k-1"))

    assert response.status_code == 200
    body = response.json()
    assert body["outcome"] == "Created"
    assert TRACE.match(body["traceParent"]) and response["traceParent"] == body["traceParent"]
    order = body["order"]
    assert re.fullmatch(r"ord_\d+", order["id"])
    assert order["status"] == {
        "stage": "InProgress",
        "details": {
            "downloadAssets": "NotStarted",
            "allocateProductionLocation": "NotStarted",
            "printReadyAssetsPrepared": "NotStarted",
            "inProduction": "NotStarted",
            "shipping": "NotStarted",
        },
        "issues": [],
    }
    assert order["shippingMethod"] == "Standard"
    assert order["idempotencyKey"] == "k-1"
    assert order["merchantReference"] == "MR-1001"
    assert order["recipient"]["address"]["countryCode"] == "GB"
    assert order["charges"] == [] and order["shipments"] == []
    assert order["metadata"] == {"channel": "web"}
    assert order["usSalesTaxAlreadyCollected"] is False
    [item] = order["items"]
    assert re.fullmatch(r"ori_\d+", item["id"])
    assert (item["sku"], item["copies"], item["status"], item["sizing"]) == (
        "GLOBAL-CAN-10X10", 2, "NotYetDownloaded", "fillPrintArea",
    )  # fmt: skip
    assert item["attributes"] == {"wrap": "ImageWrap"}
    [asset] = item["assets"]
    assert re.fullmatch(r"ast_\d+", asset["id"])
    assert (asset["status"], asset["printArea"], asset["thumbnailUrl"]) == (
        "InProgress",
        "default",
        None,
    )
    assert order["created"].endswith("Z") and order["lastUpdated"].endswith("Z")

    stored = Order.objects.get()
    assert stored.public_id == order["id"]
    assert stored.environment.kind == "Sandbox"
    assert OrderItem.objects.count() == 1 and Asset.objects.count() == 1


def test_skus_attributes_and_enumerations_are_case_insensitive_and_echoed_canonically(
    sandbox_api: APIClient,
) -> None:
    body = order_body(shippingMethod="express")
    body["items"][0].update(
        sku="global-can-10x10", sizing="FITPRINTAREA", attributes={"WRAP": "mirrorwrap"}
    )
    body["items"][0]["assets"][0]["printArea"] = "DEFAULT"

    item = post(sandbox_api, body).json()["order"]["items"][0]

    assert (item["sku"], item["sizing"], item["attributes"]) == (
        "GLOBAL-CAN-10X10", "fitPrintArea", {"wrap": "MirrorWrap"},
    )  # fmt: skip
    assert item["assets"][0]["printArea"] == "default"
    assert Order.objects.get().shipping_method == "Express"


def test_sizing_defaults_to_fill_print_area(sandbox_api: APIClient) -> None:
    body = order_body()
    del body["items"][0]["sizing"]
    assert post(sandbox_api, body).json()["order"]["items"][0]["sizing"] == "fillPrintArea"


def test_required_fields_are_all_reported_at_once(sandbox_api: APIClient) -> None:
    response = post(sandbox_api, {"recipient": {"address": {}}, "items": [{"assets": [{}]}]})

    assert failures(response) == {
        "shippingMethod": ["Required"],
        "recipient.name": ["Required"],
        "recipient.address.line1": ["Required"],
        "recipient.address.postalOrZipCode": ["Required"],
        "recipient.address.countryCode": ["Required"],
        "recipient.address.townOrCity": ["Required"],
        "items[0].sku": ["Required"],
        "items[0].copies": ["Required"],
        "items[0].assets[0].url": ["Required"],
    }
    assert Order.objects.count() == 0


def test_field_rules(sandbox_api: APIClient) -> None:
    body = order_body(
        shippingMethod="Teleport", callbackUrl="ftp://hooks.example.com/x", surprise=1
    )
    body["recipient"]["address"]["countryCode"] = "XX"
    body["recipient"]["email"] = "not-an-email"
    item = body["items"][0]
    item.update(copies=0, sizing="squash", colour="red")
    item["assets"][0].update(url="file:///etc/passwd", md5Hash="xyz", pageCount=0)
    body["items"].append({"sku": "GLOBAL-FAP-10X10", "copies": 1, "assets": []})

    assert failures(post(sandbox_api, body)) == {
        "surprise": ["UnknownField"],
        "shippingMethod": ["InvalidChoice"],
        "callbackUrl": ["Invalid"],
        "recipient.email": ["Invalid"],
        "recipient.address.countryCode": ["InvalidCountry"],
        "items[0].copies": ["MinValue"],
        "items[0].sizing": ["InvalidChoice"],
        "items[0].colour": ["UnknownField"],
        "items[0].assets[0].url": ["Invalid"],
        "items[0].assets[0].md5Hash": ["Invalid"],
        "items[0].assets[0].pageCount": ["MinValue"],
        "items[1].assets": ["Empty"],
    }
    assert Order.objects.count() == 0


def test_urls_on_port_0_are_refused(sandbox_api: APIClient) -> None:
    body = order_body(callbackUrl="https://hooks.example.com:0/x")
    body["items"][0]["assets"][0]["url"] = "http://images.example.com:0/cat.jpg"

    assert failures(post(sandbox_api, body)) == {
        "callbackUrl": ["Invalid"],
        "items[0].assets[0].url": ["Invalid"],
    }
    assert Order.objects.count() == 0


CREDENTIALS = (
    "A URL with credentials (user:password@host) is not taken; give a URL that needs none, "
    "such as a signed one."
)
NOT_ASCII = (
    "The URL's host must be written in ASCII: give an internationalised name in its xn-- form."
)


@pytest.mark.parametrize(
    ("asset_url", "callback_url", "message"),
    [
        (
            "https://reader:s3cret-Pa55@images.example.com/cat.jpg",
            "https://hook:s3cret-Pa55@hooks.example.com/x",
            CREDENTIALS,
        ),
        (
            "https://reader@images.example.com/cat.jpg",
            "https://hook@hooks.example.com/x",
            CREDENTIALS,
        ),
        ("https://bücher.example/cat.jpg", "https://bücher.example/x", NOT_ASCII),
        ("https://images.exämple.com/cat.jpg", "https://hooks.exämple.com/x", NOT_ASCII),
    ],
)
def test_urls_with_credentials_or_a_host_not_in_ascii_are_refused_at_create(
    sandbox_api: APIClient, asset_url: str, callback_url: str, message: str
) -> None:
    body = order_body(callbackUrl=callback_url)
    body["items"][0]["assets"][0]["url"] = asset_url

    response = post(sandbox_api, body)

    assert failures(response) == {
        "callbackUrl": ["Invalid"],
        "items[0].assets[0].url": ["Invalid"],
    }
    found = response.json()["data"]["failures"]
    assert found["callbackUrl"][0]["description"] == message
    assert found["items[0].assets[0].url"][0]["description"] == message
    assert "s3cret" not in response.content.decode()
    assert Order.objects.count() == 0


def test_a_host_in_its_xn_form_is_taken(sandbox_api: APIClient) -> None:
    body = order_body(callbackUrl="https://xn--bcher-kva.example/x")

    response = post(sandbox_api, body)

    assert response.status_code == 200, response.content


def test_no_items_is_refused(sandbox_api: APIClient) -> None:
    assert failures(post(sandbox_api, order_body(items=[]))) == {"items": ["Empty"]}


def test_catalogue_rules_name_each_item(sandbox_api: APIClient) -> None:
    body = order_body()
    body["items"] = [
        {"sku": "NO-SUCH-SKU", "copies": 1, "assets": [{"url": "https://x.example/a.jpg"}]},
        {"sku": "GLOBAL-CAN-10X10", "copies": 1, "assets": [{"url": "https://x.example/a.jpg"}]},
        {
            "sku": "GLOBAL-CFPM-16X20",
            "copies": 1,
            "attributes": {"color": "purple", "glaze": "none"},
            "assets": [{"printArea": "back", "url": "https://x.example/a.jpg"}],
        },
        book_item(pages=None),
    ]

    assert failures(post(sandbox_api, body)) == {
        "items[0].sku": ["UnknownSku"],
        "items[1].attributes.wrap": ["Required"],
        "items[2].attributes.color": ["UnknownAttributeValue"],
        "items[2].attributes.glaze": ["UnknownAttribute"],
        "items[2].assets[0].printArea": ["UnknownPrintArea"],
        "items[2].assets": ["MissingPrintArea"],
        "items[3].assets[0].pageCount": ["Required"],
    }


def test_metadata_is_limited_to_2000_characters(sandbox_api: APIClient) -> None:
    at_limit = {"k": "x" * (2000 - len('{"k":""}'))}
    assert post(sandbox_api, order_body(metadata=at_limit)).status_code == 200
    over = {"k": "x" * (2001 - len('{"k":""}'))}
    assert failures(post(sandbox_api, order_body(metadata=over))) == {"metadata": ["TooLong"]}
    assert failures(post(sandbox_api, order_body(metadata=["a"]))) == {"metadata": ["NotObject"]}


def test_a_method_the_destination_cannot_get_is_refused(sandbox_api: APIClient) -> None:
    body = order_body(shippingMethod="Overnight")
    body["recipient"]["address"].update(
        countryCode="AU", postalOrZipCode="2000", townOrCity="Sydney"
    )
    body["items"] = [book_item()]

    found = failures(post(sandbox_api, body))

    assert set(found) <= {"shippingMethod", "recipient.address.countryCode"} and found


def test_validation_only_stores_nothing_and_keeps_the_key_free(sandbox_api: APIClient) -> None:
    body = order_body(idempotencyKey="dry-run")
    response = post(sandbox_api, body, "?validationOnly=true")

    assert response.status_code == 200
    assert response.json()["outcome"] == "Ok"
    assert Order.objects.count() == 0
    assert post(sandbox_api, body).json()["outcome"] == "Created"


def test_validation_only_still_reports_failures(sandbox_api: APIClient) -> None:
    body = order_body()
    body["items"][0]["sku"] = "NOPE"
    assert failures(post(sandbox_api, body, "?validationonly=TRUE")) == {
        "items[0].sku": ["UnknownSku"]
    }


def test_same_key_same_body_is_already_exists_with_the_same_order(sandbox_api: APIClient) -> None:
    first = post(sandbox_api, order_body(idempotencyKey="abc")).json()
    reordered = dict(reversed(list(order_body(idempotencyKey="abc").items())))
    second = post(sandbox_api, reordered).json()

    assert (first["outcome"], second["outcome"]) == ("Created", "AlreadyExists")
    assert second["order"]["id"] == first["order"]["id"]
    assert Order.objects.count() == 1


def test_same_key_different_body_is_refused_and_changes_nothing(sandbox_api: APIClient) -> None:
    post(sandbox_api, order_body(idempotencyKey="abc"))
    before = Order.objects.get().last_updated

    response = post(sandbox_api, order_body(idempotencyKey="abc", merchantReference="other"))

    assert failures(response) == {"idempotencyKey": ["IdempotencyKeyReused"]}
    assert Order.objects.count() == 1
    assert Order.objects.get().last_updated == before


def test_keys_are_scoped_to_the_environment(
    merchant: CreatedMerchant, sandbox_api: APIClient, live_api: APIClient
) -> None:
    assert post(sandbox_api, order_body(idempotencyKey="shared")).json()["outcome"] == "Created"
    assert post(live_api, order_body(idempotencyKey="shared")).json()["outcome"] == "Created"
    assert Order.objects.count() == 2


def test_without_a_key_every_request_creates_an_order(sandbox_api: APIClient) -> None:
    post(sandbox_api, order_body())
    post(sandbox_api, order_body())
    assert Order.objects.count() == 2


def test_pause_window_answers_on_hold_with_only_the_id(
    merchant: CreatedMerchant, sandbox_api: APIClient
) -> None:
    Environment.objects.filter(merchant=merchant.merchant).update(
        pause_mode=PauseMode.MINUTES, pause_minutes=30
    )

    body = post(sandbox_api, order_body()).json()

    assert body["outcome"] == "OnHold"
    assert set(body["order"]) == {"id"}
    order = Order.objects.get()
    assert order.stage == Stage.ON_HOLD and order.held_until is not None
    fetched = sandbox_api.get(f"/v4.0/orders/{body['order']['id']}").json()
    assert fetched["order"]["status"]["stage"] == "OnHold"


def test_an_idempotent_retry_of_a_held_order_shows_only_its_id(
    merchant: CreatedMerchant, sandbox_api: APIClient
) -> None:
    Environment.objects.filter(merchant=merchant.merchant).update(pause_mode=PauseMode.INDEFINITE)
    first = post(sandbox_api, order_body(idempotencyKey="held-1")).json()

    again = post(sandbox_api, order_body(idempotencyKey="held-1")).json()

    assert again["outcome"] == "AlreadyExists"
    assert again["order"] == {"id": first["order"]["id"]}


def test_indefinite_pause_holds_without_a_time(
    merchant: CreatedMerchant, sandbox_api: APIClient
) -> None:
    Environment.objects.filter(merchant=merchant.merchant).update(pause_mode=PauseMode.INDEFINITE)

    assert post(sandbox_api, order_body()).json()["outcome"] == "OnHold"
    order = Order.objects.get()
    assert (order.stage, order.held_until, order.due_at) == (Stage.ON_HOLD, None, None)


def test_a_temporarily_unavailable_item_is_created_with_issues(sandbox_api: APIClient) -> None:
    LabProduct.objects.filter(product__sku="GLOBAL-CAN-10X10").update(in_stock=False)

    body = post(sandbox_api, order_body()).json()

    assert body["outcome"] == "CreatedWithIssues"
    [issue] = body["order"]["status"]["issues"]
    assert issue["errorCode"] == "order.items.ItemUnavailable"
    assert issue["objectId"] == body["order"]["items"][0]["id"]
    assert Order.objects.count() == 1


def test_a_body_that_is_not_an_object_is_validation_failed(sandbox_api: APIClient) -> None:
    response = sandbox_api.post("/v4.0/orders", "[]", content_type="application/json")
    assert failures(response) == {"body": ["Invalid"]}


def test_bad_validation_only_flag(sandbox_api: APIClient) -> None:
    assert failures(post(sandbox_api, order_body(), "?validationOnly=maybe")) == {
        "validationOnly": ["Invalid"]
    }


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_creates_with_one_key_make_one_order(merchant: CreatedMerchant) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("concurrency is proven on PostgreSQL")
    body = order_body(idempotencyKey="race-1")
    outcomes: list[str] = []
    ids: list[str] = []
    barrier = threading.Barrier(20)

    def create() -> None:
        client = APIClient()
        client.credentials(HTTP_X_API_KEY=merchant.sandbox_api_key)
        barrier.wait()
        try:
            response = client.post("/v4.0/orders", body, format="json")
            outcomes.append(response.json()["outcome"])
            ids.append(response.json()["order"]["id"])
        finally:
            connection.close()

    threads = [threading.Thread(target=create) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["AlreadyExists"] * 19 + ["Created"]
    assert len(set(ids)) == 1
    assert Order.objects.filter(idempotency_key="race-1").count() == 1


def test_the_documented_example_creates_an_order(sandbox_api: APIClient) -> None:
    from orders.api.views import CREATE_EXAMPLE

    response = post(sandbox_api, CREATE_EXAMPLE.value)

    assert response.status_code == 200, response.content
    assert response.json()["outcome"] == "Created"


def test_create_costs_a_fixed_number_of_queries(
    sandbox_api: APIClient, django_assert_num_queries: Any
) -> None:
    body = order_body()
    body["items"].append(dict(body["items"][0], copies=1))
    order_create_via_api(sandbox_api)  # the key's last-used time, the catalogue snapshot

    # the versions of the keys and the catalogue (one query: both are this process's), then
    # the order, its items and its assets: on PostgreSQL one statement, elsewhere three in a
    # transaction (here the test's); the answer is rendered from them, not read back
    inserts = 1 if connection.vendor == "postgresql" else 3
    with django_assert_num_queries(1 + inserts):
        order_create_via_api(sandbox_api, items=body["items"])
    # an idempotency key adds the look-up of an earlier order with it
    with django_assert_num_queries(2 + inserts):
        order_create_via_api(sandbox_api, items=body["items"], idempotencyKey="once")
