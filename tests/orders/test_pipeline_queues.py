"""Each step on its own queue, and fairness between merchants at the download step.

These run the state machine in the test's process and read what it queued on the real broker
(Redis): the task messages a worker of each queue would take. ``test_pipeline_isolation.py`` shows
the same with real workers on their queues.
"""

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from merchants.models import PauseMode
from merchants.services import CreatedMerchant
from orders.models import Asset, Order, PipelineStep
from orders.pipeline.claims import downloads_wake, order_claim
from orders.pipeline.state_machine import INLINE_STEPS, order_advance, order_submit_now
from orders.tasks import orders_sweep_task
from tests.support.images import jpeg_bytes
from tests.support.orders import order_create_via_api, photo_order, pk
from tests.support.pipeline import advance_to
from tests.support.servers import requests_to, serve
from tests.support.worker import needs_worker, purge_queues, queued

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue"),
    needs_worker,
]
ADVANCE = "orders.tasks.order_advance_task"


@pytest.fixture(autouse=True)
def empty_queues() -> Any:
    purge_queues()
    yield
    purge_queues()


def test_an_orders_tasks_go_to_the_queue_of_the_step_they_run(
    sandbox_api: APIClient, httpserver: HTTPServer, settings: Any
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    callback_url = httpserver.url_for("/callbacks")
    order_id = photo_order(sandbox_api, httpserver, "routed", callbackUrl=callback_url)

    # Created: its downloads are queued on the downloads queue, nothing else is.
    assert queued("downloads") == [(ADVANCE, [pk(order_id), "Download"])]
    assert queued("images") == []
    assert queued("callbacks") == []

    # The download step, run as the task runs it, queues allocation on the images queue;
    # its callback goes to the callbacks queue.
    purge_queues()
    order_advance(order_id=pk(order_id), step=PipelineStep.DOWNLOAD, follow_up=True)
    assert queued("images") == [(ADVANCE, [pk(order_id), "Allocate"])]
    assert queued("downloads") == []
    [(task, _)] = queued("callbacks")
    assert task == "webhooks.tasks.event_deliver_task"

    # The sweeper queues each due order on the queue of its step.
    order = Order.objects.get(id=pk(order_id))
    other_id = photo_order(sandbox_api, httpserver, "swept")
    purge_queues()
    Order.objects.filter(id__in=[order.id, pk(other_id)]).update(swept_at=None)
    assert orders_sweep_task() == 2
    assert queued("images") == [(ADVANCE, [order.id, "Allocate"])]
    assert queued("downloads") == [(ADVANCE, [pk(other_id), "Download"])]


def test_a_task_for_a_step_the_order_has_left_runs_nothing(
    sandbox_api: APIClient, httpserver: HTTPServer, settings: Any
) -> None:
    """A stale or duplicated download task message never makes a download worker allocate or
    render: the claim takes only the step the task message was queued for."""
    settings.ALLOW_PRIVATE_URLS = True
    order_id = photo_order(sandbox_api, httpserver, "stale")
    advance_to(order_id, PipelineStep.ALLOCATE)
    before = Order.objects.get(id=pk(order_id))

    assert order_advance(order_id=pk(order_id), step=PipelineStep.DOWNLOAD) is None

    after = Order.objects.get(id=pk(order_id))
    assert (after.pipeline_step, after.due_at, after.claimed_until, after.last_updated) == (
        PipelineStep.ALLOCATE, before.due_at, None, before.last_updated,
    )  # fmt: skip
    order_advance(order_id=pk(order_id), step=PipelineStep.ALLOCATE)
    assert Order.objects.get(id=pk(order_id)).pipeline_step == PipelineStep.PREPARE


def test_one_run_takes_an_order_through_the_steps_of_its_queue_that_are_due_at_once(
    sandbox_api: APIClient, httpserver: HTTPServer, settings: Any
) -> None:
    """The task's run of Allocate goes on to the print-ready files itself and queues the
    submission on the labs queue; the labs queue's run of Submit goes on to the first production
    check, and the next check, due later, is queued on the labs queue. Run without
    ``follow_up`` (a test's step), one step runs."""
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SIMULATOR_SECONDS = 60
    order_id = photo_order(sandbox_api, httpserver, "inline")
    advance_to(order_id, PipelineStep.ALLOCATE)
    purge_queues()

    order_advance(order_id=pk(order_id), step=PipelineStep.ALLOCATE, follow_up=True)

    order = Order.objects.get(id=pk(order_id))
    assert (order.pipeline_step, order.claimed_until) == (PipelineStep.SUBMIT, None)
    assert order.print_ready_assets_prepared == "Complete"
    assert queued("labs") == [(ADVANCE, [order.id, "Submit"])]
    assert queued("images") == [] and queued("downloads") == []
    purge_queues()

    due = order_advance(order_id=pk(order_id), step=PipelineStep.SUBMIT, follow_up=True)

    order = Order.objects.get(id=pk(order_id))
    assert order.pipeline_step == PipelineStep.PRODUCTION
    assert order.submitted_at is not None and order.claimed_until is None
    assert due is not None and order.due_at == due > timezone.now()
    assert queued("labs") == [(ADVANCE, [order.id, "Production"])]
    assert queued("images") == [] and queued("downloads") == []


def test_a_run_does_not_go_on_to_a_step_of_another_queue(
    sandbox_api: APIClient, httpserver: HTTPServer, merchant: CreatedMerchant, settings: Any
) -> None:
    """A hold released on the images queue queues the download on the downloads queue."""
    settings.ALLOW_PRIVATE_URLS = True
    environment = merchant.merchant.environments.get(kind="Sandbox")
    environment.pause_mode = PauseMode.INDEFINITE
    environment.save(update_fields=["pause_mode"])
    url = serve(httpserver, "/held.jpg", jpeg_bytes(), "image/jpeg")
    items = [{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}]
    order_id = order_create_via_api(sandbox_api, items=items, outcome="OnHold")
    assert order_submit_now(order=Order.objects.get(id=pk(order_id))) is True
    purge_queues()

    order_advance(order_id=pk(order_id), step=PipelineStep.HELD, follow_up=True)

    order = Order.objects.get(id=pk(order_id))
    assert (order.pipeline_step, order.claimed_until) == (PipelineStep.DOWNLOAD, None)
    assert not Asset.objects.filter(item__order=order).exclude(source_file="").exists()
    assert queued("downloads") == [(ADVANCE, [order.id, "Download"])]
    assert queued("images") == []


def _photo(api: APIClient, httpserver: HTTPServer, name: str) -> str:
    url = serve(httpserver, f"/{name}.jpg", jpeg_bytes(), "image/jpeg")
    items = [{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}]
    return order_create_via_api(api, items=items)


def test_a_merchant_downloads_at_most_its_share_and_the_rest_wait_in_their_rows(
    merchant: CreatedMerchant,
    other_merchant: CreatedMerchant,
    httpserver: HTTPServer,
    settings: Any,
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.DOWNLOADS_PER_MERCHANT = 2
    settings.DOWNLOAD_DEFER_SECONDS = 30
    acme, acme_live = APIClient(), APIClient()
    acme.credentials(HTTP_X_API_KEY=merchant.sandbox_api_key)
    acme_live.credentials(HTTP_X_API_KEY=merchant.live_api_key)  # the same merchant, Live
    # The oldest waits a minute after its step failed (say the storage refused the file): its
    # asset is due, but the share did not defer it, so a free slot does not cut its wait short.
    failed = _photo(acme, httpserver, "acme-failed")
    Order.objects.filter(id=pk(failed)).update(due_at=timezone.now() + timedelta(minutes=1))
    first, second, third = (_photo(acme, httpserver, f"acme-{n}") for n in range(3))
    live = _photo(acme_live, httpserver, "acme-live")
    waiting = _photo(acme, httpserver, "acme-backoff")  # waits for its retry, not for a slot
    Order.objects.filter(id=pk(waiting)).update(due_at=timezone.now() + timedelta(hours=1))
    Asset.objects.filter(item__order_id=pk(waiting)).update(
        next_attempt_at=timezone.now() + timedelta(hours=1)
    )
    others = APIClient()
    others.credentials(HTTP_X_API_KEY=other_merchant.sandbox_api_key)
    neighbour = _photo(others, httpserver, "neighbour")

    # Two of Acme's orders are downloading (two workers hold them).
    assert order_claim(order_id=pk(first), step=PipelineStep.DOWNLOAD) is not None
    assert order_claim(order_id=pk(second), step=PipelineStep.DOWNLOAD) is not None

    # A third, and one of its Live environment, are not run: deferred in their rows.
    before = timezone.now()
    assert order_advance(order_id=pk(third), step=PipelineStep.DOWNLOAD) is None
    assert order_advance(order_id=pk(live), step=PipelineStep.DOWNLOAD) is None
    for deferred in (third, live):
        row = Order.objects.get(id=pk(deferred))
        assert (row.pipeline_step, row.claimed_until) == (PipelineStep.DOWNLOAD, None)
        assert row.due_at is not None
        assert timedelta(seconds=29) < row.due_at - before < timedelta(seconds=31)
        assert row.download_deferred_at is not None
    assert requests_to(httpserver, "/acme-2.jpg") == requests_to(httpserver, "/acme-live.jpg") == 0
    assert set(Asset.objects.filter(item__order_id=pk(third)).values_list("download_attempts")) == {
        (0,)
    }

    # Another merchant's order downloads at once.
    order_advance(order_id=pk(neighbour), step=PipelineStep.DOWNLOAD)
    assert Order.objects.get(id=pk(neighbour)).pipeline_step == PipelineStep.ALLOCATE

    # The first download ends (its worker's claim expired and this run took it over): the
    # longest-deferred order is made due now and queued; the one in backoff is left alone.
    Order.objects.filter(id=pk(first)).update(claimed_until=timezone.now() - timedelta(seconds=1))
    purge_queues()
    order_advance(order_id=pk(first), step=PipelineStep.DOWNLOAD)

    assert Order.objects.get(id=pk(first)).pipeline_step == PipelineStep.ALLOCATE
    woken = Order.objects.get(id=pk(third))
    assert woken.due_at is not None and woken.due_at <= timezone.now()
    still_deferred, in_backoff = (Order.objects.get(id=pk(o)).due_at for o in (live, waiting))
    assert still_deferred is not None and in_backoff is not None
    assert still_deferred > timezone.now() + timedelta(seconds=25)
    assert in_backoff > timezone.now() + timedelta(minutes=59)
    failed_due = Order.objects.get(id=pk(failed)).due_at
    assert failed_due is not None and failed_due > timezone.now() + timedelta(seconds=50)
    assert queued("downloads") == [(ADVANCE, [pk(third), "Download"])]

    order_advance(order_id=pk(third), step=PipelineStep.DOWNLOAD)
    assert Order.objects.get(id=pk(third)).pipeline_step == PipelineStep.ALLOCATE
    assert Order.objects.get(id=pk(third)).download_deferred_at is None  # cleared by its claim
    assert requests_to(httpserver, "/acme-2.jpg") == 1


def test_a_tasks_download_hands_the_freed_slot_to_the_merchants_next_order_in_the_same_run(
    sandbox_api: APIClient, httpserver: HTTPServer, settings: Any
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.DOWNLOADS_PER_MERCHANT = 1
    first, second, third = (_photo(sandbox_api, httpserver, f"handed-{n}") for n in range(3))
    # The first is downloading; the second and third are deferred for the merchant's one slot.
    assert order_claim(order_id=pk(first), step=PipelineStep.DOWNLOAD) is not None
    for deferred in (second, third):
        assert order_advance(order_id=pk(deferred), step=PipelineStep.DOWNLOAD) is None
        assert Order.objects.get(id=pk(deferred)).download_deferred_at is not None
    Order.objects.filter(id=pk(first)).update(claimed_until=timezone.now() - timedelta(seconds=1))
    purge_queues()

    # The task's run downloads the first, then the second in the slot the first freed, then
    # the third in the slot the second freed: no task message on the downloads queue between them.
    order_advance(order_id=pk(first), step=PipelineStep.DOWNLOAD, follow_up=True)

    for order_id in (first, second, third):
        row = Order.objects.get(id=pk(order_id))
        assert (row.pipeline_step, row.download_deferred_at) == (PipelineStep.ALLOCATE, None)
    assert [requests_to(httpserver, f"/handed-{n}.jpg") for n in range(3)] == [1, 1, 1]
    assert queued("downloads") == []
    assert queued("images") == [(ADVANCE, [pk(o), "Allocate"]) for o in (first, second, third)]


def test_a_run_out_of_steps_rings_for_the_woken_order_instead(
    sandbox_api: APIClient, httpserver: HTTPServer, settings: Any
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.DOWNLOADS_PER_MERCHANT = 1
    orders = [_photo(sandbox_api, httpserver, f"budget-{n}") for n in range(INLINE_STEPS + 1)]
    assert order_claim(order_id=pk(orders[0]), step=PipelineStep.DOWNLOAD) is not None
    for deferred in orders[1:]:
        assert order_advance(order_id=pk(deferred), step=PipelineStep.DOWNLOAD) is None
    Order.objects.filter(id=pk(orders[0])).update(
        claimed_until=timezone.now() - timedelta(seconds=1)
    )
    purge_queues()

    order_advance(order_id=pk(orders[0]), step=PipelineStep.DOWNLOAD, follow_up=True)

    # INLINE_STEPS downloads in the run; the last one's freed slot is queued.
    steps = [Order.objects.get(id=pk(o)).pipeline_step for o in orders]
    assert steps == [PipelineStep.ALLOCATE] * INLINE_STEPS + [PipelineStep.DOWNLOAD]
    assert queued("downloads") == [(ADVANCE, [pk(orders[-1]), "Download"])]


def test_a_download_is_claimed_or_deferred_under_the_merchants_lock_and_a_freed_slot_wakes(
    sandbox_api: APIClient,
    httpserver: HTTPServer,
    settings: Any,
    merchant: CreatedMerchant,
    django_assert_num_queries: Any,
) -> None:
    """The merchant's downloads are counted after its row is locked (and the order's), then
    the order claimed or deferred; a freed slot wakes the longest-deferred order."""
    settings.ALLOW_PRIVATE_URLS = True
    settings.DOWNLOADS_PER_MERCHANT = 1
    first, second, third = (_photo(sandbox_api, httpserver, f"counted-{n}") for n in range(3))

    # BEGIN, the merchant locked, the order locked and read, its merchant's downloads counted,
    # the order claimed, COMMIT.
    with django_assert_num_queries(6):
        assert order_claim(order_id=pk(first), step=PipelineStep.DOWNLOAD) is not None
    for deferred in (second, third):
        with django_assert_num_queries(6):  # the same, deferred instead
            assert order_claim(order_id=pk(deferred), step=PipelineStep.DOWNLOAD) is None
        row = Order.objects.get(id=pk(deferred))
        assert row.download_deferred_at is not None and row.claimed_until is None
        assert row.due_at is not None and row.due_at > timezone.now() + timedelta(seconds=25)
    with django_assert_num_queries(3):  # not due: nothing locked, no claim
        assert order_claim(order_id=pk(second), step=PipelineStep.DOWNLOAD) is None

    # The slot is still taken: no order is woken (the deferred read, the downloads counted).
    with django_assert_num_queries(2):
        assert downloads_wake(merchant_id=merchant.merchant.id) == []
    Order.objects.filter(id=pk(first)).update(
        pipeline_step=PipelineStep.ALLOCATE, claimed_until=None
    )
    purge_queues()

    # The slot freed: the longest-deferred order alone is woken (the same, and its row made due)
    # and queued.
    with django_assert_num_queries(3):
        assert downloads_wake(merchant_id=merchant.merchant.id) == [pk(second)]
    woken, waiting = (Order.objects.get(id=pk(o)) for o in (second, third))
    assert woken.due_at is not None and woken.due_at <= timezone.now()
    assert waiting.due_at is not None and waiting.due_at > timezone.now()
    assert queued("downloads") == [(ADVANCE, [pk(second), "Download"])]
    claimed = order_claim(order_id=pk(second), step=PipelineStep.DOWNLOAD)
    assert claimed is not None and claimed.download_deferred_at is None
    assert claimed.environment.merchant_id == merchant.merchant.id
