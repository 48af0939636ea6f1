"""orders.creation: what creating an order works out, and what it keeps."""

from typing import Any

import pytest
from rest_framework.test import APIClient

from labs.allocation import BasketItem, plan_basket
from orders.creation import order_validate, request_fingerprint
from orders.inputs import OrderCreateInput
from orders.models import Order
from tests.support.orders import order_body, order_create_via_api, pk

pytestmark = pytest.mark.usefixtures("catalogue")


def validated(body: dict[str, Any]) -> Any:
    serializer = OrderCreateInput(data=body)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def test_an_order_is_priced_at_creation_only_when_it_waits_for_its_payment() -> None:
    data = validated(order_body())

    unpriced = order_validate(data=data, currency="GBP", sandbox=True)
    priced = order_validate(data=data, currency="GBP", sandbox=True, priced=True)

    assert unpriced.plan is None
    assert priced.items == unpriced.items and priced.unavailable == unpriced.unavailable == {}
    assert priced.plan == plan_basket(
        items=[BasketItem.of_validated(item) for item in priced.items],
        country_code="GB",
        shipping_method="Standard",
        currency="GBP",
        sandbox=True,
    )


def test_the_body_fingerprint_is_kept_only_with_an_idempotency_key(
    sandbox_api: APIClient,
) -> None:
    without_key = Order.objects.get(id=pk(order_create_via_api(sandbox_api)))
    with_key = Order.objects.get(id=pk(order_create_via_api(sandbox_api, idempotencyKey="k")))

    assert without_key.request_fingerprint == ""
    assert with_key.request_fingerprint == request_fingerprint(
        validated(order_body(idempotencyKey="k"))
    )
