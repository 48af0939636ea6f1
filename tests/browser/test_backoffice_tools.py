"""The back-office tools in a real browser: form -> review -> submit -> the job page's progress
bar reaches 100% and each row shows its result; from a Google Sheet (the local Sheets v4
server) and from an uploaded file."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from orders.models import Shipment
from staff.services import staff_user_save
from tests.support.orders import order_at_labs
from tests.support.sheets import SheetsServer
from tests.support.siteflow import SiteflowServer, SiteOrder, lab_at_site

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_tasks")]
PASSWORD = "correct-horse-battery"


@pytest.fixture
def sheets(settings: Any) -> Iterator[SheetsServer]:
    server = SheetsServer()
    server.start()
    settings.SHEETS_API_URL = server.api_url
    settings.SHEETS_ACCESS_TOKEN = server.token
    yield server
    server.stop()


@pytest.fixture
def shipments(catalogue: None, sandbox_api: APIClient) -> list[Shipment]:
    # Made before the browser starts: no ORM calls inside its event loop.
    staff_user_save(username="ops", password=PASSWORD)  # an operator, not a superuser
    return [Shipment.objects.get(order=order_at_labs(sandbox_api)) for _ in range(3)]


def sign_in(page: Any, live_server: Any) -> None:
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "ops")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("text=Site administration")


def finish(page: Any) -> str:
    page.wait_for_selector("#percent:has-text('100%')", timeout=30_000)
    assert page.get_attribute("#progress", "value") == "100"
    return str(page.inner_text("#job-rows"))


def test_bulk_resubmission_from_a_sheet(
    shipments: list[Shipment], sheets: SheetsServer, page: Any, live_server: Any
) -> None:
    sheets.put("sheet-9", "Tab", [["Lab Order Id", "Message"], *[[s.public_id] for s in shipments]])
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/admin/backoffice/bulkjob/")
    page.click("text=Bulk resubmission")
    page.fill("#spreadsheetId", "sheet-9")
    page.fill("#worksheetName", "Tab")
    page.select_option("#lab", "gb2")
    page.click("#review")

    assert "3 of 3 lab orders will be resubmitted to lab gb2." in page.inner_text("#statement")
    page.click("#submit")

    rows = finish(page)
    assert rows.count("Succeeded") == 3 and rows.count("Resubmitted as") == 3
    assert all(m.startswith("Resubmitted as") for m in sheets.column("sheet-9", "Tab", "Message"))
    page.goto(f"{live_server.url}/admin/backoffice/bulkjob/")
    assert "ops" in page.inner_text("#result_list")


def test_bulk_resubmission_from_an_uploaded_file(
    shipments: list[Shipment], page: Any, live_server: Any, tmp_path: Path
) -> None:
    upload = tmp_path / "resubmit.csv"
    upload.write_text(
        "Lab Order Id,Skip Row\n" + "".join(f"{s.id},\n" for s in shipments) + "shp_1,\n"
    )
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/admin/backoffice/bulkjob/resubmission/")
    page.set_input_files("#file", str(upload))
    page.click("#review")

    assert "Left as it is: Unknown lab order 'shp_1'." in page.inner_text("#review-rows")
    page.click("#submit")

    rows = finish(page)
    assert rows.count("Succeeded") == 3
    with page.expect_download() as download:
        page.click("#download")
    text = Path(download.value.path()).read_text()
    assert text.splitlines()[0] == "Lab Order Id,Skip Row,Message,New Lab Order Id,Last Activity"
    assert text.count("Resubmitted as") == 3
    assert text.splitlines()[4].startswith("shp_1,,Unknown lab order 'shp_1'.,,20")


@pytest.fixture
def live_shipments(catalogue: None, live_api: APIClient) -> list[Shipment]:
    staff_user_save(username="ops", password=PASSWORD, administrator=True)  # not a superuser
    return [Shipment.objects.get(order=order_at_labs(live_api)) for _ in range(3)]


def test_site_flow_shipping_update(
    live_shipments: list[Shipment], sheets: SheetsServer, page: Any, live_server: Any, settings: Any
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    site = SiteflowServer(token="tok-gb1", secret="secret-gb1-site")
    site.start()
    try:
        lab_at_site(site)
        shipments = live_shipments
        for number, shipment in enumerate(shipments):
            site.orders[shipment.public_id] = SiteOrder(id=f"sf{number}", submitted={})
            Shipment.objects.filter(id=shipment.id).update(lab_order_reference=f"sf{number}")
        sheets.put("ship", "Tab", [["Lab Order Id"], *[[s.public_id] for s in shipments]])
        sign_in(page, live_server)
        page.goto(f"{live_server.url}/admin/backoffice/bulkjob/shipping/")
        page.fill("#spreadsheetId", "ship")
        page.fill("#worksheetName", "Tab")
        page.select_option("#shippingSpeed", "Express")
        page.fill("#carrierAlias", "dhl-express")
        page.click("#review")
        assert "3 of 3 lab orders will get carrier dhl-express (Express)." in page.inner_text(
            "#statement"
        )
        page.click("#submit")

        rows = finish(page)
        assert rows.count("Carrier changed to dhl-express (Express).") == 3
        assert all(o.carrier == {"alias": "dhl-express"} for o in site.orders.values())
    finally:
        site.stop()
