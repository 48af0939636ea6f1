"""What an order's callback events are called, where they say they come from, what writing
one costs, and how concurrent ones of one order are numbered."""

import json
import threading
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from merchants.models import Environment, EnvironmentKind
from orders.events import (
    PartsKept,
    downloads_complete_type,
    event_source,
    order_event_create,
    shipment_type,
    stage_changed_type,
)
from orders.models import Order, OrderItem
from tests.orders.factories import OrderFactory, ShipmentFactory
from tests.support.database import ON_POSTGRES, sessions_waiting_for_a_lock_soon
from tests.support.envelopes import build_envelope
from webhooks.models import CallbackEvent

INCREMENT = 'UPDATE "orders_order" SET "callback_sequence" = "callback_sequence" + 1'


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


@pytest.mark.django_db
def test_an_event_numbers_and_reads_its_order_in_one_round_trip_on_postgresql() -> None:
    order = OrderFactory.create()  # no callback URL: no look-up of gone URLs

    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        event = order_event_create(order=order, event_type=stage_changed_type(order.stage))

    # The counter's increment, then one statement of the order joined with its items and
    # assets, its shipments, charges with their lines and issues (four SELECTs in a UNION ALL;
    # sent with the increment on PostgreSQL); the event's INSERT.
    sent = [query["sql"] for query in captured.captured_queries]
    if ON_POSTGRES:
        assert len(sent) == 2
        assert sent[0].startswith(INCREMENT) and sent[0].count("SELECT") == 4
    else:
        assert len(sent) == 3
        assert sent[0].startswith(INCREMENT)
        assert sent[1].startswith("SELECT") and sent[1].count("SELECT") == 4
    assert sent[-1].startswith('INSERT INTO "orders_callbackevent"')
    assert event.sequence == Order.objects.get(id=order.id).callback_sequence == 1
    assert json.loads(bytes(event.body))["sequence"] == "0000000001"


@pytest.mark.django_db
def test_a_further_event_with_kept_parts_reads_the_order_row_alone_and_shows_it_whole() -> None:
    order = OrderFactory.create()
    ShipmentFactory.create(order=order, items=list(order.items.all()))
    kept = PartsKept()

    with transaction.atomic():
        first = order_event_create(order=order, event_type=shipment_type("Shipped"), kept=kept)
        # What a step changes between its events: the order row alone.
        Order.objects.filter(id=order.id).update(stage="Complete", shipping="Complete")
        # The same event with the parts read afresh, to compare with.
        with CaptureQueriesContext(connection) as captured:
            second = order_event_create(order=order, event_type=stage_changed_type("Complete"))
        full = json.loads(bytes(second.body))
        with CaptureQueriesContext(connection) as kept_captured:
            third = order_event_create(
                order=order, event_type=stage_changed_type("Complete"), kept=kept
            )

    sent = [query["sql"] for query in kept_captured.captured_queries]
    if ON_POSTGRES:  # the increment returning the row, then the INSERT
        assert len(sent) == 2 and sent[0].startswith('UPDATE "orders_order" o SET')
        assert "SELECT" not in sent[0]
        assert captured.captured_queries[0]["sql"].count("SELECT") == 4
    shown = json.loads(bytes(third.body))
    assert (first.sequence, second.sequence, third.sequence) == (1, 2, 3)
    assert shown["sequence"] == "0000000003"
    assert shown["data"] == full["data"]
    assert shown["data"]["order"]["status"]["stage"] == "Complete"
    assert shown["data"]["order"]["status"]["details"]["shipping"] == "Complete"
    assert len(shown["data"]["order"]["shipments"]) == 1
    assert (
        shown["data"]["order"]["items"] == json.loads(bytes(first.body))["data"]["order"]["items"]
    )


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
    # item as the first transaction left it (its reads ran after the wait, not before).
    assert waited == 1
    [event] = later
    assert event.sequence == 2
    body = json.loads(bytes(event.body))
    assert body["sequence"] == "0000000002"
    assert body["data"]["order"]["items"][0]["merchantReference"] == "changed meanwhile"
    assert Order.objects.get(id=order.id).callback_sequence == 2
