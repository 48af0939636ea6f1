"""GET /v4.0/orders/{id} and GET /v4.0/orders: isolation, filters, paging, query counts."""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from api.throttling import ApiKeyRateThrottle
from merchants.keys import api_key_digest
from merchants.models import ApiKey
from merchants.services import CreatedMerchant, api_key_revoke
from orders.models import Order, Stage
from orders.pipeline.steps.allocate import order_allocate
from tests.support.database import ON_POSTGRES
from tests.support.documents import document_rewritten
from tests.support.orders import order_body, order_create_via_api

pytestmark = pytest.mark.usefixtures("catalogue")


def test_get_returns_the_order(sandbox_api: APIClient) -> None:
    order_id = order_create_via_api(sandbox_api)

    response = sandbox_api.get(f"/v4.0/orders/{order_id}")

    assert response.status_code == 200
    body = response.json()
    assert body["outcome"] == "Ok"
    assert body["order"]["id"] == order_id
    assert body["traceParent"] == response["traceParent"]


def test_get_path_is_case_insensitive(sandbox_api: APIClient) -> None:
    order_id = order_create_via_api(sandbox_api)
    assert sandbox_api.get(f"/V4.0/Orders/{order_id}").json()["order"]["id"] == order_id


def test_another_merchants_order_is_not_found(
    sandbox_api: APIClient, other_merchant: CreatedMerchant
) -> None:
    order_id = order_create_via_api(sandbox_api)
    stranger = APIClient()
    stranger.credentials(HTTP_X_API_KEY=other_merchant.sandbox_api_key)

    response = stranger.get(f"/v4.0/orders/{order_id}")

    assert response.status_code == 404
    assert response.json()["outcome"] == "EntityNotFound"
    assert stranger.get("/v4.0/orders").json()["orders"] == []


def test_the_other_environments_order_is_not_found(
    sandbox_api: APIClient, live_api: APIClient
) -> None:
    order_id = order_create_via_api(sandbox_api)
    response = live_api.get(f"/v4.0/orders/{order_id}")
    assert (response.status_code, response.json()["outcome"]) == (404, "EntityNotFound")
    for action in ("cancel", "updateMetadata"):
        response = live_api.post(
            f"/v4.0/orders/{order_id}/actions/{action}", {"metadata": {}}, format="json"
        )
        assert (response.status_code, response.json()["outcome"]) == (404, "EntityNotFound")


@contextmanager
def rows_read() -> Iterator[list[int]]:
    """The number of rows each statement sent in the block returned."""
    counts: list[int] = []

    def counted(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        counts.append(context["cursor"].rowcount)
        return result

    with connection.execute_wrapper(counted):
        yield counts


@pytest.mark.skipif(not ON_POSTGRES, reason="SQLite's cursors do not count the rows read")
def test_another_environments_order_costs_what_a_missing_one_does(
    sandbox_api: APIClient, other_merchant: CreatedMerchant
) -> None:
    big = order_create_via_api(sandbox_api, order_body(items=order_body()["items"] * 60))
    stranger = APIClient()
    stranger.credentials(HTTP_X_API_KEY=other_merchant.sandbox_api_key)
    stranger.get("/v4.0/orders/ord_999999999")  # its last-used time written (once a minute)

    with rows_read() as foreign:
        foreign_response = stranger.get(f"/v4.0/orders/{big}")
    with rows_read() as missing:
        missing_response = stranger.get("/v4.0/orders/ord_999999999")

    assert foreign_response.status_code == missing_response.status_code == 404
    assert foreign_response.json()["outcome"] == "EntityNotFound"
    # the versions' row (the key checked), then the order's document, which is not found:
    # another environment's order is never read
    assert foreign == missing == [1, 0]
    assert sandbox_api.get(f"/v4.0/orders/{big}").json()["order"]["items"][59]


def test_a_missing_order_is_not_found(sandbox_api: APIClient) -> None:
    response = sandbox_api.get("/v4.0/orders/ord_12345")
    assert (response.status_code, response.json()["outcome"]) == (404, "EntityNotFound")


@pytest.mark.parametrize("bad", ["12345", "shp_1", "ord_abc", "ord_", "ord_99999999999999999999"])
def test_a_malformed_order_id_is_validation_failed(sandbox_api: APIClient, bad: str) -> None:
    response = sandbox_api.get(f"/v4.0/orders/{bad}")
    assert response.status_code == 400
    assert list(response.json()["data"]["failures"]) == ["orderId"]


def test_list_is_newest_first_with_has_more_and_next_url_on_this_host(
    sandbox_api: APIClient, settings: Any
) -> None:
    settings.ALLOWED_HOSTS = ["api.example.com", "testserver"]
    ids = [order_create_via_api(sandbox_api, merchantReference=f"R{i}") for i in range(5)]

    response = sandbox_api.get(
        "/v4.0/orders?top=2", HTTP_HOST="api.example.com", HTTP_X_FORWARDED_PROTO="https"
    )
    body = response.json()

    assert body["outcome"] == "Ok"
    assert [o["id"] for o in body["orders"]] == ids[::-1][:2]
    assert body["hasMore"] is True
    next_url = urlsplit(body["nextUrl"])
    assert (next_url.scheme, next_url.netloc, next_url.path) == (
        "https",
        "api.example.com",
        "/v4.0/orders",
    )
    assert parse_qs(next_url.query)["skip"] == ["2"]


def test_following_next_url_walks_every_order_once(sandbox_api: APIClient) -> None:
    ids = [order_create_via_api(sandbox_api) for _ in range(7)]
    seen: list[str] = []
    url: str | None = "/v4.0/orders?top=3"
    while url:
        body = sandbox_api.get(url).json()
        seen += [o["id"] for o in body["orders"]]
        url = body["nextUrl"]
        assert (url is None) == (not body["hasMore"])
    assert seen == ids[::-1]


def test_skip_and_top(sandbox_api: APIClient) -> None:
    ids = [order_create_via_api(sandbox_api) for _ in range(4)][::-1]
    body = sandbox_api.get("/v4.0/orders?top=2&skip=1").json()
    assert [o["id"] for o in body["orders"]] == ids[1:3]
    assert body["hasMore"] is True
    last = sandbox_api.get("/v4.0/orders?top=2&skip=2").json()
    assert ([o["id"] for o in last["orders"]], last["hasMore"], last["nextUrl"]) == (
        ids[2:],
        False,
        None,
    )


def test_default_page_is_ten(sandbox_api: APIClient) -> None:
    for _ in range(11):
        order_create_via_api(sandbox_api)
    body = sandbox_api.get("/v4.0/orders").json()
    assert (len(body["orders"]), body["hasMore"]) == (10, True)


def test_filters_by_ids_in_repeated_and_bracket_form(sandbox_api: APIClient) -> None:
    a, b, c = (order_create_via_api(sandbox_api) for _ in range(3))

    repeated = sandbox_api.get(f"/v4.0/orders?orderIds={a}&orderIds={c}").json()["orders"]
    bracket = sandbox_api.get(f"/v4.0/orders?orderIds[]={a}&ORDERIDS[]={b}").json()["orders"]

    assert [o["id"] for o in repeated] == [c, a]
    assert [o["id"] for o in bracket] == [b, a]


def test_filters_by_merchant_reference_and_status(sandbox_api: APIClient) -> None:
    first = order_create_via_api(sandbox_api, merchantReference="alpha")
    second = order_create_via_api(sandbox_api, merchantReference="beta")
    Order.objects.filter(id=int(second.removeprefix("ord_"))).update(stage=Stage.COMPLETE)
    document_rewritten(int(second.removeprefix("ord_")))

    refs = sandbox_api.get("/v4.0/orders?merchantReferences=alpha&merchantReferences=beta").json()[
        "orders"
    ]
    complete = sandbox_api.get("/v4.0/orders?status=Complete").json()["orders"]
    in_progress = sandbox_api.get("/v4.0/orders?status=inProgress").json()["orders"]

    assert [o["id"] for o in refs] == [second, first]
    assert [o["id"] for o in complete] == [second]
    assert [o["id"] for o in in_progress] == [first]
    assert sandbox_api.get("/v4.0/orders?status=draft").json()["orders"] == []
    assert sandbox_api.get("/v4.0/orders?status=awaitingPayment").json()["orders"] == []


def test_filters_by_creation_time(sandbox_api: APIClient) -> None:
    old, new = order_create_via_api(sandbox_api), order_create_via_api(sandbox_api)
    Order.objects.filter(id=int(old.removeprefix("ord_"))).update(
        created=timezone.now() - timedelta(days=3)
    )
    document_rewritten(int(old.removeprefix("ord_")))
    cut = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

    after = sandbox_api.get(f"/v4.0/orders?createdFrom={cut}").json()["orders"]
    before = sandbox_api.get(f"/v4.0/orders?createdTo={cut}").json()["orders"]

    assert [o["id"] for o in after] == [new]
    assert [o["id"] for o in before] == [old]


def test_invalid_list_parameters_are_all_reported(sandbox_api: APIClient) -> None:
    response = sandbox_api.get(
        "/v4.0/orders?top=0&skip=-1&createdFrom=yesterday&status=lost&orderIds=42"
    )

    assert response.status_code == 400
    assert {k: [f["code"] for f in v] for k, v in response.json()["data"]["failures"].items()} == {
        "top": ["OutOfRange"],
        "skip": ["OutOfRange"],
        "createdFrom": ["Invalid"],
        "status": ["InvalidChoice"],
        "orderIds[0]": ["InvalidId"],
    }
    assert sandbox_api.get("/v4.0/orders?top=101").status_code == 400
    assert sandbox_api.get("/v4.0/orders?top=ten").status_code == 400


def test_a_page_costs_the_same_number_of_queries_whatever_its_size(
    sandbox_api: APIClient, django_assert_num_queries: Any
) -> None:
    for _ in range(12):
        body = order_body()
        body["items"].append(dict(body["items"][0], copies=1))
        order_id = order_create_via_api(sandbox_api, items=body["items"])
        with transaction.atomic():
            assert order_allocate(order=Order.objects.get(id=int(order_id.removeprefix("ord_"))))
    sandbox_api.get("/v4.0/orders?top=1")  # the key's last-used time is written once a minute

    # the versions of the keys and the catalogue (the key is this process's), the documents
    with django_assert_num_queries(2):
        assert len(sandbox_api.get("/v4.0/orders?top=1").json()["orders"]) == 1
    with django_assert_num_queries(2):
        assert len(sandbox_api.get("/v4.0/orders?top=12").json()["orders"]) == 12


def test_get_costs_a_fixed_number_of_queries(
    sandbox_api: APIClient, django_assert_num_queries: Any
) -> None:
    fresh = order_create_via_api(sandbox_api)
    allocated = order_create_via_api(sandbox_api)
    with transaction.atomic():
        assert order_allocate(order=Order.objects.get(id=int(allocated.removeprefix("ord_"))))
    sandbox_api.get(f"/v4.0/orders/{fresh}")  # the key's last-used time is written once a minute

    # the versions of the keys and the catalogue (the key checked), then the order's document:
    # with charges and shipments or without
    with django_assert_num_queries(2):
        assert sandbox_api.get(f"/v4.0/orders/{fresh}").status_code == 200
    with django_assert_num_queries(2):
        assert sandbox_api.get(f"/v4.0/orders/{allocated}").status_code == 200


def test_nothing_of_an_order_is_read_before_the_key_is_authenticated_and_throttled(
    sandbox_api: APIClient, merchant: CreatedMerchant, monkeypatch: pytest.MonkeyPatch
) -> None:
    order_id = order_create_via_api(sandbox_api)
    orders_table = Order._meta.db_table

    def reads_an_order(client: APIClient, url: str) -> tuple[int, bool]:
        with CaptureQueriesContext(connection) as captured:
            status = client.get(url).status_code
        return status, any(orders_table in query["sql"] for query in captured.captured_queries)

    wrong = APIClient()
    wrong.credentials(HTTP_X_API_KEY="sk_sandbox_not_a_real_key_000")
    live = APIClient()
    live.credentials(HTTP_X_API_KEY=merchant.live_api_key)
    one, page = f"/v4.0/orders/{order_id}", "/v4.0/orders"

    # no key, a wrong key: refused with no order read
    for url in (one, page):
        assert reads_an_order(APIClient(), url) == (401, False)
        assert reads_an_order(wrong, url) == (401, False)
    assert reads_an_order(sandbox_api, one) == (200, True)
    # the other environment's valid key, two requests a minute: the order looked for in its own
    # environment only (and not found), then, over its rate, throttled before anything of an
    # order is read
    monkeypatch.setattr(ApiKeyRateThrottle, "rate", "2/min", raising=False)
    assert [reads_an_order(live, url) for url in (one, page, one, page)] == [
        (404, True),
        (200, True),
        (429, False),
        (429, False),
    ]


def test_a_revoked_key_is_refused_before_anything_is_read(
    sandbox_api: APIClient, merchant: CreatedMerchant
) -> None:
    order_id = order_create_via_api(sandbox_api)
    url = f"/v4.0/orders/{order_id}"
    assert sandbox_api.get(url).status_code == 200  # kept by this process
    api_key_revoke(api_key=ApiKey.objects.get(digest=api_key_digest(merchant.sandbox_api_key)))

    refused = []
    for _ in range(2):
        with CaptureQueriesContext(connection) as captured:
            status = sandbox_api.get(url).status_code
        read = any(Order._meta.db_table in q["sql"] for q in captured.captured_queries)
        refused.append((status, read))

    assert refused == [(401, False), (401, False)]
