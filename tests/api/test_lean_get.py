"""``GET /v4.0/orders/{orderId}`` answered the lean way (``ApiViewSet.lean_dispatch``) answers
exactly what the framework's way answers, error or not: status, headers and body (but the
trace parent, new on every request), with the key, a wrong key, no key, a staff key, another
environment's order, a missing or malformed id, and past the rate limit."""

from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from api.authentication import WrongKeyThrottle
from api.throttling import ApiKeyRateThrottle
from merchants.services import CreatedMerchant
from orders.api.views import OrderViewSet
from tests.support.orders import order_create_via_api

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]

# Set on every response anew: the trace parent (header and body), and the clock.
FRESH_HEADERS = {"traceparent", "date"}


def _answer(response: Any) -> tuple[int, dict[str, str], Any]:
    headers = {k.lower(): v for k, v in response.headers.items() if k.lower() not in FRESH_HEADERS}
    body = response.json()
    body.pop("traceParent", None)
    return response.status_code, headers, body


def _both_ways(monkeypatch: pytest.MonkeyPatch, send: Callable[[], Any]) -> list[Any]:
    """``send``'s answer the lean way, then the framework's way (the cache cleared before
    each, so that rate limits count alike)."""
    answers = []
    for lean in ("retrieve", None):
        monkeypatch.setattr(OrderViewSet, "lean_get", lean)
        cache.clear()
        answers.append(_answer(send()))
    cache.clear()
    return answers


@pytest.fixture
def order_id(merchant: CreatedMerchant) -> str:
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_X_API_KEY=merchant.sandbox_api_key)
    return order_create_via_api(client)


@pytest.mark.parametrize(
    ("key", "path", "status"),
    [
        ("sandbox", "{order}", 200),
        ("none", "{order}", 401),
        ("wrong", "{order}", 401),
        ("staff", "{order}", 401),
        ("live", "{order}", 404),
        ("sandbox", "ord_12345", 404),
        ("sandbox", "ord_abc", 400),
        ("none", "ord_abc", 401),
    ],
)
def test_the_lean_way_answers_as_the_framework_does(
    monkeypatch: pytest.MonkeyPatch,
    merchant: CreatedMerchant,
    staff_key: str,
    order_id: str,
    key: str,
    path: str,
    status: int,
) -> None:
    keys = {
        "sandbox": merchant.sandbox_api_key,
        "live": merchant.live_api_key,
        "wrong": "sk_sandbox_not_a_real_key_000",
        "staff": staff_key,
    }
    headers = {"X-API-Key": keys[key]} if key in keys else {}
    url = "/v4.0/orders/" + path.format(order=order_id)

    lean, framework = _both_ways(monkeypatch, lambda: Client(headers=headers).get(url))

    assert lean == framework
    assert lean[0] == status


def test_past_the_rate_limits_the_lean_way_answers_as_the_framework_does(
    monkeypatch: pytest.MonkeyPatch, merchant: CreatedMerchant, order_id: str
) -> None:
    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "1/min"})
    monkeypatch.setattr(WrongKeyThrottle, "THROTTLE_RATES", {"wrong_key": "1/min"})
    url = f"/v4.0/orders/{order_id}"

    def twice(key: str) -> Any:
        client = Client(headers={"X-API-Key": key})
        assert client.get(url).status_code in (200, 401)
        return client.get(url)

    for key in (merchant.sandbox_api_key, "sk_sandbox_not_a_real_key_000"):
        lean, framework = _both_ways(monkeypatch, lambda key=key: twice(key))  # type: ignore[misc]
        assert lean == framework
        assert lean[0] == 429


def test_only_the_classes_it_knows_take_the_lean_way() -> None:
    from rest_framework.authentication import SessionAuthentication

    from api.views import ApiViewSet

    with pytest.raises(TypeError, match="SessionAuthentication"):

        class Sessions(ApiViewSet):
            lean_get = "retrieve"
            authentication_classes = [SessionAuthentication]

    class Keys(ApiViewSet):  # the defaults: a key, its permission and its rate limit
        lean_get = "retrieve"
