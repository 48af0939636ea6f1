"""Rows made and inserted together (``common.db.rows_new``, ``common.db.rows_insert``): what
``Model(**row)`` and ``bulk_create`` would store, the instances left as ``bulk_create`` leaves
its own, all or none, and as many rows as a statement can take."""

from decimal import Decimal
from typing import Any

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from common.db import rows_insert, rows_new
from merchants.models import Environment
from orders.models import Asset, Order, OrderItem
from tests.merchants.factories import EnvironmentFactory

# The order rows are what the insert helpers store, bare: the order's creation writes its
# document with them (``orders.creation``), not these helpers.
pytestmark = [pytest.mark.django_db, pytest.mark.documents_unchecked]


def _order_row(environment: Environment, **more: Any) -> dict[str, Any]:
    return {
        "environment": environment,
        "shipping_method": "Standard",
        "recipient_name": "Ada Lovelace",
        "address_line1": "1 Analytical Row",
        "address_postal_or_zip_code": "SW1A 1AA",
        "address_country_code": "GB",
        "address_town_or_city": "London",
        "metadata": {"n": 1, "nested": {"a": [1, "b"]}},
        "held_until": timezone.now(),
        **more,
    }


def _item_row(order: Order, position: int) -> dict[str, Any]:
    return {
        "order": order,
        "position": position,
        "sku": "GLOBAL-FAP-10X10",
        "copies": 2,
        "attributes": {"wrap": "ImageWrap"},
        "recipient_cost_amount": Decimal("12.30"),
    }


def _stored(model: Any, instance: Any) -> dict[str, Any]:
    row = model.objects.filter(pk=instance.pk).values().get()
    row.pop("id")
    for name in ("order_id", "item_id"):  # each set of rows refers to its own parents
        row.pop(name, None)
    return dict(row)


def test_rows_are_stored_as_the_orms_instances_and_bulk_create_store_them() -> None:
    environment = EnvironmentFactory.create()

    [order] = rows_new(Order, [_order_row(environment)])
    [item] = rows_new(OrderItem, [_item_row(order, 0)])
    [asset] = rows_new(Asset, [{"item": item, "position": 0, "url": "https://a.example/1"}])
    rows_insert([order], [item], [asset])

    orm_order = Order.objects.create(**_order_row(environment))
    [orm_item] = OrderItem.objects.bulk_create([OrderItem(**_item_row(orm_order, 0))])
    [orm_asset] = Asset.objects.bulk_create(
        [Asset(item=orm_item, position=0, url="https://a.example/1")]
    )
    ignored = {"created", "last_updated", "held_until"}  # made at different times
    assert {k: v for k, v in _stored(Order, order).items() if k not in ignored} == {
        k: v for k, v in _stored(Order, orm_order).items() if k not in ignored
    }
    assert _stored(OrderItem, item) == _stored(OrderItem, orm_item)
    assert _stored(Asset, asset) == _stored(Asset, orm_asset)
    stored = Order.objects.get(pk=order.pk)
    assert (stored.held_until, stored.created) == (order.held_until, order.created)


def test_the_instances_are_left_as_bulk_create_leaves_its_own() -> None:
    environment = EnvironmentFactory.create()
    [order] = rows_new(Order, [_order_row(environment)])
    items = rows_new(OrderItem, [_item_row(order, 0), _item_row(order, 1)])
    rows_insert([order], items)

    # each knows its related object without a query, and a save updates the stored row
    with CaptureQueriesContext(connection) as captured:
        assert items[1].order is order and items[1].order_id == order.id
        assert (order.currency, order.stage, order.callback_sequence) == ("GBP", "InProgress", 0)
    assert captured.captured_queries == []
    items[1].copies = 5
    with CaptureQueriesContext(connection) as captured:
        items[1].save()
    assert [query["sql"].split()[0] for query in captured.captured_queries] == ["UPDATE"]
    assert OrderItem.objects.get(pk=items[1].pk).copies == 5


@pytest.mark.django_db(transaction=True)  # outside a transaction, as the API inserts them
def test_a_refused_row_stores_none_of_the_groups() -> None:
    environment = EnvironmentFactory.create()
    [order] = rows_new(Order, [_order_row(environment)])
    items = rows_new(OrderItem, [_item_row(order, 0), _item_row(order, 0)])  # one position

    with pytest.raises(IntegrityError):
        rows_insert([order], items)

    assert not Order.objects.filter(pk=order.pk).exists()
    assert not OrderItem.objects.filter(order_id=order.pk).exists()


def test_more_rows_than_one_statement_takes_are_all_stored() -> None:
    environment = EnvironmentFactory.create()
    [order] = rows_new(Order, [_order_row(environment)])
    items = rows_new(OrderItem, [_item_row(order, position) for position in range(200)])

    rows_insert([order], items)  # 2,800 values: past SQLite's 999 a statement

    assert list(
        OrderItem.objects.filter(order_id=order.pk).order_by("position").values_list("id")
    ) == [(item.id,) for item in items]


def test_a_name_the_model_does_not_have_is_refused() -> None:
    with pytest.raises(TypeError, match="OrderItem has no field 'colour'"):
        rows_new(OrderItem, [{"colour": "red"}])
