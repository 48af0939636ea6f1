"""An administrator (not a superuser) configures a Site Flow lab on its admin page; the secret
is never shown back."""

from typing import Any

import pytest

from labs.models import Lab
from staff.services import staff_user_save
from tests.labs.factories import LabFactory

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "browser-siteflow-secret-0042"


@pytest.fixture
def staff_and_lab(transactional_db: None) -> int:
    # Made before the browser starts (see test_pages.py): no ORM calls inside its event loop.
    staff_user_save(username="ops", password="correct-horse-battery", administrator=True)
    LabFactory(code="gb8", name="Browser lab", capabilities=[])
    return Lab.objects.get(code="gb8").pk


def test_staff_configure_a_site_flow_lab_and_the_secret_is_not_shown_back(
    staff_and_lab: int, page: Any, live_server: Any
) -> None:
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "ops")
    page.fill("#id_password", "correct-horse-battery")
    page.click("input[type=submit]")
    page.wait_for_selector("text=Site administration")
    change_url = f"{live_server.url}/admin/labs/lab/{staff_and_lab}/change/"

    page.goto(change_url)
    page.select_option("#id_connector", "siteflow")
    page.fill("#id_siteflow_base_url", "https://lab.example.com/api")
    page.fill("#id_siteflow_token", "token-gb8")
    page.fill("#id_siteflow_secret", SECRET)
    page.fill("#id_siteflow_destination", "acme-print")
    page.click("input[name=_continue]")

    page.wait_for_selector(".messagelist")
    assert "was changed successfully" in page.locator(".messagelist").inner_text()
    assert page.input_value("#id_siteflow_base_url") == "https://lab.example.com/api"
    assert page.input_value("#id_siteflow_token") == "token-gb8"
    assert page.input_value("#id_siteflow_destination") == "acme-print"
    assert page.get_attribute("#id_siteflow_secret", "type") == "password"
    assert page.input_value("#id_siteflow_secret") == ""
    assert SECRET not in page.content()
    assert "A secret is saved; it is never shown." in page.content()

    page.goto(change_url)
    assert page.input_value("#id_siteflow_secret") == ""
    assert SECRET not in page.content()
