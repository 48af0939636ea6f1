"""Billing's rows in Chromium, as a staff user of each role (never a superuser): the index
lists the Stripe events and the invoices, each list finds its row, and each row is shown,
not offered as a form."""

from typing import Any

import pytest

from staff.services import staff_user_save
from tests.billing.factories import InvoiceFactory, StripeEventFactory
from tests.support.staff import admin_sign_in

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "correct-horse-battery"


@pytest.fixture
def rows(transactional_db: None) -> tuple[int, int]:
    # Made before the browser starts (see test_pages.py): no ORM calls inside its event loop.
    staff_user_save(username="olga", password=PASSWORD)
    staff_user_save(username="ada", password=PASSWORD, administrator=True)
    event = StripeEventFactory.create(event_id="evt_browser_1", message="ord_7 authorised.")
    invoice = InvoiceFactory.create(number="INV-2026-10-0042", merchant__name="Browser Prints")
    return event.pk, invoice.pk


@pytest.mark.parametrize("username", ["olga", "ada"])
def test_each_role_reads_stripe_events_and_invoices_without_a_form(
    rows: tuple[int, int], username: str, page: Any, live_server: Any
) -> None:
    base = live_server.url
    admin_sign_in(page, base, username, PASSWORD)

    billing = page.locator("#content-main .app-billing")
    assert billing.locator("a", has_text="Stripe events").is_visible()
    assert billing.locator("a", has_text="Invoices").is_visible()
    assert billing.locator("a", has_text="Add").count() == 0

    billing.locator("a", has_text="Stripe events").click()
    page.click("text=evt_browser_1")
    assert "ord_7 authorised." in page.inner_text("#content-main")
    assert page.locator("input[name=_save]").count() == 0

    page.goto(f"{base}/admin/billing/invoice/")
    page.fill("#searchbar", "browser prints")
    page.press("#searchbar", "Enter")
    page.click("text=INV-2026-10-0042")
    assert f"/admin/billing/invoice/{rows[1]}/change/" in page.url
    shown = page.inner_text("#content-main")
    assert "Browser Prints" in shown and "100.00" in shown
    assert page.locator("input[name=_save]").count() == 0
    assert page.locator("a.deletelink").count() == 0
