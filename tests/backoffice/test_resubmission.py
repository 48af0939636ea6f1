"""Bulk resubmission from a Google Sheet, through gspread against the local Sheets v4 server."""

from typing import Any

import pytest
from rest_framework.test import APIClient

from backoffice.models import BulkJob
from labs.models import Lab
from orders.models import (
    ChargeType,
    Order,
    OrderItem,
    Shipment,
    ShipmentResubmission,
    ShipmentStatus,
)
from staff.models import AuditEntry
from tests.support.orders import order_at_labs
from tests.support.sheets import SheetsServer

pytestmark = pytest.mark.usefixtures("catalogue")

SHEET = "sheet-1"
TAB = "To resubmit"
HEADER = ["lab order id ", "Message", "New Lab Order Id", "Last Activity", "Labs", "Skip Row"]
BASE = "/v4.0/micro-ui/bulk-resubmission"


def shipments_of(api: APIClient, count: int) -> list[Shipment]:
    return [Shipment.objects.get(order=order_at_labs(api)) for _ in range(count)]


def sheet_with(sheets: SheetsServer, rows: list[list[Any]]) -> None:
    sheets.put(SHEET, TAB, [HEADER, *rows])


def body(**changes: Any) -> dict[str, Any]:
    return {"spreadsheetId": SHEET, "worksheetName": TAB, **changes}


def submit(staff_api: APIClient, capture: Any, **changes: Any) -> Any:
    with capture(execute=True):
        response = staff_api.post(f"{BASE}/submit", body(**changes), format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_info_and_data_count_rows_skipped_unknown_and_already_resubmitted(
    sandbox_api: APIClient, staff_api: APIClient, sheets: SheetsServer
) -> None:
    first, second, third = shipments_of(sandbox_api, 3)
    sheet_with(
        sheets,
        [
            [first.public_id, "", "", "", "gb2, US1", ""],
            [str(second.id), "", "", "", "", "yes"],
            ["shp_999", "", "", "", "", ""],
            [third.public_id, "done", "123", "2026-01-02T03:04:05+00:00", "", ""],
            ["", "", "", "", "", ""],
        ],
    )
    query = f"?SpreadsheetId={SHEET}&WorksheetName={TAB}"

    info = staff_api.get(f"{BASE}/spreadsheet-info{query}")
    data = staff_api.get(f"{BASE}/spreadsheet-data{query}")

    assert info.status_code == 200, info.content
    assert (info.json()["totalRowCount"], info.json()["resubmittableRowCount"]) == (4, 1)
    rows = data.json()["rows"]
    assert [r["rowIndex"] for r in rows] == [2, 3, 4, 5]
    assert rows[0] | {} == {
        "rowIndex": 2,
        "labOrderId": first.id,
        "message": "",
        "newLabOrderId": None,
        "lastActivity": None,
        "labs": ["gb2", "us1"],
        "cancelOption": "",
        "skipRow": False,
    }
    assert rows[1]["skipRow"] is True and rows[1]["labOrderId"] == second.id
    assert rows[3]["newLabOrderId"] == 123
    assert rows[3]["lastActivity"] == "2026-01-02T03:04:05Z"
    assert sheets.write_calls() == []


def test_review_says_what_submit_would_do_and_changes_nothing(
    sandbox_api: APIClient, staff_api: APIClient, sheets: SheetsServer
) -> None:
    first, second = shipments_of(sandbox_api, 2)
    sheet_with(sheets, [[first.public_id], [second.public_id, "", "", "", "", "TRUE"], ["42"]])
    before = sheets.values(SHEET, TAB)

    response = staff_api.post(f"{BASE}/review", body(lab="GB2"), format="json")

    assert response.status_code == 200, response.content
    answer = response.json()
    assert {k: v for k, v in answer.items() if k != "traceParent"} == {
        "isOk": True,
        "numberOfLabOrders": 1,
        "sheetContainsNumberOfLabOrders": 3,
        "lab": "gb2",
        "cancelOption": "CancelOriginal",
        "preferredGlobalShippingMethod": "",
        "statement": "1 of 3 lab orders will be resubmitted to lab gb2.",
    }
    assert sheets.values(SHEET, TAB) == before
    assert not BulkJob.objects.exists() and not ShipmentResubmission.objects.exists()
    assert Shipment.objects.count() == 2
    assert set(Shipment.objects.values_list("status", flat=True)) == {ShipmentStatus.PROCESSING}


def test_review_is_not_ok_when_nothing_can_be_resubmitted(
    staff_api: APIClient, sheets: SheetsServer
) -> None:
    sheet_with(sheets, [["shp_1"]])

    answer = staff_api.post(f"{BASE}/review", body(), format="json").json()

    assert (answer["isOk"], answer["numberOfLabOrders"]) == (False, 0)
    assert answer["statement"] == "No row of the sheet can be resubmitted."


def test_submit_resubmits_each_row_once_to_the_chosen_lab_and_writes_back(
    sandbox_api: APIClient,
    staff_api: APIClient,
    sheets: SheetsServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    originals = shipments_of(sandbox_api, 2)
    sheet_with(sheets, [[s.public_id] for s in originals])

    answer = submit(staff_api, django_capture_on_commit_callbacks, lab="gb2")

    assert (answer["accepted"], answer["queuedRowCount"]) == (True, 2)
    for index, original in enumerate(originals):
        record = ShipmentResubmission.objects.get(original=original)
        new = Shipment.objects.get(id=record.new_shipment_id)
        assert (new.order_id, new.lab_code, new.status) == (
            original.order_id,
            "gb2",
            ShipmentStatus.PROCESSING,
        )
        assert new.submitted_at is not None and new.lab_order_reference
        assert list(
            OrderItem.objects.filter(order=original.order).values_list("shipment", flat=True)
        ) == [new.id]
        assert Shipment.objects.get(id=original.id).status == ShipmentStatus.CANCELLED
        assert sheets.column(SHEET, TAB, "New Lab Order Id")[index] == str(new.id)
        message = sheets.column(SHEET, TAB, "Message")[index]
        assert message.startswith(f"Resubmitted as {new.public_id} at gb2. Original cancelled.")
        assert "Charges" in message
        assert sheets.column(SHEET, TAB, "Last Activity")[index].startswith("20")
    assert len([c for c in sheets.write_calls() if c[1].endswith("values:batchUpdate")]) == 1

    with django_capture_on_commit_callbacks(execute=True):
        again = staff_api.post(f"{BASE}/submit", body(lab="gb2"), format="json")

    assert again.status_code == 400  # nothing left to resubmit: no empty job
    [failure] = again.json()["data"]["failures"]["spreadsheetId"]
    assert failure["code"] == "NothingToResubmit"
    assert BulkJob.objects.count() == 1
    assert Shipment.objects.count() == 4
    assert AuditEntry.objects.filter(operation="bulkResubmission.submit").count() == 2


def test_charges_change_only_when_the_plans_cost_does(
    sandbox_api: APIClient,
    staff_api: APIClient,
    sheets: SheetsServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    same, dearer = shipments_of(sandbox_api, 2)
    sheet_with(
        sheets, [[same.public_id, "", "", "", same.lab_code], [dearer.public_id, "", "", "", "us1"]]
    )

    submit(staff_api, django_capture_on_commit_callbacks, cancelOption="KeepOriginal")

    messages = sheets.column(SHEET, TAB, "Message")
    assert "Charges unchanged." in messages[0]
    assert "Charges adjusted:" in messages[1]
    assert not same.order.charges.filter(charge_type=ChargeType.REFUND).exists()
    assert dearer.order.charges.filter(charge_type=ChargeType.REFUND).count() == 1
    assert dearer.order.charges.filter(charge_type=ChargeType.ITEM).count() == 2


def test_cancel_options_each_behave_as_documented(
    sandbox_api: APIClient,
    staff_api: APIClient,
    sheets: SheetsServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    keep, cancel, refused, if_possible = shipments_of(sandbox_api, 4)
    header = [*HEADER, "Cancel Option"]
    sheets.put(
        SHEET,
        TAB,
        [
            header,
            [keep.public_id, "", "", "", "", "", "KeepOriginal"],
            [cancel.public_id, "", "", "", "", "", "CancelOriginal"],
        ],
    )
    submit(staff_api, django_capture_on_commit_callbacks, lab="gb2")
    assert Shipment.objects.get(id=keep.id).status == ShipmentStatus.PROCESSING
    assert Shipment.objects.get(id=cancel.id).status == ShipmentStatus.CANCELLED
    assert ShipmentResubmission.objects.count() == 2

    Lab.objects.filter(code=refused.lab_code).update(capabilities=["hold"])  # cannot cancel
    sheets.put(
        SHEET,
        TAB,
        [
            header,
            [refused.public_id, "", "", "", "", "", "CancelOriginal"],
            [if_possible.public_id, "", "", "", "", "", "cancelifpossible"],
        ],
    )
    submit(staff_api, django_capture_on_commit_callbacks, lab="gb2")

    messages = sheets.column(SHEET, TAB, "Message")
    assert messages[0].startswith("The original lab order could not be cancelled:")
    assert sheets.column(SHEET, TAB, "New Lab Order Id")[0] == ""
    assert not ShipmentResubmission.objects.filter(original=refused).exists()
    assert Shipment.objects.get(id=refused.id).status == ShipmentStatus.PROCESSING
    assert "Original kept (not cancelled:" in messages[1]
    assert Shipment.objects.get(id=if_possible.id).status == ShipmentStatus.PROCESSING
    assert ShipmentResubmission.objects.filter(original=if_possible).exists()


@pytest.mark.parametrize(
    ("spreadsheet", "worksheet", "field", "code"),
    [
        ("missing", TAB, "spreadsheetId", "NotFound"),
        ("secret", TAB, "spreadsheetId", "NoPermission"),
        (SHEET, "Nope", "worksheetName", "NotFound"),
    ],
)
def test_sheet_errors_are_400s_naming_the_field(
    staff_api: APIClient,
    sheets: SheetsServer,
    spreadsheet: str,
    worksheet: str,
    field: str,
    code: str,
) -> None:
    sheet_with(sheets, [["shp_1"]])
    sheets.put("secret", TAB, [HEADER])
    sheets.forbidden.add("secret")

    for response in (
        staff_api.post(
            f"{BASE}/review",
            body(spreadsheetId=spreadsheet, worksheetName=worksheet),
            format="json",
        ),
        staff_api.get(
            f"{BASE}/spreadsheet-info?SpreadsheetId={spreadsheet}&WorksheetName={worksheet}"
        ),
    ):
        assert response.status_code == 400, response.content
        assert response.json()["outcome"] == "ValidationFailed"
        assert response.json()["data"]["failures"][field][0]["code"] == code
    assert not BulkJob.objects.exists()


def test_an_unreachable_sheets_server_and_a_used_up_quota_are_400s(
    staff_api: APIClient, sheets: SheetsServer, settings: Any
) -> None:
    sheet_with(sheets, [["shp_1"]])
    sheets.quota_exceeded = True
    quota = staff_api.post(f"{BASE}/review", body(), format="json")
    settings.SHEETS_API_URL = "http://127.0.0.1:9/v4/spreadsheets"
    unreachable = staff_api.post(f"{BASE}/review", body(), format="json")

    assert quota.status_code == 400
    assert quota.json()["data"]["failures"]["spreadsheetId"][0]["code"] == "QuotaExceeded"
    assert unreachable.status_code == 400
    assert unreachable.json()["data"]["failures"]["spreadsheetId"][0]["code"] == "SheetsUnavailable"


def test_a_sheet_without_a_lab_order_id_column_names_the_worksheet(
    staff_api: APIClient, sheets: SheetsServer
) -> None:
    sheets.put(SHEET, TAB, [["Order", "Message"], ["1", ""]])

    response = staff_api.get(f"{BASE}/spreadsheet-data?spreadsheetid={SHEET}&worksheetname={TAB}")

    assert response.status_code == 400
    assert response.json()["data"]["failures"]["worksheetName"][0]["code"] == "NoHeaderRow"


@pytest.mark.parametrize(
    "path", ["form-options", "spreadsheet-info?SpreadsheetId=a&WorksheetName=b"]
)
def test_anyone_but_staff_is_unauthorized(
    sandbox_api: APIClient, api: APIClient, path: str
) -> None:
    for client in (sandbox_api, api):
        response = client.get(f"{BASE}/{path}")
        assert response.status_code == 401
        assert response.json()["outcome"] == "Unauthorized"


def test_form_options_list_labs_cancel_options_and_methods(staff_session: APIClient) -> None:
    answer = staff_session.get(f"{BASE}/form-options").json()

    assert [o["value"] for o in answer["cancelOptions"]] == [
        "CancelOriginal",
        "KeepOriginal",
        "CancelIfPossible",
    ]
    assert [m["value"] for m in answer["shippingMethods"]] == [
        "Budget",
        "Standard",
        "StandardPlus",
        "Express",
        "Overnight",
    ]
    assert [lab["alias"] for lab in answer["labs"]] == list(
        Lab.objects.filter(is_active=True).order_by("code").values_list("code", flat=True)
    )


def test_a_malformed_body_no_handler_reads_is_answered_and_audited_not_a_500(
    staff_api: APIClient,
) -> None:
    # form-options takes no POST, and an operator may not bulk-update: neither reads the body,
    # but the audit entry looks in it for the sheet (and finds it in the query).
    wrong_method = staff_api.post(
        f"{BASE}/form-options?spreadsheetId={SHEET}&worksheetName=Tab",
        "{bad",
        content_type="application/json",
    )
    not_administrator = staff_api.post(
        "/v4.0/micro-ui/siteflow-shipping/bulk-update", "{bad", content_type="application/json"
    )

    assert (wrong_method.status_code, wrong_method.json()["outcome"]) == (405, "MethodNotAllowed")
    assert (not_administrator.status_code, not_administrator.json()["outcome"]) == (
        401,
        "Unauthorized",
    )
    assert list(
        AuditEntry.objects.order_by("id").values_list("operation", "target", "status_code")
    ) == [
        ("bulkResubmission.formOptions", f"{SHEET} / Tab", 405),
        ("siteflowShipping.bulkUpdate", "", 401),
    ]


def test_bad_bodies_are_validation_failed(staff_api: APIClient, sheets: SheetsServer) -> None:
    missing = staff_api.post(f"{BASE}/submit", {"worksheetName": TAB}, format="json")
    unknown_lab = staff_api.post(f"{BASE}/submit", body(lab="zz9"), format="json")
    bad_option = staff_api.post(f"{BASE}/review", body(cancelOption="Maybe"), format="json")

    assert missing.json()["data"]["failures"]["spreadsheetId"][0]["code"]
    assert unknown_lab.json()["data"]["failures"]["lab"][0]["code"] == "UnknownLab"
    assert bad_option.json()["data"]["failures"]["cancelOption"][0]["code"] == "Invalid"
    assert not BulkJob.objects.exists() and Order.objects.count() == 0
