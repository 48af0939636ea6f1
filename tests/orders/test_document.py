"""The order document (``orders.document``): GET and list send it as stored, callbacks embed
it, its signed URLs are never sent expired, and it can be rebuilt. (That every change writes it
is checked after every test of the suite: ``tests/conftest.py``.)"""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from orders.document import REFRESH_MARGIN, order_documents_refresh
from orders.models import Order, OrderItem
from tests.support.documents import document_rewritten
from tests.support.orders import order_create_via_api
from webhooks.models import CallbackEvent

pytestmark = pytest.mark.usefixtures("catalogue")


def _number(order_id: str) -> int:
    return int(order_id.removeprefix("ord_"))


def test_get_sends_the_stored_document_as_it_is_stored(sandbox_api: APIClient) -> None:
    order_id = order_create_via_api(sandbox_api)
    stored = Order.objects.get(id=_number(order_id)).document

    response = sandbox_api.get(f"/v4.0/orders/{order_id}")

    trace = response["traceParent"]
    expected = f'{{"outcome":"Ok","order":{stored},"traceParent":"{trace}"}}'
    assert response.content.decode() == expected


def test_a_list_page_is_the_stored_documents_newest_first(sandbox_api: APIClient) -> None:
    ids = [order_create_via_api(sandbox_api) for _ in range(3)]

    body = sandbox_api.get("/v4.0/orders?top=3").json()

    stored = [json.loads(Order.objects.get(id=_number(i)).document) for i in reversed(ids)]
    assert body["orders"] == stored


def test_a_callbacks_order_is_the_get_body_of_its_moment(sandbox_api: APIClient) -> None:
    order_id = order_create_via_api(sandbox_api, callbackUrl="https://hooks.example.com/in")
    cancelled = sandbox_api.post(f"/v4.0/orders/{order_id}/actions/cancel", format="json")
    assert cancelled.json()["outcome"] == "Cancelled"

    [event] = CallbackEvent.objects.filter(subject=order_id)

    assert json.loads(bytes(event.body))["data"]["order"] == cancelled.json()["order"]
    assert sandbox_api.get(f"/v4.0/orders/{order_id}").json()["order"] == cancelled.json()["order"]


def _with_thumbnail(sandbox_api: APIClient) -> Order:
    order_id = order_create_via_api(sandbox_api)
    OrderItem.objects.filter(order_id=_number(order_id)).update(thumbnail="orders/x/thumb.jpg")
    document_rewritten(_number(order_id))
    return Order.objects.get(id=_number(order_id))


def test_a_document_is_stored_with_its_urls_expiry(sandbox_api: APIClient, settings) -> None:
    order = _with_thumbnail(sandbox_api)

    url = json.loads(order.document)["items"][0]["thumbnailUrl"]

    assert order.document_urls_expire is not None
    assert f"expires={int(order.document_urls_expire.timestamp())}" in url
    assert url.startswith(settings.SANDBOX_BASE_URL + "/media/orders/x/thumb.jpg?")
    assert order.document_urls_expire - timezone.now() > timedelta(days=settings.FILE_URL_DAYS)


@pytest.mark.documents_unchecked  # its URLs' expiry set by hand, as time passing would
def test_a_document_near_its_urls_expiry_is_rendered_afresh_when_read(
    sandbox_api: APIClient,
) -> None:
    order = _with_thumbnail(sandbox_api)
    near = timezone.now() + REFRESH_MARGIN - timedelta(minutes=1)
    Order.objects.filter(id=order.id).update(document_urls_expire=near)

    shown = sandbox_api.get(f"/v4.0/orders/{order.public_id}").json()["order"]

    url = shown["items"][0]["thumbnailUrl"]
    expires = int(url.split("expires=")[1].split("&")[0])
    assert expires - timezone.now().timestamp() > REFRESH_MARGIN.total_seconds()
    stored = Order.objects.get(id=order.id)  # stored too, no change having come meanwhile
    assert stored.document_urls_expire is not None and stored.document_urls_expire > near
    assert json.loads(stored.document) == shown


def test_a_list_page_renders_afresh_the_documents_near_their_urls_expiry_only(
    sandbox_api: APIClient,
) -> None:
    order = _with_thumbnail(sandbox_api)
    other = Order.objects.get(id=_number(order_create_via_api(sandbox_api)))
    near = timezone.now() + REFRESH_MARGIN - timedelta(minutes=1)
    Order.objects.filter(id=order.id).update(document_urls_expire=near)
    kept = Order.objects.get(id=other.id).document

    listed = sandbox_api.get("/v4.0/orders").json()["orders"]

    shown = next(o for o in listed if o["id"] == order.public_id)
    url = shown["items"][0]["thumbnailUrl"]
    expires = int(url.split("expires=")[1].split("&")[0])
    assert expires - timezone.now().timestamp() > REFRESH_MARGIN.total_seconds()
    stored = Order.objects.get(id=order.id)
    assert stored.document_urls_expire is not None and stored.document_urls_expire > near
    assert json.loads(stored.document) == shown
    assert Order.objects.get(id=other.id).document == kept  # fresh: sent as stored


def test_a_document_never_written_is_rendered_when_read(sandbox_api: APIClient) -> None:
    order_id = order_create_via_api(sandbox_api)
    expected = sandbox_api.get(f"/v4.0/orders/{order_id}").json()["order"]
    Order.objects.filter(id=_number(order_id)).update(document="")

    assert sandbox_api.get(f"/v4.0/orders/{order_id}").json()["order"] == expected
    assert json.loads(Order.objects.get(id=_number(order_id)).document) == expected


def test_the_refresh_rewrites_the_documents_due_and_no_other(sandbox_api: APIClient) -> None:
    due, fresh = _with_thumbnail(sandbox_api), _with_thumbnail(sandbox_api)
    never = Order.objects.get(id=_number(order_create_via_api(sandbox_api)))
    soon = timezone.now() + timedelta(hours=30)
    Order.objects.filter(id=due.id).update(document_urls_expire=soon)
    Order.objects.filter(id=never.id).update(document="")
    kept = Order.objects.get(id=fresh.id).document

    assert order_documents_refresh() == 2

    rewritten = Order.objects.get(id=due.id).document_urls_expire
    assert rewritten is not None and rewritten > soon
    assert Order.objects.get(id=never.id).document != ""
    assert Order.objects.get(id=fresh.id).document == kept
    assert order_documents_refresh() == 0


def test_the_command_rebuilds_every_document(sandbox_api: APIClient) -> None:
    ids = [_number(order_create_via_api(sandbox_api)) for _ in range(2)]
    expected = {i: Order.objects.get(id=i).document for i in ids}
    with transaction.atomic():
        Order.objects.filter(id__in=ids).update(document="{}")
    out = StringIO()

    call_command("order_documents", stdout=out)

    assert out.getvalue().strip() == "2 order documents written."
    assert {i: Order.objects.get(id=i).document for i in ids} == expected
