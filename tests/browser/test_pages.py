"""The documentation and admin pages work in Chromium, with no request leaving this host."""

from typing import Any
from urllib.parse import urlsplit

import pytest

from staff.services import staff_user_save
from tests.merchants.factories import MerchantFactory

pytestmark = pytest.mark.django_db(transaction=True)


def foreign_requests(page: Any, base: str) -> list[str]:
    """Every request the page tries to make to another host (attempts count: this machine has
    no internet, so they would fail anyway), except those the page's own content security
    policy stops before they leave the browser."""
    tried: list[str] = []
    host = urlsplit(base).netloc

    def record(request: Any) -> None:
        if urlsplit(request.url).netloc not in ("", host):
            tried.append(request.url)

    def blocked(request: Any) -> None:
        if request.failure == "csp" and request.url in tried:
            tried.remove(request.url)

    page.on("request", record)
    page.on("requestfailed", blocked)
    return tried


def test_swagger_ui_renders_every_order_operation_offline(page: Any, live_server: Any) -> None:
    foreign = foreign_requests(page, live_server.url)

    page.goto(f"{live_server.url}/v4.0/docs")
    page.wait_for_selector(".opblock", timeout=20_000)

    paths = page.locator(".opblock-summary-path").all_inner_texts()
    expected_paths = (
        "/v4.0/orders",
        "/v4.0/orders/{orderId}",
        "/v4.0/orders/{orderId}/actions/cancel",
        "/v4.0/quotes",
        "/v4.0/products/{sku}",
        "/healthz",
    )
    for expected in expected_paths:
        assert any(p.replace("\u200b", "") == expected for p in paths), (expected, paths)
    tags = page.eval_on_selector_all(".opblock-tag", "tags => tags.map(t => t.dataset.tag)")
    assert tags[:3] == ["Orders", "Quotes", "Products"]
    assert tags[-2:] == ["Registration", "Service"]  # the staff API has a document of its own
    assert not [tag for tag in tags if tag.startswith("Staff")]
    assert foreign == []


def test_redoc_renders_offline(page: Any, live_server: Any) -> None:
    foreign = foreign_requests(page, live_server.url)
    errors: list[str] = []
    page.on(
        "console",
        lambda message: errors.append(message.text) if message.type == "error" else None,
    )

    page.goto(f"{live_server.url}/v4.0/redoc")
    page.get_by_role("heading", name="Print Fulfilment Ordering API").wait_for(timeout=20_000)
    assert page.locator("text=Create an order").count() >= 1
    # The introduction's sections, the signature sample among them.
    for heading in ("Authentication", "Sandbox and Live", "Verifying a callback's signature"):
        assert page.get_by_role("heading", name=heading).count() >= 1, heading
    assert page.locator("text=def callback_verified").count() >= 1

    assert foreign == []
    assert errors == []  # nothing refused by the page's policy (Redoc's logo is not fetched)


@pytest.fixture
def staff_and_merchant(transactional_db: None) -> None:
    # Made before the browser starts: ORM calls inside Playwright's running event loop would
    # open a connection of their own that outlives the test.
    staff_user_save(username="ops", password="correct-horse-battery", administrator=True)
    MerchantFactory.create(name="Browser Prints")


def test_staff_sign_in_and_issue_a_key_from_the_admin(
    staff_and_merchant: None, page: Any, live_server: Any
) -> None:
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "ops")
    page.fill("#id_password", "correct-horse-battery")
    page.click("input[type=submit]")
    page.wait_for_selector("text=Site administration")
    page.goto(f"{live_server.url}/admin/merchants/environment/")
    row = page.locator("tr", has_text="Browser Prints").filter(has_text="Live")
    row.locator("input[type=checkbox]").check()
    page.select_option("select[name=action]", "issue_api_key")
    page.click("button[name=index]")

    message = page.locator(".messagelist").inner_text()
    assert "New key for Browser Prints (Live): sk_live_" in message
