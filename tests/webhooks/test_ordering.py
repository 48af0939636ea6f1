"""One order's callbacks go one at a time in ``sequence`` order (decisions.md, "Callbacks, wave
4"): a later event is not sent while an earlier one of its order is being delivered or waits
for a retry; the end of the earlier one (delivered, given up, 410) queues the next at once; other
orders are not held; a replay goes at once; a killed worker's lapsed claim lets the chain go on.

Receivers are real local HTTP servers; where a test follows the chain through
``event_deliver_task`` Celery runs eagerly and the commit hooks are run.
"""

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from django.utils import timezone
from pytest_httpserver import HTTPServer

from config.celery_app import app as celery_app
from merchants.models import Environment, EnvironmentKind
from merchants.services import CreatedMerchant
from tests.webhooks.factories import CallbackEventFactory
from webhooks.delivery import RETRY_DELAYS
from webhooks.models import CallbackEvent, CallbackState
from webhooks.services import event_deliver, event_replay
from webhooks.tasks import event_deliver_task, events_sweep_task

CaptureOnCommit = Callable[..., Any]


@pytest.fixture(autouse=True)
def private_urls_allowed(settings: Any) -> None:
    settings.ALLOW_PRIVATE_URLS = True


@pytest.fixture
def sandbox(merchant: CreatedMerchant) -> Environment:
    return merchant.merchant.environments.get(kind=EnvironmentKind.SANDBOX)


def chain(
    environment: Environment, url: str, subject: str, count: int, **first: Any
) -> list[CallbackEvent]:
    """``count`` pending events of ``subject``, due now, numbered from 1; the first one with
    the fields ``first`` gives."""
    events = [
        CallbackEventFactory.create(
            environment=environment, subject=subject, sequence=n, target_url=url
        )
        for n in range(1, count + 1)
    ]
    if first:
        CallbackEvent.objects.filter(id=events[0].id).update(**first)
    return events


def arrived(httpserver: HTTPServer) -> list[tuple[str, str]]:
    """(path, event id) of each request, in the order they came."""
    return [(r.path, r.headers["Webhook-Id"]) for r, _ in httpserver.log]


def states(events: list[CallbackEvent]) -> list[tuple[str, int]]:
    rows = dict(CallbackEvent.objects.values_list("id", "state"))
    attempts = dict(CallbackEvent.objects.values_list("id", "attempts"))
    return [(rows[e.id], attempts[e.id]) for e in events]


def test_a_later_event_waits_while_an_earlier_one_of_its_order_waits_for_a_retry(
    sandbox: Environment, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/hook").respond_with_data("ok")
    url = httpserver.url_for("/hook")
    later = timezone.now() + dt.timedelta(minutes=1)
    first, second = chain(sandbox, url, "ord_a", 2, attempts=1, next_attempt_at=later)
    (other,) = chain(sandbox, url, "ord_b", 1)

    assert event_deliver(event_id=second.id) is None
    delivered = event_deliver(event_id=other.id)

    assert delivered is not None and delivered.state == CallbackState.DELIVERED
    assert arrived(httpserver) == [("/hook", other.public_id)]
    assert states([first, second]) == [(CallbackState.PENDING, 1), (CallbackState.PENDING, 0)]
    assert CallbackEvent.objects.get(id=second.id).claimed_until is None


def test_a_later_event_waits_while_an_earlier_one_is_being_delivered(
    sandbox: Environment, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/hook").respond_with_data("ok")
    held = timezone.now() + dt.timedelta(seconds=40)
    first, second, third = chain(sandbox, httpserver.url_for("/hook"), "ord_a", 3)
    CallbackEvent.objects.filter(id=first.id).update(claimed_until=held)

    assert event_deliver(event_id=second.id) is None
    assert event_deliver(event_id=third.id) is None
    assert events_sweep_task() == 0

    assert arrived(httpserver) == []
    assert states([first, second, third]) == [(CallbackState.PENDING, 0)] * 3


def test_the_end_of_each_event_sends_the_next_of_its_order_at_once(
    sandbox: Environment,
    httpserver: HTTPServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    httpserver.expect_request("/hook").respond_with_data("ok")
    events = chain(sandbox, httpserver.url_for("/hook"), "ord_a", 3)

    with django_capture_on_commit_callbacks(execute=True):
        for event in reversed(events):  # their messages come last first
            event_deliver_task(event.id)

    assert arrived(httpserver) == [("/hook", e.public_id) for e in events]
    assert states(events) == [(CallbackState.DELIVERED, 1)] * 3


def test_a_failed_attempt_holds_the_next_until_its_retry_delivers(
    sandbox: Environment, httpserver: HTTPServer, eager_tasks: None
) -> None:
    httpserver.expect_ordered_request("/hook").respond_with_data("busy", status=500)
    httpserver.expect_ordered_request("/hook").respond_with_data("ok")
    httpserver.expect_ordered_request("/hook").respond_with_data("ok")
    first, second = chain(sandbox, httpserver.url_for("/hook"), "ord_a", 2)

    event_deliver(event_id=first.id)
    refused = event_deliver(event_id=second.id)
    CallbackEvent.objects.filter(id=first.id).update(next_attempt_at=timezone.now())
    event_deliver(event_id=first.id)
    then = event_deliver(event_id=second.id)

    assert refused is None
    assert then is not None and then.state == CallbackState.DELIVERED
    assert arrived(httpserver) == [
        ("/hook", first.public_id),
        ("/hook", first.public_id),
        ("/hook", second.public_id),
    ]
    assert states([first, second]) == [(CallbackState.DELIVERED, 2), (CallbackState.DELIVERED, 1)]


def test_an_earlier_event_given_up_lets_the_next_go(
    sandbox: Environment,
    httpserver: HTTPServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    httpserver.expect_request("/down").respond_with_data("", status=503)
    httpserver.expect_request("/hook").respond_with_data("ok")
    first, second = chain(
        sandbox, httpserver.url_for("/hook"), "ord_a", 2, attempts=len(RETRY_DELAYS)
    )
    CallbackEvent.objects.filter(id=first.id).update(target_url=httpserver.url_for("/down"))

    with django_capture_on_commit_callbacks(execute=True):
        event_deliver_task(first.id)

    assert arrived(httpserver) == [("/down", first.public_id), ("/hook", second.public_id)]
    assert states([first, second]) == [(CallbackState.FAILED, 11), (CallbackState.DELIVERED, 1)]


def test_an_earlier_event_stopped_by_410_lets_the_next_go(
    sandbox: Environment,
    httpserver: HTTPServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    httpserver.expect_request("/gone").respond_with_data("", status=410)
    httpserver.expect_request("/hook").respond_with_data("ok")
    first, second = chain(sandbox, httpserver.url_for("/hook"), "ord_a", 2)
    CallbackEvent.objects.filter(id=first.id).update(target_url=httpserver.url_for("/gone"))

    with django_capture_on_commit_callbacks(execute=True):
        event_deliver_task(first.id)

    assert arrived(httpserver) == [("/gone", first.public_id), ("/hook", second.public_id)]
    assert states([first, second]) == [(CallbackState.STOPPED, 1), (CallbackState.DELIVERED, 1)]


def test_a_killed_workers_claim_lapses_and_the_order_goes_on_in_order(
    sandbox: Environment,
    httpserver: HTTPServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    httpserver.expect_request("/hook").respond_with_data("ok")
    lapsed = timezone.now() - dt.timedelta(seconds=1)
    first, second = chain(sandbox, httpserver.url_for("/hook"), "ord_a", 2)
    # The worker that claimed the first event died mid-delivery; the second's message came
    # meanwhile and was refused.
    CallbackEvent.objects.filter(id=first.id).update(
        claimed_until=lapsed, swept_at=lapsed - dt.timedelta(seconds=1)
    )

    with django_capture_on_commit_callbacks(execute=True):
        swept = events_sweep_task()

    assert swept == 1
    assert arrived(httpserver) == [("/hook", first.public_id), ("/hook", second.public_id)]
    assert states([first, second]) == [(CallbackState.DELIVERED, 1)] * 2


def test_replay_sends_at_once_and_the_replayed_event_holds_the_later_ones(
    sandbox: Environment,
    httpserver: HTTPServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    httpserver.expect_request("/hook").respond_with_data("ok")
    later = timezone.now() + dt.timedelta(minutes=1)
    first, second, third = chain(
        sandbox, httpserver.url_for("/hook"), "ord_a", 3, attempts=1, next_attempt_at=later
    )

    with django_capture_on_commit_callbacks(execute=True):
        event_replay(event=CallbackEvent.objects.get(id=second.id))
    refused_third = event_deliver(event_id=third.id)
    CallbackEvent.objects.filter(id=second.id).update(
        state=CallbackState.PENDING, next_attempt_at=later
    )  # the replay failed and waits for a retry: the third still waits
    CallbackEvent.objects.filter(id=first.id).update(state=CallbackState.DELIVERED)
    refused_again = event_deliver(event_id=third.id)

    assert refused_third is None and refused_again is None
    assert arrived(httpserver) == [("/hook", second.public_id)]
    assert states([first, second, third]) == [
        (CallbackState.DELIVERED, 1),
        (CallbackState.PENDING, 1),
        (CallbackState.PENDING, 0),
    ]
    assert CallbackEvent.objects.get(id=second.id).replayed is True


def test_the_sweeper_queues_only_the_earliest_pending_event_of_each_order(
    sandbox: Environment, httpserver: HTTPServer
) -> None:
    url = httpserver.url_for("/hook")
    a_events = chain(sandbox, url, "ord_a", 3)
    b_events = chain(sandbox, url, "ord_b", 2)
    CallbackEvent.objects.filter(id=b_events[0].id).update(state=CallbackState.DELIVERED)

    with celery_app.connection_for_write() as connection:
        queue = connection.SimpleQueue("callbacks")
        queue.clear()
        try:
            swept = events_sweep_task()
            messages = [queue.get(timeout=5) for _ in range(swept)]
            for message in messages:
                message.ack()
            with pytest.raises(queue.Empty):
                queue.get(timeout=0.2)
        finally:
            queue.close()

    assert swept == 2
    assert sorted(m.payload[0] for m in messages) == sorted([[a_events[0].id], [b_events[1].id]])
