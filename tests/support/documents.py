"""The order document's check (``orders.document``): after every test, each order's stored
document equals a fresh render of the order (``tests/conftest.py``), so every path the suite
drives through a change to an order is a test that the change wrote its document.

A test that arranges an order's data by writing its rows directly (not through the service)
writes its document with ``document_rewritten``, as the service would have."""

from typing import Any

import orjson
from django.db import connection, transaction

from orders.document import order_document_render, order_document_write
from orders.models import Order
from orders.selectors import orders_with_parts


def document_rewritten(order: Order | int) -> None:
    """The order's document written as the order now is (after a test arranged its rows)."""
    order_id = order if isinstance(order, int) else order.id
    with transaction.atomic():
        order_document_write(order_id)


def documents_stale() -> dict[str, Any]:
    """Each order whose stored document is not what it shows now: its public id, and the
    stored and fresh documents' first differing keys. Read in one snapshot (on PostgreSQL,
    a repeatable read transaction when not inside the test's), so that a worker committing
    meanwhile cannot make a difference appear."""
    stale: dict[str, Any] = {}
    with transaction.atomic():
        if connection.vendor == "postgresql" and not _in_test_transaction():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        orders = orders_with_parts(Order.objects.select_related("environment").order_by("id"))
        for order in orders:
            expires = order.document_urls_expire
            fresh, _ = order_document_render(
                order, expires=int(expires.timestamp()) if expires else None
            )
            stored = orjson.loads(order.document) if order.document else None
            if stored != fresh:
                stale[order.public_id] = [line[:300] for line in _differences(stored, fresh)[:5]]
                if len(stale) == 5:
                    break
    return stale


def _in_test_transaction() -> bool:
    # Inside the test's own transaction (pytest-django's ``db``) the atomic block above is a
    # savepoint, where the isolation level cannot be set (nothing else commits into it).
    return len(connection.atomic_blocks) > 1


def _differences(stored: Any, fresh: Any, path: str = "") -> list[str]:
    if isinstance(stored, dict) and isinstance(fresh, dict):
        found = []
        for key in sorted(set(stored) | set(fresh)):
            found += _differences(stored.get(key), fresh.get(key), f"{path}.{key}")
        return found
    if isinstance(stored, list) and isinstance(fresh, list) and len(stored) == len(fresh):
        found = []
        for index, (a, b) in enumerate(zip(stored, fresh, strict=True)):
            found += _differences(a, b, f"{path}[{index}]")
        return found
    return [] if stored == fresh else [f"{path or '.'}: stored {stored!r}, now {fresh!r}"]
