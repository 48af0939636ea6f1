"""Real callback workers deliver each order's callbacks in ``sequence`` order to a receiver that
answers slowly and sometimes 500, and one order whose receiver fails until its event is given up
holds none of the others (decisions.md, "Callbacks, wave 4"; issue 41).

Two worker processes of three threads each consume the ``callbacks`` queue (one also
``sweeps``, with beat), on Redis and the test database, as deployed; the retry schedule is
shortened (``CALLBACK_RETRY_SCALE``) so that eleven attempts take seconds. Before the change the
callbacks of one order were sent side by side and a retried one arrived after its successors
(``stage.changed#Complete`` before the ``shipments.shipment#Shipped`` that caused it).
"""

import itertools
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from merchants.models import EnvironmentKind
from merchants.services import CreatedMerchant
from orders.events import (
    downloads_complete_type,
    order_event_create,
    shipment_type,
    stage_changed_type,
)
from tests.orders.factories import OrderFactory
from tests.support.servers import PacedReceiver
from tests.support.worker import (
    CAN_RUN_WORKER,
    NO_WORKER,
    Worker,
    Workers,
    purge_queues,
    wait_for,
    worker_environment,
)
from webhooks.delivery import RETRY_DELAYS
from webhooks.models import CallbackEvent, CallbackState

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,  # its bound is 50 s for a few seconds' work
    pytest.mark.django_db(transaction=True),
]

ANSWER_SECONDS = 0.3
# Eleven attempts of one event over about 7.5 s instead of three days.
RETRY_SCALE = "0.00003"
# What happens to an order, in the words: each order's callbacks in this order.
TYPES = [
    downloads_complete_type(),
    shipment_type("Processing"),
    shipment_type("Shipped"),
    stage_changed_type("Complete"),
]
STALLED = "stalled"


def callback_workers(folder: Path) -> Workers:
    """Two callback workers (processes) of three threads each; one runs beat and the sweeps."""
    env = worker_environment(folder, "http://127.0.0.1:8000", CALLBACK_RETRY_SCALE=RETRY_SCALE)
    return Workers(
        {
            "a": Worker(env, folder, ("callbacks", "sweeps"), "threads", 3, beat=True, name="a"),
            "b": Worker(env, folder, ("callbacks",), "threads", 3, beat=False, name="b"),
        }
    )


@pytest.fixture
def callbacks(django_db_blocker: Any) -> Iterator[Workers]:
    if not CAN_RUN_WORKER:
        pytest.skip(NO_WORKER)
    with tempfile.TemporaryDirectory(prefix="callback-order-") as folder:
        purge_queues()
        running = callback_workers(Path(folder))
        running.start()
        try:
            wait_for("the callback workers to consume", running.ready, running)
            yield running
        finally:
            with django_db_blocker.unblock():
                running.kill()
            purge_queues()


def test_each_orders_callbacks_arrive_in_sequence_and_a_stalled_order_holds_no_other(
    merchant: CreatedMerchant, callbacks: Workers
) -> None:
    stalled: set[str] = set()

    def failing(event: dict[str, Any], attempt: int) -> bool:
        """The stalled order's first event fails every time; every other order's first
        and third events fail their first attempt."""
        if event["subject"] in stalled:
            return event["sequence"] == "0000000001"
        return attempt == 1 and event["sequence"] in ("0000000001", "0000000003")

    receiver = PacedReceiver(ANSWER_SECONDS, failing)
    try:
        sandbox = merchant.merchant.environments.get(kind=EnvironmentKind.SANDBOX)
        sandbox.callback_url = receiver.url()
        sandbox.save(update_fields=["callback_url"])
        orders = OrderFactory.create_batch(5, environment=sandbox)
        stalled.add(orders[0].public_id)
        others = [o.public_id for o in orders[1:]]

        # As the pipeline writes them: each event in the transaction of its change, the
        # orders' changes interleaved, each message queued as its change commits.
        for event_type, order in itertools.product(TYPES, orders):
            with transaction.atomic():
                order_event_create(order=order, event_type=event_type)
        pending = CallbackEvent.objects.filter(state=CallbackState.PENDING)
        wait_for("every callback to end", lambda: not pending.exists(), callbacks, timeout=50)
        time.sleep(2 * ANSWER_SECONDS)  # a second delivery of an event would have come by now
    finally:
        receiver.stop()

    events = {e.public_id: e for e in CallbackEvent.objects.all()}
    assert len(events) == 20
    ((stalled_id, stalled_first),) = [
        (i, e) for i, e in events.items() if e.subject in stalled and e.sequence == 1
    ]
    assert (stalled_first.state, stalled_first.attempts) == (
        CallbackState.FAILED,
        len(RETRY_DELAYS) + 1,
    )
    assert {e.state for i, e in events.items() if i != stalled_id} == {CallbackState.DELIVERED}
    # In sequence order, each delivered once: the 2xx answers of each order, as they came.
    for subject in others:
        assert [(a.sequence, a.event_id) for a in receiver.delivered(subject)] == [
            (e.sequence, i)
            for i, e in sorted(events.items(), key=lambda x: x[1].sequence)
            if e.subject == subject
        ]
        assert [(a.sequence, a.status) for a in receiver.arrivals if a.subject == subject] == [
            (1, 500),
            (1, 204),
            (2, 204),
            (3, 500),
            (3, 204),
            (4, 204),
        ]
    (stalled_subject,) = stalled
    assert [a.sequence for a in receiver.delivered(stalled_subject)] == [2, 3, 4]
    assert receiver.most_in_flight == {subject: 1 for subject in (*stalled, *others)}
    # The stalled order's next callback waited for its first to be given up ...
    given_up = receiver.of_event(stalled_id)
    assert [a.status for a in given_up] == [500] * (len(RETRY_DELAYS) + 1)
    assert receiver.delivered(stalled_subject)[0].started > given_up[-1].ended
    # ... while every other order's callbacks had all arrived.
    assert max(receiver.delivered(s)[-1].ended for s in others) < given_up[-1].started
