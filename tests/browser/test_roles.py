"""The two staff roles in Chromium, each signed in as a user made by ``create_staff``'s service
(never a superuser): each sees and does what its role allows, and gets the admin's HTML 403
page, titled for the service, for the rest."""

from typing import Any

import pytest

from staff.services import staff_user_save
from tests.labs.factories import LabFactory
from tests.support.staff import admin_sign_in

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "correct-horse-battery"


@pytest.fixture
def people(transactional_db: None) -> int:
    # Made before the browser starts (see test_pages.py): no ORM calls inside its event loop.
    staff_user_save(username="olga", password=PASSWORD)
    staff_user_save(username="ada", password=PASSWORD, administrator=True)
    return LabFactory.create(code="gb8", name="Browser lab", capabilities=[]).pk


def sign_in(page: Any, base: str, username: str) -> str:
    admin_sign_in(page, base, username, PASSWORD)
    assert page.title() == "Site administration | Print Fulfilment back-office"
    return str(page.inner_text("#content-main"))


def assert_refused(page: Any, url: str) -> None:
    response = page.goto(url)
    assert response.status == 403
    assert response.headers["content-type"].startswith("text/html")
    assert page.title() == "Not allowed | Print Fulfilment back-office"
    assert page.locator("#refusal").is_visible()
    assert page.locator("#site-name").inner_text() == "Print Fulfilment back-office"


def test_an_operator_sees_and_does_what_the_role_allows(
    people: int, page: Any, live_server: Any
) -> None:
    base = live_server.url

    index = sign_in(page, base, "olga")

    for listed in ("Orders", "Merchants", "Labs", "Callback events", "Audit entries", "Bulk jobs"):
        assert listed in index
    assert "Staff API keys" not in index and "Products" not in index
    page.goto(f"{base}/admin/labs/lab/{people}/change/")
    assert page.locator("input[name=_save]").count() == 0  # the lab is shown, not a form
    assert "Browser lab" in page.inner_text("#content-main")
    page.goto(f"{base}/admin/backoffice/bulkjob/")
    assert page.locator(".object-tools a", has_text="Bulk resubmission").is_visible()
    assert page.locator(".object-tools a", has_text="Site Flow shipping update").count() == 0
    page.click("text=Bulk resubmission")
    assert page.locator("#review").is_visible()
    assert_refused(page, f"{base}/admin/backoffice/bulkjob/shipping/")
    assert_refused(page, f"{base}/admin/staff/staffapikey/")
    assert_refused(page, f"{base}/admin/auth/user/")


def test_an_administrator_sees_and_does_what_the_role_allows(
    people: int, page: Any, live_server: Any
) -> None:
    base = live_server.url

    index = sign_in(page, base, "ada")

    for listed in ("Orders", "Merchants", "Labs", "Staff API keys", "Audit entries", "Bulk jobs"):
        assert listed in index
    page.goto(f"{base}/admin/labs/lab/{people}/change/")
    page.fill("#id_name", "Renamed lab")
    page.click("input[name=_continue]")
    assert "was changed successfully" in page.locator(".messagelist").inner_text()
    page.goto(f"{base}/admin/backoffice/bulkjob/")
    page.click("text=Site Flow shipping update")
    assert page.locator("#carrierAlias").is_visible()
    page.goto(f"{base}/admin/staff/staffapikey/")
    assert page.locator("a", has_text="Add staff API key").is_visible()
    assert_refused(page, f"{base}/admin/auth/user/")
    assert_refused(page, f"{base}/admin/products/product/")
