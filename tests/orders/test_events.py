"""What an order's callback events are called, where they say they come from, what writing
one costs (the counter's increment, the order's document rendered and written, the event's
insert), and how concurrent ones of one order are numbered."""

import json
import threading
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from merchants.models import Environment, EnvironmentKind
from orders.events import (
    downloads_complete_type,
    event_source,
    order_event_create,
    shipment_type,
    stage_changed_type,
)
from orders.models import Order, OrderItem
from tests.orders.factories import ChargeFactory, OrderFactory, ShipmentFactory
from tests.support.database import ON_POSTGRES, sessions_waiting_for_a_lock_soon
from tests.support.envelopes import build_envelope
from webhooks.models import CallbackEvent

INCREMENT = (
    'UPDATE "orders_order" SET "callback_sequence" = ("orders_order"."callback_sequence" + 1)'
)


def test_live_events_name_the_live_base_url(settings: Any) -> None:
    settings.SANDBOX_BASE_URL = "https://sandbox.print.test"
    settings.LIVE_BASE_URL = "https://api.print.test"

    live = Environment(kind=EnvironmentKind.LIVE)
    sandbox = Environment(kind=EnvironmentKind.SANDBOX)

    assert json.loads(build_envelope(source=event_source(live)))["source"] == (
        "https://api.print.test/v4.0/Orders/"
    )
    assert event_source(sandbox) == "https://sandbox.print.test/v4.0/Orders/"


def test_event_types_follow_the_prefix_setting(settings: Any) -> None:
    assert stage_changed_type("Cancelled") == "com.service.order.status.stage.changed#Cancelled"
    assert shipment_type("Shipped") == "com.service.order.shipments.shipment#Shipped"
    assert downloads_complete_type() == "com.service.order.status.details.downloadAssets#Complete"

    settings.CALLBACK_EVENT_TYPE_PREFIX = "com.example.print"

    assert stage_changed_type("Complete") == "com.example.print.status.stage.changed#Complete"
    assert json.loads(build_envelope(event_type=shipment_type("Shipped")))["type"] == (
        "com.example.print.shipments.shipment#Shipped"
    )


# What rendering an order's document reads (``orders.document``): the order with its
# environment, then its items, their assets, its shipments, charges, the charges' lines and
# its issues, one query each (prefetched: as many for an order of a hundred items as of one).
RENDER_READS = [
    '"orders_order"',
    '"orders_orderitem"',
    '"orders_asset"',
    '"orders_shipment"',
    '"orders_charge"',
    '"orders_chargeitem"',
    '"orders_orderissue"',
]


def _read_table(sql: str) -> str:
    assert sql.startswith("SELECT"), sql
    return sql.split(" FROM ", 1)[1].split(" ", 1)[0]


@pytest.mark.django_db
def test_an_event_is_the_increment_the_document_render_and_write_and_the_insert() -> None:
    order = OrderFactory.create()  # no callback URL: no look-up of gone URLs
    ShipmentFactory.create(order=order, items=list(order.items.all()))
    ChargeFactory.create(order=order)

    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        event = order_event_create(order=order, event_type=stage_changed_type(order.stage))

    # The counter's increment first (it locks the order's row until the change commits), then
    # the document rendered from the order as it now is, stored, and embedded in the event.
    sent = [query["sql"] for query in captured.captured_queries]
    assert len(sent) == 1 + len(RENDER_READS) + 2
    assert sent[0].startswith(INCREMENT)
    assert [_read_table(sql) for sql in sent[1:-2]] == RENDER_READS
    assert sent[-2].startswith('UPDATE "orders_order" SET "document" = ')
    assert sent[-1].startswith('INSERT INTO "orders_callbackevent"')
    stored = Order.objects.get(id=order.id)
    assert event.sequence == stored.callback_sequence == 1
    body = json.loads(bytes(event.body))
    assert body["sequence"] == "0000000001"
    assert body["data"]["order"] == json.loads(stored.document)
    assert len(body["data"]["order"]["shipments"]) == len(body["data"]["order"]["charges"]) == 1


@pytest.mark.django_db
def test_each_event_of_a_change_shows_the_order_as_it_is_then_and_the_last_is_stored() -> None:
    order = OrderFactory.create()
    ShipmentFactory.create(order=order, items=list(order.items.all()))

    with transaction.atomic():
        first = order_event_create(order=order, event_type=shipment_type("Shipped"))
        # What a step changes between its events: the order row alone.
        Order.objects.filter(id=order.id).update(stage="Complete", shipping="Complete")
        second = order_event_create(order=order, event_type=stage_changed_type("Complete"))

    before, after = (json.loads(bytes(event.body)) for event in (first, second))
    assert (first.sequence, second.sequence) == (1, 2)
    assert (before["sequence"], after["sequence"]) == ("0000000001", "0000000002")
    assert before["data"]["order"]["status"]["stage"] == "InProgress"
    assert after["data"]["order"]["status"]["stage"] == "Complete"
    assert after["data"]["order"]["status"]["details"]["shipping"] == "Complete"
    # Read whole at each event: the parts the row change left alone are shown as they are.
    assert len(after["data"]["order"]["shipments"]) == 1
    assert after["data"]["order"]["items"] == before["data"]["order"]["items"]
    assert json.loads(Order.objects.get(id=order.id).document) == after["data"]["order"]


def _in_own_transaction(work: Any) -> threading.Thread:
    """``work`` in a thread of its own (its own connection), inside a transaction."""

    def run() -> None:
        try:
            with transaction.atomic():
                work()
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
def test_an_event_waiting_for_another_of_its_order_is_numbered_and_shown_after_it() -> None:
    if not ON_POSTGRES:
        pytest.skip("row locks are proven on PostgreSQL")
    order = OrderFactory.create()
    item = order.items.get()
    event_type = stage_changed_type(order.stage)
    holding, release = threading.Event(), threading.Event()
    later: list[CallbackEvent] = []

    def first() -> None:
        OrderItem.objects.filter(id=item.id).update(merchant_reference="changed meanwhile")
        order_event_create(order=order, event_type=event_type)
        holding.set()
        release.wait(10)

    first_thread = _in_own_transaction(first)
    assert holding.wait(10)
    second_thread = _in_own_transaction(
        lambda: later.append(order_event_create(order=order, event_type=event_type))
    )
    waited = sessions_waiting_for_a_lock_soon()
    release.set()
    first_thread.join(10)
    second_thread.join(10)

    # The second event waited for the first's commit, took the next number and shows the
    # item as the first transaction left it (its document was rendered after the wait, not
    # before), and its document, written last, is the one stored.
    assert waited == 1
    [event] = later
    assert event.sequence == 2
    body = json.loads(bytes(event.body))
    assert body["sequence"] == "0000000002"
    assert body["data"]["order"]["items"][0]["merchantReference"] == "changed meanwhile"
    stored = Order.objects.get(id=order.id)
    assert stored.callback_sequence == 2
    assert json.loads(stored.document) == body["data"]["order"]
    first_event = CallbackEvent.objects.get(subject=order.public_id, sequence=1)
    assert json.loads(bytes(first_event.body))["data"]["order"] == body["data"]["order"]
