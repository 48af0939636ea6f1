"""Every Sheets failure is a 400 naming ``spreadsheetId`` or ``worksheetName``, never a 500:
the service account's own sign-in (gspread's, against a local token endpoint) refused or
unreachable included; a job whose write-back fails keeps its row results and says so."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.utils.html import escape
from rest_framework.test import APIClient

from backoffice import services
from backoffice.jobs import Source, bulk_job_run
from backoffice.models import BulkJob, JobStatus, RowStatus
from orders.models import Shipment
from tests.support.orders import order_at_labs
from tests.support.sheets import SheetsServer, TokenServer, service_account_file
from tests.support.staff import staff_client

pytestmark = pytest.mark.usefixtures("catalogue")
SHEET, TAB = "sheet-sa", "Rows"
BASE = "/v4.0/micro-ui/bulk-resubmission"
BODY = {"spreadsheetId": SHEET, "worksheetName": TAB}
REVOKED = (400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})


@pytest.fixture
def token_endpoint(sheets: SheetsServer) -> Iterator[TokenServer]:
    server = TokenServer(access_token=sheets.token)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def signed_in_by_service_account(
    settings: Any, sheets: SheetsServer, token_endpoint: TokenServer, tmp_path: Path
) -> SheetsServer:
    """The service reaches the Sheets server through gspread's service-account sign-in only."""
    settings.SHEETS_ACCESS_TOKEN = ""
    settings.GOOGLE_SERVICE_ACCOUNT_FILE = str(
        service_account_file(tmp_path / "key.json", token_uri=token_endpoint.token_uri)
    )
    sheets.put(SHEET, TAB, [["Lab Order Id"], ["shp_1"]])
    return sheets


def assert_sign_in_refused(response: Any, why: str) -> None:
    assert response.status_code == 400, response.content
    answer = response.json()
    assert answer["outcome"] == "ValidationFailed"
    [failure] = answer["data"]["failures"]["spreadsheetId"]
    assert failure["code"] == "SignInFailed"
    assert failure["description"].startswith(
        f"The service account could not sign in to open spreadsheet '{SHEET}': "
    )
    assert why in failure["description"]


def test_a_service_account_signs_in_through_the_token_endpoint(
    signed_in_by_service_account: SheetsServer, token_endpoint: TokenServer, staff_api: APIClient
) -> None:
    response = staff_api.get(f"{BASE}/spreadsheet-info?SpreadsheetId={SHEET}&WorksheetName={TAB}")

    assert response.status_code == 200, response.content
    assert response.json()["totalRowCount"] == 1
    assert token_endpoint.grants == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]


def test_a_refused_sign_in_is_a_400_naming_the_spreadsheet(
    signed_in_by_service_account: SheetsServer, token_endpoint: TokenServer, staff_api: APIClient
) -> None:
    token_endpoint.failure = REVOKED

    review = staff_api.post(f"{BASE}/review", BODY, format="json")
    info = staff_api.get(f"{BASE}/spreadsheet-info?SpreadsheetId={SHEET}&WorksheetName={TAB}")
    submit = staff_api.post(f"{BASE}/submit", BODY, format="json")

    for response in (review, info, submit):
        assert_sign_in_refused(response, "invalid_grant")
    assert token_endpoint.grants  # gspread's own sign-in asked the endpoint
    assert signed_in_by_service_account.calls == []  # and never reached the sheet
    assert not BulkJob.objects.exists()


def test_an_unreachable_token_endpoint_is_a_400_naming_the_spreadsheet(
    signed_in_by_service_account: SheetsServer, token_endpoint: TokenServer, staff_api: APIClient
) -> None:
    token_endpoint.stop()

    response = staff_api.post(f"{BASE}/review", BODY, format="json")

    assert_sign_in_refused(response, "")


def test_the_admin_tool_shows_a_refused_sign_in_on_its_form(
    signed_in_by_service_account: SheetsServer, token_endpoint: TokenServer
) -> None:
    token_endpoint.failure = REVOKED
    client = staff_client("olga")

    response = client.post(
        "/admin/backoffice/bulkjob/resubmission/",
        {**BODY, "cancelOption": "CancelOriginal"},
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert "The service account could not sign in to open spreadsheet" in html
    assert 'id="review"' in html  # the form again, not a review


def test_a_job_whose_write_back_fails_keeps_its_results_and_says_so(
    sandbox_api: APIClient, staff_user: Any, sheets: SheetsServer
) -> None:
    shipment = Shipment.objects.get(order=order_at_labs(sandbox_api))
    sheets.put(SHEET, TAB, [["Lab Order Id", "Message"], [shipment.public_id], ["shp_1"]])
    job = services.resubmission_submit(
        user=staff_user, source=Source(spreadsheet_id=SHEET, worksheet_name=TAB), lab="gb2"
    )
    sheets.forbidden.add(SHEET)

    assert bulk_job_run(job_id=job.id) is False

    job.refresh_from_db()
    assert job.status != JobStatus.DONE
    assert job.write_back_error == (
        f"spreadsheetId: The service has no permission on spreadsheet '{SHEET}'."
    )
    done = job.rows.get(row_index=2)
    assert done.status == RowStatus.SUCCEEDED and done.message.startswith("Resubmitted as")
    assert not done.written_back
    staff = staff_client("olga")
    page = staff.get(f"/admin/backoffice/bulkjob/{job.id}/progress/").content.decode()
    assert "not yet written back to the sheet" in page and escape(done.message) in page

    sheets.forbidden.clear()
    job.claimed_until = None
    job.save(update_fields=["claimed_until"])

    assert bulk_job_run(job_id=job.id) is True
    job.refresh_from_db()
    assert (job.status, job.write_back_error) == (JobStatus.DONE, "")
    assert sheets.column(SHEET, TAB, "Message")[0] == done.message
