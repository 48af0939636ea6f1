"""An operator (not a superuser) works an order from its admin page in Chromium: finds it by
the recipient's name, reads the summary, holds its shipment after confirming, sees the result,
and releases the hold."""

from typing import Any

import pytest
from rest_framework.test import APIClient

from labs.capabilities import CAPABILITIES
from labs.models import Lab
from orders.models import Order, Shipment
from staff.services import staff_user_save
from tests.support.orders import order_at_labs

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
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "olga")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("text=Site administration")

    page.goto(f"{base}/admin/orders/order/")
    page.fill("#searchbar", "grace hopper")
    page.press("#searchbar", "Enter")
    page.click(f"text={shipment.order.public_id}")
    assert page.inner_text("#stage") == "InProgress"
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
