"""Images that cannot be fetched, seen and worked by an operator (not a superuser) in Chromium,
with a real worker and a local asset host answering 404, 500 or a good image: a 404 image
fails the download within 5 minutes (the test's worker waits 1 s and 2 s between its three
tries instead of 60 s and 120 s), and "Retry with a corrected image URL" completes it; "Run the
due pipeline step now" moves an order waiting for its backoff at once; an image URL corrected
while its download is still retrying completes it."""

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from orders.models import Asset
from staff.services import staff_user_save
from tests.support.orders import order_create_via_api, pk
from tests.support.servers import AssetHost
from tests.support.staff import admin_sign_in
from tests.support.worker import Worker, needs_worker, worker_running

pytestmark = [
    needs_worker,
    pytest.mark.slow,
    pytest.mark.side_by_side,  # its one bound, 5 minutes, is for a few seconds' work
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue"),
]
PASSWORD = "correct-horse-battery"
# The three tries of an answer that will not change: 1 s, then 2 s apart (60 s and 120 s in
# production); a 5xx waits 100 s and more, so only an operator moves it inside a test.
WORKER_SETTINGS = {
    "ASSET_PERMANENT_RETRY_SECONDS": "1,2",
    "ASSET_RETRY_BASE_SECONDS": "100",
    "ASSET_RETRY_MAX_SECONDS": "3600",
}


@pytest.fixture(scope="module")
def worker(django_db_setup: None, django_db_blocker: Any, live_server: Any) -> Iterator[Worker]:
    with worker_running(live_server.url, django_db_blocker, **WORKER_SETTINGS) as running:
        yield running


@pytest.fixture(autouse=True)
def base_urls_of_the_worker(settings: Any, live_server: Any) -> None:
    """The test process has the worker's base URLs (the documents it writes show file URLs
    under them), as a deployment's processes share theirs."""
    settings.SANDBOX_BASE_URL = settings.LIVE_BASE_URL = live_server.url


@pytest.fixture
def host(httpserver: HTTPServer) -> AssetHost:
    return AssetHost(httpserver)


def image_order(api: APIClient, host: AssetHost, name: str) -> tuple[str, int, float]:
    """Made before the browser starts (no ORM call inside its event loop): the order's id, its
    asset's row id, and when it was created."""
    staff_user_save(username="olga", password=PASSWORD)
    created = time.monotonic()
    items = [{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": host.url(name)}]}]
    order_id = order_create_via_api(api, items=items)
    return order_id, Asset.objects.get(item__order_id=pk(order_id)).id, created


def order_page_until(page: Any, url: str, shown: Callable[[str], bool], seconds: float) -> str:
    """Reload the order page until its summary shows what ``shown`` looks for; the summary."""
    deadline = time.monotonic() + seconds
    while True:
        page.goto(url)
        summary = str(page.inner_text("#summary"))
        if shown(summary) or time.monotonic() > deadline:
            return summary
        time.sleep(0.3)


def until(check: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_404_image_fails_within_five_minutes_and_a_corrected_url_completes_it(
    worker: Worker, sandbox_api: APIClient, host: AssetHost, page: Any, live_server: Any
) -> None:
    order_id, asset_id, created = image_order(sandbox_api, host, "typo.jpg")
    host.upload("photo.jpg")
    base = live_server.url
    order_url = f"{base}/admin/orders/order/{pk(order_id)}/change/"
    admin_sign_in(page, base, "olga", PASSWORD)

    failed = order_page_until(page, order_url, lambda s: "Download: Failed" in s, 60)
    failed_after = time.monotonic() - created

    assert "Download: Failed" in failed, failed
    assert failed_after < 5 * 60
    issues = page.inner_text("#issues")
    assert "could not be downloaded after 3 attempt(s)" in issues
    assert "HTTP 404" in issues and "order.items.assets.FailedToDownloaded" in issues
    assert "image refused" in page.inner_text("#order-items")
    assert "status.details.downloadAssets#Error" in page.inner_text("#order-events")
    assert host.requests("typo.jpg") == 3

    page.click("#asset-url-link")
    assert "The order's download failed" in page.inner_text("#explanation")
    page.fill(f"#id_asset_{asset_id}", host.url("photo.jpg"))
    page.click("#confirm")

    message = page.inner_text(".messagelist")
    assert message.lower() == (
        f"{order_id}: the download runs now with the corrected url of ast_{asset_id}."
    )
    done = order_page_until(page, order_url, lambda s: "Download: Complete" in s, 30)
    assert "Download: Complete" in done, done
    assert page.locator("#asset-url-link").count() == 0
    assert host.requests("photo.jpg") >= 1


def test_run_the_due_step_now_moves_an_order_waiting_for_its_backoff(
    worker: Worker, sandbox_api: APIClient, host: AssetHost, page: Any, live_server: Any
) -> None:
    host.answer("busy.jpg", 500)
    order_id, _, _ = image_order(sandbox_api, host, "busy.jpg")
    base = live_server.url
    order_url = f"{base}/admin/orders/order/{pk(order_id)}/change/"
    admin_sign_in(page, base, "olga", PASSWORD)
    until(lambda: host.requests("busy.jpg") == 1, 30)
    waiting = order_page_until(page, order_url, lambda s: "attempt 1 of 10" in s, 30)
    assert "Download: due in" in waiting and "HTTP 500" in waiting, waiting
    host.upload("busy.jpg")  # the host is back

    page.goto(f"{base}/admin/orders/order/")
    page.check(f"input[name=_selected_action][value='{pk(order_id)}']")
    page.select_option("select[name=action]", "queue_due_step")
    page.click("button[name=index]")

    message = page.inner_text(".messagelist")
    assert message.lower() == "1 order(s) due now and queued for their step."
    moved = order_page_until(page, order_url, lambda s: "Download: Complete" in s, 20)
    assert "Download: Complete" in moved, moved
    assert host.requests("busy.jpg") == 2


def test_an_image_url_corrected_while_its_download_retries_completes_it(
    worker: Worker, sandbox_api: APIClient, host: AssetHost, page: Any, live_server: Any
) -> None:
    host.answer("wrong-host.jpg", 500)
    order_id, asset_id, _ = image_order(sandbox_api, host, "wrong-host.jpg")
    host.upload("right.jpg")
    base = live_server.url
    order_url = f"{base}/admin/orders/order/{pk(order_id)}/change/"
    admin_sign_in(page, base, "olga", PASSWORD)
    until(lambda: host.requests("wrong-host.jpg") == 1, 30)
    order_page_until(page, order_url, lambda s: "attempt 1 of 10" in s, 30)

    page.click("#asset-url-link")
    assert "still retrying its download" in page.inner_text("#explanation")
    page.fill(f"#id_asset_{asset_id}", host.url("right.jpg"))
    page.click("#confirm")

    done = order_page_until(page, order_url, lambda s: "Download: Complete" in s, 20)
    assert "Download: Complete" in done, done
    assert host.requests("wrong-host.jpg") == 1 and host.requests("right.jpg") == 1
