"""Images that cannot be fetched (decisions.md): an answer that will not change on retry ends
the download after at most 3 attempts within 5 minutes, with its issue and callback; timeouts,
connection errors, 429 and 5xx keep the 10-attempt backoff. Run in-process, one attempt at a
time, so each wait can be read from the rows."""

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient
from werkzeug import Request, Response

from orders.models import Asset, Order, PipelineStep
from orders.pipeline.state_machine import order_advance
from orders.pipeline.steps.download import Fetched, attempts_allowed, settled_retry_delay
from tests.support.images import jpeg_bytes
from tests.support.orders import TYPE, fetch, order_create_via_api, pk
from tests.support.servers import closed_port, requests_to, serve
from webhooks.models import CallbackEvent

# In-process: no worker, and the order's on-commit task message never leaves the transaction.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]


@pytest.fixture(autouse=True)
def private_urls(settings: Any) -> None:
    settings.ALLOW_PRIVATE_URLS = True  # the asset host is on loopback


def photo_order(api: APIClient, url: str, **asset: str) -> str:
    return order_create_via_api(
        api, items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url, **asset}]}]
    )


def attempt(order_id: str) -> tuple[Order, Asset]:
    """The order's next attempt, made now (its wait, if any, cut short by the test)."""
    Asset.objects.filter(item__order_id=pk(order_id)).update(next_attempt_at=timezone.now())
    Order.objects.filter(id=pk(order_id)).update(due_at=timezone.now())
    order_advance(order_id=pk(order_id))
    return Order.objects.get(id=pk(order_id)), Asset.objects.get(item__order_id=pk(order_id))


def wait_after(order: Order, asset: Asset) -> float:
    """Seconds from the attempt (the order's last update) to the asset's next one, which is
    when the order is due again."""
    assert asset.next_attempt_at is not None and order.due_at == asset.next_attempt_at
    return (asset.next_attempt_at - order.last_updated).total_seconds()


@pytest.mark.parametrize(
    ("status", "said"),
    [(404, "HTTP 404"), (410, "HTTP 410"), (401, "HTTP 401"), (403, "HTTP 403")],
)
def test_an_answer_that_will_not_change_fails_the_download_after_three_attempts_in_3_minutes(
    sandbox_api: APIClient, httpserver: HTTPServer, status: int, said: str
) -> None:
    httpserver.expect_request("/missing.jpg").respond_with_data("no", status=status)
    order_id = photo_order(sandbox_api, httpserver.url_for("/missing.jpg"))

    first, asset = attempt(order_id)
    retrying = fetch(sandbox_api, order_id)
    first_wait = wait_after(first, asset)
    second, asset = attempt(order_id)
    second_wait = wait_after(second, asset)
    failed, asset = attempt(order_id)
    shown = fetch(sandbox_api, order_id)

    [issue] = retrying["status"]["issues"]
    assert issue["errorCode"] == "order.items.assets.NotDownloaded"
    assert "(attempt 1 of 3)" in issue["description"] and said in issue["description"]
    # The default schedule: 60 s, then 120 s; the third answer ends it 3 minutes after the first.
    assert first_wait == pytest.approx(60, abs=2)
    assert second_wait == pytest.approx(120, abs=2)
    assert failed.pipeline_step == PipelineStep.FAILED
    assert (asset.status, asset.download_attempts, asset.next_attempt_at) == ("Error", 3, None)
    assert requests_to(httpserver, "/missing.jpg") == 3
    assert shown["status"]["details"]["downloadAssets"] == "Error"
    [item] = shown["items"]
    assert item["status"] == "Invalid"
    [issue] = shown["status"]["issues"]
    assert issue["errorCode"] == "order.items.assets.FailedToDownloaded"
    assert issue["objectId"] == item["id"]
    assert "after 3 attempt(s)" in issue["description"] and said in issue["description"]
    events = CallbackEvent.objects.filter(subject=order_id).order_by("sequence")
    assert [e.event_type for e in events] == [f"{TYPE}.status.details.downloadAssets#Error"]


def test_an_md5_mismatch_is_asked_again_on_the_short_schedule(
    sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    url = serve(httpserver, "/changed.jpg", jpeg_bytes(), "image/jpeg")
    order_id = photo_order(sandbox_api, url, md5Hash="0" * 32)

    first, asset = attempt(order_id)

    assert wait_after(first, asset) == pytest.approx(60, abs=2)
    [issue] = fetch(sandbox_api, order_id)["status"]["issues"]
    assert "(attempt 1 of 3)" in issue["description"] and "MD5 hash" in issue["description"]


def test_a_file_over_the_size_limit_fails_at_the_first_attempt(
    sandbox_api: APIClient, httpserver: HTTPServer, settings: Any
) -> None:
    settings.ASSET_MAX_BYTES = 1000
    url = serve(httpserver, "/big.jpg", jpeg_bytes(), "image/jpeg")
    order_id = photo_order(sandbox_api, url)

    failed, asset = attempt(order_id)

    assert failed.pipeline_step == PipelineStep.FAILED
    assert (asset.status, asset.download_attempts) == ("Error", 1)
    [issue] = fetch(sandbox_api, order_id)["status"]["issues"]
    assert "after 1 attempt(s)" in issue["description"] and "too large" in issue["description"]


@pytest.mark.parametrize("status", [500, 503, 429])
def test_a_5xx_or_429_keeps_the_ten_attempt_backoff(
    sandbox_api: APIClient, httpserver: HTTPServer, status: int
) -> None:
    httpserver.expect_request("/busy.jpg").respond_with_data("busy", status=status)
    order_id = photo_order(sandbox_api, httpserver.url_for("/busy.jpg"))

    for _ in range(3):
        order, asset = attempt(order_id)

    assert order.pipeline_step == PipelineStep.DOWNLOAD
    assert (asset.status, asset.download_attempts) == ("InProgress", 3)
    assert wait_after(order, asset) == pytest.approx(30 * 2**2, abs=2)  # base 30 s, doubling
    [issue] = fetch(sandbox_api, order_id)["status"]["issues"]
    assert issue["errorCode"] == "order.items.assets.NotDownloaded"
    assert "(attempt 3 of 10)" in issue["description"]


def test_a_connection_refused_keeps_the_backoff(sandbox_api: APIClient) -> None:
    order_id = photo_order(sandbox_api, f"http://127.0.0.1:{closed_port()}/photo.jpg")

    order, asset = attempt(order_id)

    assert wait_after(order, asset) == pytest.approx(30, abs=2)
    [issue] = fetch(sandbox_api, order_id)["status"]["issues"]
    assert "(attempt 1 of 10)" in issue["description"]


def test_an_answer_that_will_not_change_after_transient_ones_ends_at_the_third_attempt(
    sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    answers = iter([503, 503, 404])

    def answer(request: Request) -> Response:
        return Response("not yet", status=next(answers))

    httpserver.expect_request("/late.jpg").respond_with_handler(answer)
    order_id = photo_order(sandbox_api, httpserver.url_for("/late.jpg"))

    for _ in range(3):
        order, asset = attempt(order_id)

    assert order.pipeline_step == PipelineStep.FAILED
    assert (asset.status, asset.download_attempts) == ("Error", 3)


def test_the_default_short_schedule_fits_three_attempts_in_five_minutes() -> None:
    settled = Fetched(1, error="HTTP 404", settled=True)
    waits = [settled_retry_delay(n) for n in range(1, attempts_allowed(settled))]

    assert attempts_allowed(settled) == 3
    assert waits == [timedelta(seconds=60), timedelta(seconds=120)]
    assert sum(waits, timedelta()) < timedelta(minutes=5)
