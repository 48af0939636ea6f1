"""The callback outbox: events written with their change, delivered, retried, replayed, swept.

Receivers are real local HTTP servers. Celery runs tasks eagerly where a test follows a
delivery through ``event_deliver_task``; one test reads the real broker to show that the sweeper
puts its messages on the ``callbacks`` queue.
"""

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from pytest_httpserver import HTTPServer
from standardwebhooks.webhooks import Webhook

from config.celery_app import app as celery_app
from merchants.models import Environment, EnvironmentKind
from merchants.services import CreatedMerchant
from orders.events import order_stage_changed
from orders.models import Order, Stage
from tests.orders.factories import OrderFactory
from tests.webhooks.factories import CallbackEventFactory
from webhooks.delivery import RETRY_DELAYS
from webhooks.models import CallbackAttempt, CallbackEvent, CallbackState, GoneCallbackUrl
from webhooks.services import event_deliver, event_replay
from webhooks.tasks import events_sweep_task

CaptureOnCommit = Callable[..., Any]


@pytest.fixture(autouse=True)
def private_urls_allowed(settings: Any) -> None:
    settings.ALLOW_PRIVATE_URLS = True


@pytest.fixture
def sandbox(merchant: CreatedMerchant, httpserver: HTTPServer) -> Environment:
    environment = merchant.merchant.environments.get(kind=EnvironmentKind.SANDBOX)
    environment.callback_url = httpserver.url_for("/merchant-default")
    environment.save(update_fields=["callback_url"])
    return environment


def complete(order: Order) -> None:
    """A stage change and its event, in one transaction as the pipeline does it."""
    with transaction.atomic():
        order.stage = Stage.COMPLETE
        order.save(update_fields=["stage"])
        order_stage_changed(order=order)


def make_due(event: CallbackEvent) -> None:
    CallbackEvent.objects.filter(id=event.id).update(next_attempt_at=timezone.now())


def received(httpserver: HTTPServer) -> list[tuple[str, bytes, dict[str, str]]]:
    return [(r.path, r.get_data(), dict(r.headers)) for r, _ in httpserver.log]


def test_a_committed_change_writes_one_event_and_delivers_it(
    sandbox: Environment,
    httpserver: HTTPServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    order = OrderFactory.create(environment=sandbox)
    httpserver.expect_oneshot_request("/merchant-default", method="POST").respond_with_data("ok")

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        complete(order)

    assert len(callbacks) == 2  # the event's delivery; after it, the look for the order's next
    event = CallbackEvent.objects.get()
    assert (event.subject, event.environment_id, event.sequence) == (
        order.public_id,
        sandbox.id,
        1,
    )
    assert event.event_type == "com.service.order.status.stage.changed#Complete"
    assert event.target_url == httpserver.url_for("/merchant-default")
    assert event.state == CallbackState.DELIVERED
    assert event.attempts == 1
    envelope = json.loads(bytes(event.body))
    assert envelope["id"] == event.public_id
    assert envelope["subject"] == order.public_id
    assert envelope["sequence"] == "0000000001"
    assert envelope["data"]["order"]["id"] == order.public_id
    assert envelope["data"]["order"]["status"]["stage"] == "Complete"
    ((path, body, headers),) = received(httpserver)
    assert path == "/merchant-default"
    assert body == bytes(event.body)
    assert headers["Content-Type"] == "application/cloudevents+json; charset=UTF-8"
    assert headers["Webhook-Id"] == event.public_id
    Webhook(sandbox.callback_signing_secret).verify(body, headers)
    attempt = CallbackAttempt.objects.get()
    assert (attempt.number, attempt.outcome, attempt.status_code) == (1, "Delivered", 200)
    assert attempt.response_excerpt == "ok"


def test_a_rolled_back_change_sends_nothing(
    sandbox: Environment,
    httpserver: HTTPServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    order = OrderFactory.create(environment=sandbox)

    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        order.stage = Stage.COMPLETE
        order.save(update_fields=["stage"])
        order_stage_changed(order=order)
        raise RuntimeError("the change fails after its event was written")

    assert callbacks == []
    assert not CallbackEvent.objects.exists()
    assert Order.objects.get(id=order.id).stage == Stage.IN_PROGRESS
    assert received(httpserver) == []


@pytest.mark.django_db(transaction=True)
def test_recording_outside_a_transaction_is_refused(sandbox: Environment) -> None:
    order = OrderFactory.create(environment=sandbox)

    with pytest.raises(AssertionError, match="inside the change's transaction"):
        order_stage_changed(order=order)

    assert not CallbackEvent.objects.exists()


def test_the_order_callback_url_wins_and_sequences_count_per_order(
    sandbox: Environment, httpserver: HTTPServer
) -> None:
    own = OrderFactory.create(environment=sandbox, callback_url=httpserver.url_for("/order-own"))
    other = OrderFactory.create(environment=sandbox)

    with transaction.atomic():
        order_stage_changed(order=own)
        order_stage_changed(order=own)
        order_stage_changed(order=other)

    rows = list(CallbackEvent.objects.order_by("created", "sequence"))
    assert [(e.subject, e.sequence, e.target_url) for e in rows] == [
        (own.public_id, 1, httpserver.url_for("/order-own")),
        (own.public_id, 2, httpserver.url_for("/order-own")),
        (other.public_id, 1, httpserver.url_for("/merchant-default")),
    ]
    assert [json.loads(bytes(e.body))["sequence"] for e in rows] == [
        "0000000001",
        "0000000002",
        "0000000001",
    ]
    assert {e.state for e in rows} == {CallbackState.PENDING}


def test_without_any_url_the_event_is_kept_but_nothing_is_sent(
    sandbox: Environment,
    httpserver: HTTPServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    sandbox.callback_url = ""
    sandbox.save(update_fields=["callback_url"])
    order = OrderFactory.create(environment=sandbox)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        complete(order)

    event = CallbackEvent.objects.get()
    assert (event.state, event.target_url, event.next_attempt_at) == (
        CallbackState.NO_DESTINATION,
        "",
        None,
    )
    assert callbacks == []
    assert events_sweep_task() == 0
    assert received(httpserver) == []


def test_three_500s_then_200_four_attempts_one_id_identical_bytes(
    sandbox: Environment,
    httpserver: HTTPServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    for _ in range(3):
        httpserver.expect_ordered_request("/merchant-default").respond_with_data("busy", status=500)
    httpserver.expect_ordered_request("/merchant-default").respond_with_data("ok")
    order = OrderFactory.create(environment=sandbox)

    with django_capture_on_commit_callbacks(execute=True):
        complete(order)
    event = CallbackEvent.objects.get()
    wait = event.next_attempt_at - timezone.now()  # type: ignore[operator]
    assert event.state == CallbackState.PENDING and event.attempts == 1
    assert RETRY_DELAYS[0] * 0.85 < wait <= RETRY_DELAYS[0] * 1.1
    assert event_deliver(event_id=event.id) is None  # not due yet: nothing is sent
    for _ in range(3):
        make_due(event)
        event_deliver(event_id=event.id)

    event.refresh_from_db()
    assert (event.state, event.attempts, event.next_attempt_at) == (
        CallbackState.DELIVERED,
        4,
        None,
    )
    attempts = list(event.attempt_log.order_by("number"))
    assert [(a.number, a.outcome, a.status_code) for a in attempts] == [
        (1, "Retry", 500),
        (2, "Retry", 500),
        (3, "Retry", 500),
        (4, "Delivered", 200),
    ]
    deliveries = received(httpserver)
    assert len(deliveries) == 4
    assert {body for _, body, _ in deliveries} == {bytes(event.body)}
    assert {headers["Webhook-Id"] for _, _, headers in deliveries} == {event.public_id}
    for _, body, headers in deliveries:
        Webhook(sandbox.callback_signing_secret).verify(body, headers)


def test_a_claimed_event_is_left_alone_until_its_claim_expires(
    sandbox: Environment, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/merchant-default").respond_with_data("ok")
    event = CallbackEventFactory.create(environment=sandbox, target_url=sandbox.callback_url)
    now = timezone.now()
    CallbackEvent.objects.filter(id=event.id).update(claimed_until=now + dt.timedelta(minutes=1))

    assert event_deliver(event_id=event.id) is None
    assert received(httpserver) == []

    CallbackEvent.objects.filter(id=event.id).update(claimed_until=now - dt.timedelta(seconds=1))
    delivered = event_deliver(event_id=event.id)

    assert delivered is not None and delivered.state == CallbackState.DELIVERED
    assert len(received(httpserver)) == 1


def test_410_stops_that_url_for_the_environment_only(
    merchant: CreatedMerchant, sandbox: Environment, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/merchant-default").respond_with_data("gone", status=410)
    live = merchant.merchant.environments.get(kind=EnvironmentKind.LIVE)
    live.callback_url = sandbox.callback_url
    live.save(update_fields=["callback_url"])
    with transaction.atomic():
        first = OrderFactory.create(environment=sandbox)
        order_stage_changed(order=first)
        order_stage_changed(order=OrderFactory.create(environment=sandbox))
    first_event, second_event = CallbackEvent.objects.order_by("created", "id")

    event_deliver(event_id=first_event.id)

    first_event.refresh_from_db()
    second_event.refresh_from_db()
    assert (first_event.state, first_event.attempts) == (CallbackState.STOPPED, 1)
    assert (second_event.state, second_event.attempts) == (CallbackState.STOPPED, 0)
    assert list(GoneCallbackUrl.objects.values_list("environment_id", "url")) == [
        (sandbox.id, sandbox.callback_url)
    ]
    assert event_deliver(event_id=second_event.id) is None
    with transaction.atomic():
        order_stage_changed(order=OrderFactory.create(environment=sandbox))
        order_stage_changed(order=OrderFactory.create(environment=live))
    assert CallbackEvent.objects.filter(environment=sandbox).latest("created").state == (
        CallbackState.STOPPED
    )
    assert CallbackEvent.objects.get(environment=live).state == CallbackState.PENDING
    assert len(received(httpserver)) == 1


def test_429_retry_after_sets_the_next_due_time(
    sandbox: Environment, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/merchant-default").respond_with_data(
        "", status=429, headers={"Retry-After": "3600"}
    )
    event = CallbackEventFactory.create(environment=sandbox, target_url=sandbox.callback_url)

    before = timezone.now()
    event_deliver(event_id=event.id)

    event.refresh_from_db()
    assert event.state == CallbackState.PENDING
    assert event.attempt_log.get().outcome == "RetryAfter"
    assert event.next_attempt_at is not None
    assert before + dt.timedelta(hours=1) <= event.next_attempt_at
    assert event.next_attempt_at <= timezone.now() + dt.timedelta(hours=1)


def test_the_eleventh_failure_gives_up(sandbox: Environment, httpserver: HTTPServer) -> None:
    httpserver.expect_request("/merchant-default").respond_with_data("", status=503)
    event = CallbackEventFactory.create(environment=sandbox, target_url=sandbox.callback_url)
    CallbackEvent.objects.filter(id=event.id).update(attempts=len(RETRY_DELAYS))

    event_deliver(event_id=event.id)

    event.refresh_from_db()
    assert (event.state, event.attempts, event.next_attempt_at) == (
        CallbackState.FAILED,
        11,
        None,
    )
    assert events_sweep_task() == 0


def test_replay_sends_the_same_id_and_bytes_again(
    sandbox: Environment,
    httpserver: HTTPServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    httpserver.expect_request("/merchant-default").respond_with_data("ok")
    with django_capture_on_commit_callbacks(execute=True):
        complete(OrderFactory.create(environment=sandbox))
    event = CallbackEvent.objects.get()

    with django_capture_on_commit_callbacks(execute=True):
        event_replay(event=event)

    event.refresh_from_db()
    assert (event.state, event.attempts) == (CallbackState.DELIVERED, 2)
    assert CallbackEvent.objects.count() == 1
    first, second = received(httpserver)
    assert first[1] == second[1] == bytes(event.body)
    assert first[2]["Webhook-Id"] == second[2]["Webhook-Id"] == event.public_id
    assert json.loads(second[1])["id"] == event.public_id


def test_staff_replay_from_the_admin_keeps_the_id(
    sandbox: Environment,
    httpserver: HTTPServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: CaptureOnCommit,
    client: Client,
    admin_user: User,
) -> None:
    httpserver.expect_request("/merchant-default").respond_with_data("ok")
    with django_capture_on_commit_callbacks(execute=True):
        complete(OrderFactory.create(environment=sandbox))
    event = CallbackEvent.objects.get()
    client.force_login(admin_user)

    listing = client.get(reverse("admin:webhooks_callbackevent_changelist"), {"q": event.public_id})
    page = client.get(reverse("admin:webhooks_callbackevent_change", args=[event.id]))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("admin:webhooks_callbackevent_changelist"),
            {"action": "replay", "_selected_action": [str(event.id)]},
        )

    assert listing.status_code == 200
    assert event.public_id in listing.content.decode()
    assert page.status_code == 200
    assert "Delivered" in page.content.decode()  # the attempt inline
    assert response.status_code == 302
    event.refresh_from_db()
    assert event.attempts == 2
    assert [h["Webhook-Id"] for _, _, h in received(httpserver)] == [event.public_id] * 2


def test_the_sweeper_sends_due_and_claim_expired_events_only(
    sandbox: Environment, httpserver: HTTPServer, eager_tasks: None
) -> None:
    httpserver.expect_request("/merchant-default").respond_with_data("ok")
    with transaction.atomic():  # committed without its message: as if the broker lost it
        orders = [OrderFactory.create(environment=sandbox) for _ in range(4)]
        for order in orders:
            order_stage_changed(order=order)
    due, expired_claim, later, claimed = CallbackEvent.objects.order_by("subject")
    assert [e.subject for e in (due, expired_claim, later, claimed)] == sorted(
        o.public_id for o in orders
    )
    now = timezone.now()
    CallbackEvent.objects.filter(id=expired_claim.id).update(
        claimed_until=now - dt.timedelta(seconds=1)
    )
    CallbackEvent.objects.filter(id=later.id).update(next_attempt_at=now + dt.timedelta(hours=1))
    CallbackEvent.objects.filter(id=claimed.id).update(claimed_until=now + dt.timedelta(hours=1))

    assert events_sweep_task() == 2

    states = dict(CallbackEvent.objects.values_list("id", "state"))
    assert states == {
        due.id: CallbackState.DELIVERED,
        expired_claim.id: CallbackState.DELIVERED,
        later.id: CallbackState.PENDING,
        claimed.id: CallbackState.PENDING,
    }
    assert sorted(h["Webhook-Id"] for _, _, h in received(httpserver)) == sorted(
        [due.public_id, expired_claim.public_id]
    )
    assert events_sweep_task() == 0


def test_the_sweeper_puts_its_messages_on_the_callbacks_queue(sandbox: Environment) -> None:
    event = CallbackEventFactory.create(environment=sandbox, target_url=sandbox.callback_url)

    with celery_app.connection_for_write() as connection:
        queue = connection.SimpleQueue("callbacks")
        queue.clear()
        try:
            assert events_sweep_task() == 1
            message = queue.get(timeout=5)
            message.ack()
            task, args = message.headers["task"], message.payload[0]
        finally:
            queue.close()

    assert (task, args) == ("webhooks.tasks.event_deliver_task", [event.id])
