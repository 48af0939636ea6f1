"""An operator (not a superuser) acts on orders from their admin pages in Chromium, at a
1280 px window: a held order, an order awaiting its card payment and an order in progress
before any lab has it. Each action the page offers is done through its confirmation page; the
order page and the orders list fit the window (no horizontal scroll, every column shown)."""

from typing import Any

import pytest
from rest_framework.test import APIClient

from merchants.models import Environment, PauseMode
from merchants.services import CreatedMerchant
from orders.models import Order, PipelineStep, Stage
from staff.models import AuditEntry
from staff.services import staff_user_save
from tests.support.orders import order_at_labs, order_via_api
from tests.support.staff import admin_sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalogue")]
PASSWORD = "correct-horse-battery"
WINDOW = {"width": 1280, "height": 800}
NO_HORIZONTAL_SCROLL = (
    "() => document.scrollingElement.scrollWidth <= document.scrollingElement.clientWidth"
)
# The tables shown that are wider than the box they sit in (columns hidden or scrolled away).
TABLES_CUT = """() => [...document.querySelectorAll('table')]
  .filter(t => t.checkVisibility() && t.scrollWidth > t.parentElement.clientWidth + 1)
  .map(t => t.id || t.parentElement.id || t.outerHTML.slice(0, 120))"""


@pytest.fixture
def orders(
    merchant: CreatedMerchant, card: CreatedMerchant, sandbox_api: APIClient, live_api: APIClient
) -> dict[str, Order]:
    """Made before the browser is driven: an operator, and one order in each state. The
    merchant pays Live orders by card (so its Live order awaits payment) and pauses its
    Sandbox orders (so the last one made is held)."""
    operator, _ = staff_user_save(username="olga", password=PASSWORD)
    assert not operator.is_superuser
    in_progress = order_via_api(sandbox_api, merchantReference="DOWNLOADING-1")
    awaiting = order_via_api(live_api, merchantReference="UNPAID-1")
    Environment.objects.filter(merchant=merchant.merchant, kind="Sandbox").update(
        pause_mode=PauseMode.INDEFINITE
    )
    held = order_via_api(sandbox_api, outcome="OnHold", merchantReference="HELD-1")
    assert (held.stage, awaiting.stage, in_progress.pipeline_step) == (
        Stage.ON_HOLD,
        Stage.AWAITING_PAYMENT,
        PipelineStep.DOWNLOAD,
    )
    return {"held": held, "awaiting payment": awaiting, "in progress": in_progress}


def fits_the_window(page: Any) -> None:
    assert page.evaluate(NO_HORIZONTAL_SCROLL), page.url
    assert page.evaluate(TABLES_CUT) == [], page.url


def offered(page: Any) -> list[str]:
    return [str(a.get_attribute("data-action")) for a in page.locator("a.order-action").all()]


def confirm(page: Any, order: Order, action: str, *, fill: dict[str, str] | None = None) -> str:
    """From the order page: the action's link, its confirmation page (which fits the window
    and says what will happen), the form filled, confirmed; the message on the order page."""
    page.click(f"a.order-action[data-action={action}]")
    page.locator("#explanation").wait_for()  # the confirmation page, not the order's unloading
    fits_the_window(page)
    assert page.locator("#explanation").inner_text().strip()
    for selector, value in (fill or {}).items():
        if page.locator(selector).evaluate("e => e.tagName") == "SELECT":
            page.select_option(selector, value)
        else:
            page.fill(selector, value)
    page.click("#confirm")
    page.locator(".messagelist").wait_for()
    assert page.url.endswith(f"/admin/orders/order/{order.id}/change/"), page.url
    return str(page.inner_text(".messagelist"))


NEW_RECIPIENT = {"#id_name": "Grace Hopper", "#id_line1": "2 Compiler Lane"}


@pytest.mark.parametrize(
    ("state", "actions"),
    [
        ("held", ["submit", "shipping-method", "recipient", "cancel"]),
        ("awaiting payment", ["shipping-method", "recipient", "cancel"]),
        ("in progress", ["asset-url", "shipping-method", "recipient", "cancel"]),
    ],
)
def test_an_operator_does_each_action_an_order_offers(
    orders: dict[str, Order], state: str, actions: list[str], browser: Any, live_server: Any
) -> None:
    order = orders[state]
    page = browser.new_context(viewport=WINDOW).new_page()
    base = live_server.url
    admin_sign_in(page, base, "olga", PASSWORD)
    page.goto(f"{base}/admin/orders/order/{order.id}/change/")
    fits_the_window(page)
    assert offered(page) == actions

    said = confirm(page, order, "shipping-method", fill={"#id_shippingMethod": "Express"})
    assert said == f"Change shipping method of {order.public_id}: done."
    assert "— Express" in page.inner_text("#summary")

    said = confirm(page, order, "recipient", fill=NEW_RECIPIENT)
    assert said == f"Change recipient of {order.public_id}: done."
    assert "Grace Hopper" in page.inner_text("#summary")

    if "submit" in actions:
        said = confirm(page, order, "submit")
        assert said == f"Submitted {order.public_id}: it leaves the hold now and starts."
        assert "submit" not in offered(page)
    if "asset-url" in actions:
        page.click("a.order-action[data-action=asset-url]")
        page.locator("input[type=url]").wait_for()
        fits_the_window(page)
        page.fill("input[type=url]", "https://images.example.com/corrected.jpg")
        page.click("#confirm")
        said = page.inner_text(".messagelist").lower()
        assert "the download runs now with the corrected url" in said

    said = confirm(page, order, "cancel")
    assert said == f"Cancel order of {order.public_id}: cancelled."
    assert page.inner_text("#stage") == "Cancelled"
    assert offered(page) == []
    assert "Stage now Cancelled" in page.inner_text("#timeline")
    fits_the_window(page)

    done = Order.objects.get(id=order.id)
    assert (done.stage, done.shipping_method, done.recipient_name) == (
        Stage.CANCELLED,
        "Express",
        "Grace Hopper",
    )
    audited = AuditEntry.objects.filter(username="olga", success=True)
    assert audited.count() == len(actions)  # one line each, the URL correction's too


def test_the_orders_list_fits_a_1280_px_window(
    orders: dict[str, Order], browser: Any, live_server: Any
) -> None:
    page = browser.new_context(viewport=WINDOW).new_page()
    base = live_server.url
    admin_sign_in(page, base, "olga", PASSWORD)

    page.goto(f"{base}/admin/orders/order/")

    fits_the_window(page)
    headers = [h.strip().lower() for h in page.locator("#result_list thead th").all_inner_texts()]
    assert headers == [
        "", "id", "environment", "merchant reference", "stage", "where it stands", "created"
    ]  # fmt: skip
    for order in orders.values():
        assert page.locator(f"text={order.public_id}").is_visible()


@pytest.fixture
def at_labs(sandbox_api: APIClient) -> Order:
    """An order at its labs (two shipments, their charges), and the operator."""
    staff_user_save(username="olga", password=PASSWORD)
    return order_at_labs(sandbox_api, two_shipments=True, merchantReference="AT-LABS-1")


def test_the_page_of_an_order_at_its_labs_fits_with_every_field_open(
    at_labs: Order, browser: Any, live_server: Any
) -> None:
    page = browser.new_context(viewport=WINDOW).new_page()
    base = live_server.url
    admin_sign_in(page, base, "olga", PASSWORD)

    page.goto(f"{base}/admin/orders/order/{at_labs.id}/change/")

    fits_the_window(page)
    assert page.locator("#order-shipments a.operation").first.inner_text() == "Hold"
    assert page.locator("#orderitem_set-group, #items-group").first.is_hidden()
    page.click("#every-field > summary")
    assert page.locator("#items-group").is_visible()
    assert page.evaluate(NO_HORIZONTAL_SCROLL)  # the section scrolls on its own
