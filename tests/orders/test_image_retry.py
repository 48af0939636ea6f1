"""An operator acts on an order whose images are not downloaded: "Run the due pipeline step now"
makes its step due now and a worker runs it at once; "Retry with a corrected image URL"
replaces an image's URL while the download is still retrying, or after it failed (reopened),
confirmed on its own page and audited, and the download runs now."""

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from orders.models import Asset, DetailState, Order, OrderItem, PipelineStep, Stage
from orders.pipeline.state_machine import order_advance, order_run_now
from staff.models import AuditEntry
from tests.support.orders import fetch, order_create_via_api, pk
from tests.support.pipeline import run_in_process
from tests.support.servers import AssetHost
from tests.support.staff import signed_in, staff_client
from tests.support.worker import Worker, needs_worker, wait_for, worker_running

# The worker test commits; the others stay inside their transaction, out of the worker's sight.
pytestmark = pytest.mark.usefixtures("catalogue")


@pytest.fixture
def host(httpserver: HTTPServer) -> AssetHost:
    return AssetHost(httpserver)


@pytest.fixture
def operator() -> Client:
    return staff_client("olga")  # an operator, not a superuser


def image_order(api: APIClient, host: AssetHost, name: str) -> str:
    items = [{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": host.url(name)}]}]
    return order_create_via_api(api, items=items)


def asset_of(order_id: str) -> Asset:
    return Asset.objects.get(item__order_id=pk(order_id))


def run_due_step_now(client: Client, *orders: str) -> list[str]:
    """The order list's action "Run the due pipeline step now" on ``orders``; its messages."""
    response = client.post(
        reverse("admin:orders_order_changelist"),
        {"action": "queue_due_step", "_selected_action": [pk(o) for o in orders]},
        follow=True,
    )
    assert response.status_code == 200
    return [str(m) for m in response.context["messages"]]


# --- Run the due pipeline step now, with a real worker ---------------------------------------


@pytest.fixture(scope="module")
def slow_retry_worker(
    django_db_setup: None, django_db_blocker: Any, live_server: Any
) -> Iterator[Worker]:
    """A worker whose retries wait 100 s and more: nothing but "Run now" moves an order
    inside a test."""
    with worker_running(
        live_server.url,
        django_db_blocker,
        ASSET_PERMANENT_RETRY_SECONDS="100,120",
        ASSET_RETRY_BASE_SECONDS="100",
        ASSET_RETRY_MAX_SECONDS="3600",
    ) as running:
        yield running


@needs_worker
@pytest.mark.slow
@pytest.mark.side_by_side  # "at once": within 20 s of a 100 s backoff, not a timing
@pytest.mark.django_db(transaction=True)
def test_run_the_due_step_now_downloads_a_waiting_image_at_once(
    slow_retry_worker: Worker, sandbox_api: APIClient, host: AssetHost
) -> None:
    order_id = image_order(sandbox_api, host, "late.jpg")
    wait_for("the first attempt", lambda: asset_of(order_id).download_attempts == 1, None)
    waiting = Order.objects.get(id=pk(order_id))
    host.upload("late.jpg")
    operator = staff_client("olga")

    said = run_due_step_now(operator, order_id)

    assert said == ["1 order(s) due now and queued for their step."]
    assert waiting.due_at is not None
    assert waiting.due_at - timezone.now() > timedelta(seconds=90)  # it was waiting
    wait_for(
        "the download to complete",
        lambda: fetch(sandbox_api, order_id)["status"]["details"]["downloadAssets"] == "Complete",
        slow_retry_worker,
        timeout=20,
    )
    assert host.requests("late.jpg") == 2
    assert asset_of(order_id).download_attempts == 2


# --- Run the due pipeline step now, in-process -----------------------------------------------


@pytest.mark.django_db
def test_run_now_makes_the_download_and_its_waiting_images_due_now(
    settings: Any, sandbox_api: APIClient, host: AssetHost
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    order_id = image_order(sandbox_api, host, "late.jpg")
    order_advance(order_id=pk(order_id))
    before = asset_of(order_id)

    step = order_run_now(order_id=pk(order_id))
    now = timezone.now()

    assert step == PipelineStep.DOWNLOAD
    assert before.next_attempt_at is not None and before.next_attempt_at > now
    order, asset = Order.objects.get(id=pk(order_id)), asset_of(order_id)
    assert order.due_at is not None and order.due_at <= now
    assert asset.next_attempt_at is not None and asset.next_attempt_at <= now
    assert asset.download_attempts == 1  # its attempts are kept
    order_advance(order_id=pk(order_id))
    assert host.requests("late.jpg") == 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    "step",
    [PipelineStep.HELD, PipelineStep.AWAITING_PAYMENT, PipelineStep.FAILED, PipelineStep.DONE],
)
def test_run_now_leaves_an_order_at_no_working_step_as_it_is(
    sandbox_api: APIClient, host: AssetHost, operator: Client, step: str
) -> None:
    order_id = image_order(sandbox_api, host, "photo.jpg")
    later = timezone.now() + timedelta(hours=1)
    Order.objects.filter(id=pk(order_id)).update(pipeline_step=step, due_at=later)

    said = run_due_step_now(operator, order_id)

    assert said == [
        "1 order(s) left as they are: held (use Submit held orders now), awaiting payment, "
        "finished, failed, or being worked on now."
    ]
    assert Order.objects.get(id=pk(order_id)).due_at == later


@pytest.mark.django_db
def test_run_now_leaves_an_order_a_worker_is_running(
    sandbox_api: APIClient, host: AssetHost
) -> None:
    order_id = image_order(sandbox_api, host, "photo.jpg")
    claimed = timezone.now() + timedelta(seconds=20)
    later = timezone.now() + timedelta(minutes=5)
    Order.objects.filter(id=pk(order_id)).update(claimed_until=claimed, claim_token=7, due_at=later)

    assert order_run_now(order_id=pk(order_id)) is None
    order = Order.objects.get(id=pk(order_id))
    assert (order.due_at, order.claimed_until, order.claim_token) == (later, claimed, 7)


# --- Retry with a corrected image URL --------------------------------------------------------


def correction_url(order_id: str) -> str:
    return reverse("admin:orders_order_asset_url", args=[pk(order_id)])


@pytest.mark.django_db
def test_an_image_url_is_corrected_while_the_download_is_still_retrying(
    settings: Any, sandbox_api: APIClient, host: AssetHost, operator: Client
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    order_id = image_order(sandbox_api, host, "typo.jpg")
    order_advance(order_id=pk(order_id))  # HTTP 404: retried in a minute
    asset = asset_of(order_id)
    host.upload("photo.jpg")
    page = operator.get(reverse("admin:orders_order_change", args=[pk(order_id)])).content.decode()
    confirmation = operator.get(correction_url(order_id)).content.decode()

    done = operator.post(correction_url(order_id), {f"asset_{asset.id}": host.url("photo.jpg")})

    assert 'id="asset-url-link"' in page and "Retry with a corrected image URL" in page
    assert "still retrying its download" in confirmation
    assert "HTTP 404" in confirmation and "1 attempt(s)" in confirmation
    assert done.status_code == 302
    corrected = asset_of(order_id)
    assert (corrected.url, corrected.download_attempts, corrected.last_error) == (
        host.url("photo.jpg"), 0, ""
    )  # fmt: skip
    order = Order.objects.get(id=pk(order_id))
    assert order.pipeline_step == PipelineStep.DOWNLOAD
    assert order.due_at is not None and order.due_at <= timezone.now()
    assert fetch(sandbox_api, order_id)["status"]["issues"] == []
    [entry] = AuditEntry.objects.filter(operation="retry with a corrected image URL")
    assert (entry.user.username, entry.target, entry.success) == ("olga", order_id, True)  # type: ignore[union-attr]
    assert entry.message == (
        f"Download runs now; corrected URLs: {asset.public_id} → {host.url('photo.jpg')}"
    )
    order_advance(order_id=pk(order_id))
    assert fetch(sandbox_api, order_id)["status"]["details"]["downloadAssets"] == "Complete"
    assert host.requests("typo.jpg") == 1


@pytest.mark.django_db
def test_a_correction_drops_the_claim_of_a_download_of_the_old_url(
    sandbox_api: APIClient, host: AssetHost, operator: Client
) -> None:
    order_id = image_order(sandbox_api, host, "typo.jpg")
    asset = asset_of(order_id)
    Order.objects.filter(id=pk(order_id)).update(
        claimed_until=timezone.now() + timedelta(seconds=20), claim_token=7
    )

    operator.post(correction_url(order_id), {f"asset_{asset.id}": host.url("photo.jpg")})

    order = Order.objects.get(id=pk(order_id))
    assert (order.claimed_until, order.claim_token) == (None, None)
    assert asset_of(order_id).url == host.url("photo.jpg")


@pytest.mark.django_db
def test_an_image_url_corrected_after_the_download_failed_reopens_it(
    settings: Any, sandbox_api: APIClient, host: AssetHost, operator: Client
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.ASSET_PERMANENT_RETRY_SECONDS = [0.0, 0.0]
    # The run after the correction goes on to the end: the simulator lab ships at once, rather
    # than a minute later (slept through in this process).
    settings.LAB_SIMULATOR_SECONDS = 0
    order_id = image_order(sandbox_api, host, "typo.jpg")
    assert run_in_process(order_id).pipeline_step == PipelineStep.FAILED
    asset = asset_of(order_id)
    host.upload("photo.jpg")

    confirmation = operator.get(correction_url(order_id)).content.decode()
    operator.post(correction_url(order_id), {f"asset_{asset.id}": host.url("photo.jpg")})

    assert "The order's download failed" in confirmation
    order = Order.objects.get(id=pk(order_id))
    assert (order.pipeline_step, order.download_assets) == (
        PipelineStep.DOWNLOAD, DetailState.IN_PROGRESS
    )  # fmt: skip
    assert OrderItem.objects.get(order=order).status == "NotYetDownloaded"
    assert fetch(sandbox_api, order_id)["status"]["issues"] == []
    assert run_in_process(order_id).download_assets == DetailState.COMPLETE
    assert host.requests("typo.jpg") == 3


@pytest.mark.django_db
def test_a_correction_that_changes_no_url_is_asked_again_and_changes_nothing(
    sandbox_api: APIClient, host: AssetHost, operator: Client
) -> None:
    order_id = image_order(sandbox_api, host, "typo.jpg")
    asset = asset_of(order_id)

    page = operator.post(correction_url(order_id), {f"asset_{asset.id}": asset.url})

    assert page.status_code == 200
    assert "Change the URL of at least one image." in page.content.decode()
    assert asset_of(order_id).url == asset.url
    assert not AuditEntry.objects.filter(operation="retry with a corrected image URL").exists()


@pytest.mark.django_db
def test_no_correction_is_offered_once_the_images_are_downloaded(
    sandbox_api: APIClient, host: AssetHost, operator: Client
) -> None:
    order_id = image_order(sandbox_api, host, "photo.jpg")
    Order.objects.filter(id=pk(order_id)).update(pipeline_step=PipelineStep.ALLOCATE)
    asset = asset_of(order_id)

    page = operator.get(reverse("admin:orders_order_change", args=[pk(order_id)])).content.decode()
    refused = operator.post(correction_url(order_id), {f"asset_{asset.id}": host.url("x.jpg")})

    assert "asset-url-link" not in page
    assert "is not downloading its images and its download did not fail" in (
        refused.content.decode()
    )
    assert asset_of(order_id).url == asset.url


@pytest.mark.django_db
def test_a_staff_user_without_the_operator_role_may_not_correct_an_image_url(
    sandbox_api: APIClient, host: AssetHost
) -> None:
    order_id = image_order(sandbox_api, host, "typo.jpg")
    asset = asset_of(order_id)
    viewer = User.objects.create_user(username="viewer", is_staff=True)

    refused = signed_in(viewer).post(
        correction_url(order_id), {f"asset_{asset.id}": host.url("photo.jpg")}
    )

    assert refused.status_code == 403
    assert asset_of(order_id).url == asset.url
    assert Order.objects.get(id=pk(order_id)).stage == Stage.IN_PROGRESS
