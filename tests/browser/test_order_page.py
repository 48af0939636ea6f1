"""An operator (not a superuser) works an order from its admin page in Chromium: finds it by
the recipient's name, reads the summary, holds its shipment after confirming, sees the result,
and releases the hold."""

from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from labs.capabilities import CAPABILITIES
from labs.models import Lab
from orders.models import Asset, AssetStatus, DetailState, Order, PipelineStep, Shipment
from staff.services import staff_user_save
from tests.support.images import jpeg_bytes
from tests.support.orders import order_at_labs, order_via_api
from tests.support.servers import serve
from tests.support.staff import admin_sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalogue")]
PASSWORD = "correct-horse-battery"


@pytest.fixture
def shipment(sandbox_api: APIClient) -> Shipment:
    # Made before the browser starts (see test_pages.py): no ORM calls inside its event loop.
    staff_user_save(username="olga", password=PASSWORD)
    order = order_at_labs(sandbox_api, merchantReference="SHOP-7")
    Order.objects.filter(id=order.id).update(recipient_name="Grace Hopper")
    found = Shipment.objects.select_related("order").get(order=order)
    Lab.objects.filter(code=found.lab_code).update(capabilities=list(CAPABILITIES))
    return found


def test_an_operator_holds_and_releases_a_shipment_from_the_order_page(
    shipment: Shipment, page: Any, live_server: Any
) -> None:
    base = live_server.url
    admin_sign_in(page, base, "olga", PASSWORD)

    page.goto(f"{base}/admin/orders/order/")
    page.fill("#searchbar", "grace hopper")
    page.press("#searchbar", "Enter")
    page.click(f"text={shipment.order.public_id}")
    assert page.inner_text("#stage") == "In progress"
    row = page.locator(f"#shipment-{shipment.public_id}")
    assert shipment.lab_order_reference in row.inner_text()

    row.locator("a[data-operation=hold]").click()
    assert "The lab stops producing this lab order" in page.inner_text("#explanation")
    page.click("#confirm")

    assert f"Hold of {shipment.public_id}: done." in page.inner_text(".messagelist")
    row = page.locator(f"#shipment-{shipment.public_id}")
    assert "held since" in row.locator(".shipment-status").inner_text()
    assert row.locator("a[data-operation=hold]").count() == 0

    row.locator("a[data-operation=unhold]").click()
    page.click("#confirm")

    assert f"Release the hold of {shipment.public_id}: done." in page.inner_text(".messagelist")
    row = page.locator(f"#shipment-{shipment.public_id}")
    assert "held since" not in row.locator(".shipment-status").inner_text()
    assert row.locator("a[data-operation=hold]").is_visible()


@pytest.fixture
def failed_download(sandbox_api: APIClient, httpserver: HTTPServer) -> tuple[Order, int, str]:
    """An order stopped at Failed: its one asset's URL answered 404 ten times. Made before the
    browser starts; with the URL the operator will correct it to."""
    staff_user_save(username="olga", password=PASSWORD)
    httpserver.expect_request("/missing.jpg").respond_with_data("gone", status=404)
    asset = {"printArea": "default", "url": httpserver.url_for("/missing.jpg")}
    order = order_via_api(
        sandbox_api, items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [asset]}]
    )
    Order.objects.filter(id=order.id).update(
        pipeline_step=PipelineStep.FAILED, download_assets=DetailState.ERROR, due_at=None
    )
    failed = Asset.objects.get(item__order=order)
    Asset.objects.filter(id=failed.id).update(
        status=AssetStatus.ERROR, download_attempts=10, last_error="HTTP 404"
    )
    return order, failed.id, serve(httpserver, "/photo.jpg", jpeg_bytes(), "image/jpeg")


def test_an_operator_retries_a_failed_download_from_the_order_page(
    failed_download: tuple[Order, int, str],
    page: Any,
    live_server: Any,
    settings: Any,
    request: pytest.FixtureRequest,
) -> None:
    order, asset_id, corrected = failed_download
    settings.ALLOW_PRIVATE_URLS = True  # the corrected photo is on this host
    request.getfixturevalue("eager_tasks")  # the pipeline runs as the retry commits
    base = live_server.url
    admin_sign_in(page, base, "olga", PASSWORD)

    page.goto(f"{base}/admin/orders/order/{order.id}/change/")
    assert "Download: Failed" in page.inner_text("#summary")
    page.click("#retry-link")
    page.fill(f"#id_asset_{asset_id}", corrected)
    page.click("#confirm")

    # The admin shows a message with its first letter capitalised.
    message = page.inner_text(".messagelist")
    assert message.lower() == f"{order.public_id}: download runs again."
    page.reload()
    assert "Download: Complete" in page.inner_text("#summary")
    assert page.locator("#retry-link").count() == 0
