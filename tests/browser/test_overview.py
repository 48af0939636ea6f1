"""An operator (not a superuser) signs in to the admin in Chromium and its first page is the
service at a glance: each chart an SVG image named for what it shows, its figures those of the
orders, shipments and callbacks made here; a cause's link opens the orders it counts."""

from typing import Any

import pytest
from django.utils import timezone

from staff.services import staff_user_save
from tests.support.dashboard import screenshot
from tests.support.overview import Made, overview_made
from tests.support.staff import admin_sign_in

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "correct-horse-battery"


@pytest.fixture
def made() -> Made:
    # Made before the browser starts (see test_pages.py): no ORM calls inside its event loop.
    staff_user_save(username="olga", password=PASSWORD)
    return overview_made(timezone.now())


def table(page: Any, slug: str) -> list[tuple[str, str]]:
    rows = page.locator(f"#{slug} table.figures tbody tr")
    return [
        (row.locator("th").text_content().strip(), row.locator("td").text_content().strip())
        for row in rows.all()
    ]


def test_an_operator_reads_the_overview_on_the_admins_first_page(
    made: Made, page: Any, live_server: Any
) -> None:
    base = live_server.url
    admin_sign_in(page, base, "olga", PASSWORD)

    assert page.get_by_role("heading", name="The service at a glance").is_visible()
    for slug, rows in made.rows.items():
        assert table(page, slug) == rows, slug
        image = page.locator(f"#{slug} svg")
        assert image.get_attribute("role") == "img"
        assert image.is_visible()
        assert page.locator(f"#{slug} svg rect.bar").count() == len(rows)
    completed = {hour: n for hour, n in table(page, "completed-hourly") if n != "0"}
    assert completed == made.completed
    failed = {hour: n for hour, n in table(page, "failed-hourly") if n != "0"}
    assert failed == made.failed
    assert page.locator("#completed-hourly svg rect.bar").count() == 48
    assert [name for name, _ in table(page, "queues")] == [
        "downloads", "images", "labs", "callbacks", "sweeps"
    ]  # fmt: skip
    # The accessible name of a chart's bars: what and how many.
    bar = page.locator("#attention svg rect.bar").nth(4)
    assert bar.locator("title").text_content() == "Waiting at allocation: 1"
    screenshot(page, "admin-overview")

    page.locator("#attention svg a", has_text="A step in Error").click()

    page.wait_for_url("**/admin/orders/order/?attention=error")
    page.wait_for_selector("#result_list")
    assert page.locator("#result_list tbody tr").count() == 2
