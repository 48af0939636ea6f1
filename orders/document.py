"""The order document: each order's merchant-facing representation, stored with the order.

The document is exactly the body of ``GET /v4.0/orders/{id}`` (its ``order``), the orders of a
list page, and ``data.order`` of the callbacks created with a change. It is rendered
(``orders.representation``) and stored by the code that changes the order, in the change's
transaction (``order_document_write``; the callbacks' ``orders.events`` write it too), so the
API reads it and sends it as stored: a GET is one indexed read of one column, a list page one
read of a hundred, whatever the order holds.

Signed file URLs (thumbnails) are stored with their expiry (``Order.document_urls_expire``,
``settings.FILE_URL_DAYS`` after the document was written, rounded up to a day). A document
whose URLs expire within ``REFRESH_MARGIN`` is rendered afresh when read (and stored when no
change got there first); the scheduler rewrites those nearing it every hour
(``order_documents_refresh``), so a read rarely finds one. ``manage.py order_documents``
rebuilds every document (after a deploy that changes their shape).
"""

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from common.db import row_values
from orders.models import Order
from orders.parts import OrderParts
from orders.representation import Urls, order_representation
from orders.selectors import orders_with_parts

# A document read with less time than this left on its signed URLs is rendered afresh.
REFRESH_MARGIN = timedelta(days=1)
# The scheduler rewrites documents whose URLs expire within this (before a read has to).
REFRESH_AHEAD = timedelta(days=2)


@dataclass(frozen=True)
class Stored:
    """A document as stored: its JSON text and the expiry of its signed URLs (None: none)."""

    text: str
    urls_expire: datetime | None


def order_document_render(
    order: Order, parts: OrderParts | None = None, *, expires: int | None = None
) -> tuple[dict[str, Any], Stored]:
    """The order's document from the order as loaded (``parts``, or its prefetched relations,
    and its environment), as data and as stored text; ``expires``: that of its URLs."""
    urls = Urls(order.environment.base_url, expires)
    document = order_representation(order, urls=urls, parts=parts)
    text = orjson.dumps(document).decode()
    return document, Stored(
        text, datetime.fromtimestamp(urls.expires, UTC) if urls.signed else None
    )


def _loaded(order_id: int) -> Order:
    return orders_with_parts(Order.objects.select_related("environment").filter(id=order_id)).get()


def order_document_write(
    order_id: int, *, order: Order | None = None, parts: OrderParts | None = None
) -> tuple[Order, dict[str, Any]]:
    """Render the order as it is now and store its document, inside the transaction of the
    change (so the document changes exactly when the order does). The order as read and its
    document; ``order`` with ``parts``: the order as just written in memory (a create), not
    read back."""
    assert transaction.get_connection().in_atomic_block, "write documents in the change's"
    if order is None or parts is None:
        order = _loaded(order_id)
    document, stored = order_document_render(order, parts)
    order.document, order.document_urls_expire = stored.text, stored.urls_expire
    Order.objects.filter(id=order_id).update(
        document=stored.text, document_urls_expire=stored.urls_expire
    )
    return order, document


@contextmanager
def order_changed(order_id: int) -> Iterator[None]:
    """A transaction that changes the order: its document is written as it ends (also when the
    block returns early), rolled back with it on an exception."""
    with transaction.atomic():
        yield
        order_document_write(order_id)


def orders_documents_write(order_ids: Iterable[int]) -> None:
    """``order_document_write`` for each order of a change to several (bulk tools)."""
    for order_id in sorted(set(order_ids)):
        order_document_write(order_id)


def _current(order_id: int, text: str, urls_expire: datetime | None, fresh_until: datetime) -> str:
    """The document to send for the stored ``text``: itself when written and its URLs do not
    expire by ``fresh_until`` (``REFRESH_MARGIN`` from now); else rendered now, and stored
    unless a change wrote another meanwhile (the write is conditional on the text read, so it
    never undoes one)."""
    if text and (urls_expire is None or urls_expire > fresh_until):
        return text
    _, stored = order_document_render(_loaded(order_id))
    Order.objects.filter(id=order_id, document=text).update(
        document=stored.text, document_urls_expire=stored.urls_expire
    )
    return stored.text


def order_document_text(*, environment_id: int, order_id: int) -> str | None:
    """The stored document of the environment's order, None for no such order (another
    environment's is never read)."""
    row = row_values(
        Order, ("document", "document_urls_expire"), id=order_id, environment=environment_id
    )
    if row is None:
        return None
    text, expire = row
    return _current(order_id, text, expire, timezone.now() + REFRESH_MARGIN)


def orders_documents_texts(queryset: QuerySet[Order]) -> list[tuple[int, str]]:
    """Each order's id and stored document, for ``queryset`` (filtered, ordered, sliced)."""
    rows = queryset.values_list("id", "document", "document_urls_expire")
    fresh_until = timezone.now() + REFRESH_MARGIN
    return [
        (order_id, _current(order_id, text, expire, fresh_until)) for order_id, text, expire in rows
    ]


def order_documents_refresh(*, limit: int = 500) -> int:
    """Rewrite the documents that were never written or whose URLs expire within
    ``REFRESH_AHEAD`` (at most ``limit`` of them, oldest expiry first); how many. Each in its
    own transaction, its order row locked (skipped when a change holds it: it writes one)."""
    due = Q(document="") | Q(document_urls_expire__lt=timezone.now() + REFRESH_AHEAD)
    ids = list(
        Order.objects.filter(due)
        .order_by("document_urls_expire")
        .values_list("id", flat=True)[:limit]
    )
    return sum(_rewritten(order_id, due, skip_locked=True) for order_id in ids)


def order_documents_rebuild() -> int:
    """Rewrite every order's document (``manage.py order_documents``); how many."""
    ids = Order.objects.order_by("id").values_list("id", flat=True).iterator()
    return sum(_rewritten(order_id, Q(), skip_locked=False) for order_id in ids)


def _rewritten(order_id: int, condition: Q, *, skip_locked: bool) -> bool:
    """The order's document rewritten in its own transaction, its row locked first, if it
    still meets ``condition`` (and, ``skip_locked``, no change holds it: that writes one)."""
    with transaction.atomic():
        locked = (
            Order.objects.select_for_update(skip_locked=skip_locked, no_key=True)
            .filter(condition, id=order_id)
            .exists()
        )
        if locked:
            order_document_write(order_id)
        return locked
