"""The catalogue in Chromium: an administrator (not a superuser) adds a lab ticking its
capabilities and a lab product with its variant codes; an operator sees the same pages
read-only and is refused the add pages with the admin's 403 page."""

from typing import Any

import pytest

from labs.models import Lab, LabProduct
from staff.services import staff_user_save
from tests.labs.factories import LabFactory, LabProductFactory
from tests.products.factories import ProductFactory
from tests.support.dashboard import off_the_browser_loop
from tests.support.staff import admin_sign_in

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "correct-horse-battery"


@pytest.fixture
def people(transactional_db: None) -> int:
    # Made before the browser starts (see test_pages.py): no ORM calls inside its event loop.
    staff_user_save(username="olga", password=PASSWORD)
    ada, _ = staff_user_save(username="ada", password=PASSWORD, administrator=True)
    assert not ada.is_superuser
    return int(ProductFactory.create(sku="BROWSER-CAN-10").pk)


def test_an_administrator_adds_a_lab_ticking_capabilities_and_a_lab_product(
    people: int, page: Any, live_server: Any
) -> None:
    base = live_server.url
    admin_sign_in(page, base, "ada", PASSWORD)

    page.goto(f"{base}/admin/labs/lab/")
    page.click(".object-tools a.addlink")
    page.wait_for_selector("#id_code")
    assert page.locator("input[name=capabilities]").count() == 5
    page.fill("#id_code", "gb7")
    page.fill("#id_name", "Browser lab")
    page.fill("#id_country_code", "GB")
    page.fill("#id_currency", "GBP")
    page.select_option("#id_connector", "simulator")
    page.check("input[name=capabilities][value=cancel]")
    page.check("input[name=capabilities][value=updateAddress]")
    page.click("input[name=_continue]")

    assert "was added successfully" in page.locator(".messagelist").inner_text()
    assert page.is_checked("input[name=capabilities][value=cancel]")
    assert page.is_checked("input[name=capabilities][value=updateAddress]")
    assert not page.is_checked("input[name=capabilities][value=hold]")

    page.goto(f"{base}/admin/labs/labproduct/add/")
    page.select_option("#id_lab", label="gb7 (Browser lab)")
    page.select_option("#id_product", label="BROWSER-CAN-10")
    page.fill("#id_lab_sku", "BRW-CAN")
    page.fill("#id_variant_codes", '{"wrap=Black": "BRW-CAN-BK"}')
    page.fill("#id_unit_cost", "6.25")
    page.click("input[name=_save]")

    assert "was added successfully" in page.locator(".messagelist").inner_text()
    lab = off_the_browser_loop(lambda: Lab.objects.get(code="gb7"))
    assert (lab.name, lab.capabilities) == ("Browser lab", ["cancel", "updateAddress"])
    made = off_the_browser_loop(lambda: LabProduct.objects.get(lab=lab, product_id=people))
    assert (made.lab_sku, made.variant_codes, str(made.unit_cost), made.in_stock) == (
        "BRW-CAN", {"wrap=Black": "BRW-CAN-BK"}, "6.25", True
    )  # fmt: skip


@pytest.fixture
def shown(people: int) -> tuple[int, int]:
    """A lab with two capabilities and its lab product with a variant code: their ids."""
    lab = LabFactory.create(code="gb7", name="Browser lab", capabilities=["cancel", "hold"])
    made = LabProductFactory.create(
        lab=lab, product_id=people, variant_codes={"wrap=Black": "BRW-CAN-BK"}
    )
    return lab.pk, made.pk


def test_an_operator_sees_the_catalogue_pages_read_only(
    shown: tuple[int, int], page: Any, live_server: Any
) -> None:
    base = live_server.url
    lab_id, lab_product_id = shown
    admin_sign_in(page, base, "olga", PASSWORD)

    for model, pk in (("lab", lab_id), ("labproduct", lab_product_id)):
        page.goto(f"{base}/admin/labs/{model}/")
        assert page.locator("#result_list").is_visible()
        assert page.locator(".object-tools a.addlink").count() == 0
        page.goto(f"{base}/admin/labs/{model}/{pk}/change/")
        assert page.locator("input[name=_save]").count() == 0
        response = page.goto(f"{base}/admin/labs/{model}/add/")
        assert response.status == 403
        assert page.locator("#refusal").is_visible()

    page.goto(f"{base}/admin/labs/lab/{lab_id}/change/")
    content = page.inner_text("#content-main")
    assert page.locator("input[name=capabilities]").count() == 0
    assert '"cancel"' in content and '"hold"' in content
    page.goto(f"{base}/admin/labs/labproduct/{lab_product_id}/change/")
    assert "BRW-CAN-BK" in page.inner_text("#content-main")
    assert page.locator("#id_variant_codes").count() == 0
