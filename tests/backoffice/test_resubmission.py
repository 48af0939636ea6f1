"""Bulk resubmission from a Google Sheet, through gspread against the local Sheets v4 server."""

from typing import Any

import pytest
from django.db.models import Count
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
from orders.resubmission import ResubmissionOffer, shipment_resubmission_offer
from staff.models import AuditEntry
from tests.support.documents import document_rewritten
from tests.support.orders import order_at_labs
from tests.support.sheets import SheetsServer
from tests.support.staff import staff_client

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


def test_review_and_job_agree_on_a_sheet_mixing_every_kind_of_row(
    sandbox_api: APIClient,
    staff_api: APIClient,
    sheets: SheetsServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    by_id, by_digits, by_reference, skipped, shipped, cancelled, nowhere, refused = shipments_of(
        sandbox_api, 8
    )
    Shipment.objects.filter(id=shipped.id).update(status=ShipmentStatus.SHIPPED)
    Order.objects.filter(id=cancelled.order_id).update(stage="Cancelled")
    document_rewritten(shipped.order_id)
    document_rewritten(cancelled.order_id)
    Lab.objects.filter(code="us1").update(simulator_failure_share=1)
    rows = [
        [by_id.public_id],
        [str(by_digits.id)],
        [by_reference.lab_order_reference],
        [skipped.public_id, "", "", "", "", "yes"],
        ["", "", "", "", "gb1"],  # a data row naming no lab order
        ["shp_999"],
        ["\uff11\uff12\uff13"],  # full-width digits name no shipment
        [skipped.public_id, "", "123"],  # already resubmitted, as the sheet says
        [shipped.public_id],
        [cancelled.public_id],
        [nowhere.public_id, "", "", "", "zz9"],
        [refused.public_id, "", "", "", "us1"],
    ]
    sheet_with(sheets, rows)
    before = [row[0] for row in sheets.values(SHEET, TAB)[1:]]

    review = staff_api.post(f"{BASE}/review", body(), format="json").json()
    answer = submit(staff_api, django_capture_on_commit_callbacks)

    assert review["numberOfLabOrders"] == answer["queuedRowCount"] == 4
    assert review["sheetContainsNumberOfLabOrders"] == 11
    assert review["isOk"] is False  # a row no allowed lab makes: the review says which
    assert review["statement"].startswith("4 of 11 lab orders will be resubmitted to ")
    assert " Row 12: No allowed lab (zz9) can make the shipment: " in review["statement"]
    messages = sheets.column(SHEET, TAB, "Message")
    assert len(messages) == len(rows) and all(messages)
    for index in range(3):
        assert messages[index].startswith("Resubmitted as shp_"), messages[index]
        assert messages[index].endswith("(the service's); no charge to the merchant.")
    assert messages[3:10] == [
        "Skipped (Skip Row).",
        "No Lab Order Id: nothing to resubmit.",
        "Unknown lab order 'shp_999'.",
        "Unknown lab order '\uff11\uff12\uff13'.",
        "Already resubmitted as shp_123.",
        "Already shipped: use KeepOriginal to reprint",
        "Order cancelled: a cancelled order is not resubmitted.",
    ]
    assert messages[10].startswith("No allowed lab (zz9) can make the shipment: ")
    assert not messages[10].endswith("..")
    assert messages[11] == "Original cancelled. Lab us1 refused: Simulated rejection by lab us1."
    assert [row[0] for row in sheets.values(SHEET, TAB)[1:]] == before  # cells kept as given
    new_ids = sheets.column(SHEET, TAB, "New Lab Order Id")
    assert all(new_ids[:3]) and new_ids[3] == "" and new_ids[7] == "123"
    assert all(sheets.column(SHEET, TAB, "Last Activity"))
    job = BulkJob.objects.get()
    assert job.rows.count() == len(rows)
    assert dict(job.rows.values_list("status").annotate(n=Count("id"))) == {
        "Succeeded": 3,
        "Skipped": 4,
        "Failed": 5,
    }


def test_the_admin_review_shows_each_rows_target_lab_and_lab_cost(
    sandbox_api: APIClient, sheets: SheetsServer
) -> None:
    queued, shipped = shipments_of(sandbox_api, 2)
    Shipment.objects.filter(id=shipped.id).update(status=ShipmentStatus.SHIPPED)
    document_rewritten(shipped.order_id)
    sheet_with(sheets, [[queued.public_id], [shipped.public_id]])
    admin = staff_client("olga")

    html = admin.post(
        "/admin/backoffice/bulkjob/resubmission/", {**body(), "lab": "gb2"}
    ).content.decode()

    offer = shipment_resubmission_offer(shipment=queued, labs=["gb2"])
    assert isinstance(offer, ResubmissionOffer)
    row = html[html.index(f"<td>{queued.public_id}</td>") :]
    row = row[: row.index("</tr>")]
    assert '<td class="target-lab">gb2</td>' in row
    assert f'<td class="lab-cost">{offer.cost} {offer.currency}</td>' in row
    left = html[html.index(f"<td>{shipped.public_id}</td>") :]
    assert "Left as it is: Already shipped" in left[: left.index("</tr>")]


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
        assert message.endswith("no charge to the merchant.")
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


def test_a_resubmission_adds_no_charge_to_the_merchant(
    sandbox_api: APIClient,
    staff_api: APIClient,
    sheets: SheetsServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    same, dearer = shipments_of(sandbox_api, 2)
    charged = {
        s.order_id: list(s.order.charges.values_list("id", "charge_type", "total_cost"))
        for s in (same, dearer)
    }
    sheet_with(
        sheets, [[same.public_id, "", "", "", same.lab_code], [dearer.public_id, "", "", "", "us1"]]
    )

    submit(staff_api, django_capture_on_commit_callbacks, cancelOption="KeepOriginal")

    for shipment in (same, dearer):
        after = list(shipment.order.charges.values_list("id", "charge_type", "total_cost"))
        assert after == charged[shipment.order_id]
        assert not shipment.order.charges.filter(charge_type=ChargeType.REFUND).exists()
    for message, record in zip(
        sheets.column(SHEET, TAB, "Message"),
        ShipmentResubmission.objects.order_by("original__order_id"),
        strict=True,
    ):
        assert message.endswith(
            f"Lab cost {record.lab_cost} {record.plan['currency']} (the service's); "
            "no charge to the merchant."
        )


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


def test_a_shipped_lab_order_is_reprinted_with_keep_original_and_refused_otherwise(
    sandbox_api: APIClient,
    staff_api: APIClient,
    sheets: SheetsServer,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    kept, cancelled, if_possible, by_job = shipments_of(sandbox_api, 4)
    shipped = [kept.id, cancelled.id, if_possible.id, by_job.id]
    Shipment.objects.filter(id__in=shipped).update(status=ShipmentStatus.SHIPPED)
    for shipment in (kept, cancelled, if_possible, by_job):
        document_rewritten(shipment.order_id)
    header = [*HEADER, "Cancel Option"]
    sheets.put(
        SHEET,
        TAB,
        [
            header,
            [kept.public_id, "", "", "", "", "", "keeporiginal"],
            [cancelled.public_id, "", "", "", "", "", "CancelOriginal"],
            [if_possible.public_id, "", "", "", "", "", "CancelIfPossible"],
        ],
    )

    review = staff_api.post(f"{BASE}/review", body(lab="us1"), format="json").json()
    answer = submit(staff_api, django_capture_on_commit_callbacks, lab="us1")

    assert review["numberOfLabOrders"] == answer["queuedRowCount"] == 1
    messages = sheets.column(SHEET, TAB, "Message")
    record = ShipmentResubmission.objects.get()
    assert record.original_id == kept.id
    reprint = Shipment.objects.get(id=record.new_shipment_id)
    assert messages[0].startswith(f"Reprinted as {reprint.public_id} at us1. Lab cost ")
    assert messages[1:] == ["Already shipped: use KeepOriginal to reprint"] * 2
    assert sheets.column(SHEET, TAB, "New Lab Order Id") == [str(reprint.id), "", ""]
    assert (reprint.reprint_of_id, reprint.lab_code) == (kept.id, "us1")
    assert set(Shipment.objects.filter(id__in=shipped).values_list("status", flat=True)) == {
        ShipmentStatus.SHIPPED
    }
    assert Shipment.objects.count() == 5

    # The request's cancel option stands for a row that gives none.
    sheets.put(SHEET, TAB, [header, [by_job.public_id]])
    refused = staff_api.post(f"{BASE}/review", body(lab="us1"), format="json").json()
    taken = staff_api.post(
        f"{BASE}/review", body(lab="us1", cancelOption="KeepOriginal"), format="json"
    ).json()
    assert (refused["isOk"], refused["numberOfLabOrders"]) == (False, 0)
    assert (taken["isOk"], taken["numberOfLabOrders"]) == (True, 1)
    submit(staff_api, django_capture_on_commit_callbacks, lab="us1", cancelOption="KeepOriginal")
    assert sheets.column(SHEET, TAB, "Message")[0].startswith("Reprinted as shp_")
    assert Shipment.objects.filter(reprint_of=by_job).count() == 1
