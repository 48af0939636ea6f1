"""Orders in a given state, made through the API and the pipeline's own services."""

from typing import Any

from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from orders.models import Order, Shipment
from orders.pipeline.steps.allocate import order_allocate
from tests.orders.conftest import book_item, order_body


def order_created(api: APIClient, **changes: Any) -> Order:
    response = api.post("/v4.0/orders", order_body(**changes), format="json")
    assert response.status_code == 200, response.content
    return Order.objects.get(id=int(response.json()["order"]["id"].removeprefix("ord_")))


def order_allocated(api: APIClient, **changes: Any) -> Order:
    order = order_created(api, **changes)
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
