"""Hostile sheets: too many rows, too large an upload, workbooks that claim or unpack to far
more than they hold, malformed form data, formulas and separators in results files, and many
submits of one sheet at once."""

import csv
import io
import itertools
import threading
import tracemalloc
from typing import Any

import openpyxl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from backoffice import services
from backoffice.jobs import JobRunning, Source
from backoffice.models import BulkJob
from backoffice.rows import file_values, file_with_results
from common.errors import ValidationFailed
from orders.models import Shipment
from staff.services import staff_user_save
from tests.support.orders import order_at_labs
from tests.support.sheets import SheetsServer
from tests.support.workbooks import workbook_bytes

pytestmark = pytest.mark.usefixtures("catalogue")

SHEET = "sheet-big"
TAB = "Rows"
BASE = "/v4.0/micro-ui/bulk-resubmission"
TOOL = "/admin/backoffice/bulkjob/resubmission/"
MALFORMED = "The file&#x27;s cells are malformed."


def failure(response: Any, field: str) -> dict[str, str]:
    assert response.status_code == 400, response.content[:500]
    [found] = response.json()["data"]["failures"][field]
    return dict(found)


def operator() -> Client:
    client = Client()
    client.force_login(staff_user_save(username="olga")[0])
    return client


@pytest.mark.django_db
def test_a_sheet_over_the_row_limit_is_too_many_rows_and_only_the_limit_is_fetched(
    staff_api: APIClient, sheets: SheetsServer
) -> None:
    # More rows than a query may carry parameters for (65,535): refused, never a 500.
    sheets.put(SHEET, TAB, [["Lab Order Id"], *([f"shp_{n}"] for n in range(1, 70_001))])
    query = {"spreadsheetId": SHEET, "worksheetName": TAB}

    data = staff_api.get(f"{BASE}/spreadsheet-data", query)
    review = staff_api.post(f"{BASE}/review", query, format="json")

    for response in (data, review):
        found = failure(response, "worksheetName")
        assert found["code"] == "TooManyRows"
        assert "more than 10000 data rows" in found["description"]
    assert sheets.rows_answered <= 2 * 10_011  # two reads, each bounded by the limit
    assert BulkJob.objects.count() == 0


@pytest.mark.django_db
def test_rows_up_to_a_raised_limit_are_queried_in_chunks(
    staff_api: APIClient, sheets: SheetsServer, settings: Any, django_assert_max_num_queries: Any
) -> None:
    settings.BULK_MAX_ROWS = 70_000
    sheets.put(SHEET, TAB, [["Lab Order Id"], *([f"shp_{n}"] for n in range(1, 66_001))])

    with django_assert_max_num_queries(400):
        response = staff_api.post(
            f"{BASE}/review", {"spreadsheetId": SHEET, "worksheetName": TAB}, format="json"
        )

    assert response.status_code == 200, response.content[:500]
    assert response.json()["sheetContainsNumberOfLabOrders"] == 66_000
    assert response.json()["isOk"] is False


@pytest.mark.django_db
def test_an_upload_over_the_size_or_row_limit_is_400_naming_the_file(settings: Any) -> None:
    settings.BULK_UPLOAD_MAX_BYTES = 1000
    settings.BULK_MAX_ROWS = 5
    big = SimpleUploadedFile("big.csv", b"Lab Order Id\n" + b"shp_1234567\n" * 100)
    long = SimpleUploadedFile("long.csv", b"Lab Order Id\n" + b"shp_1\n" * 6)
    client = operator()

    too_large = client.post(TOOL, {"file": big})
    too_many = client.post(TOOL, {"file": long})

    assert too_large.status_code == 400
    assert "The file is over 1000 bytes, the largest upload taken." in too_large.content.decode()
    assert too_many.status_code == 400
    assert "more than 5 data rows" in too_many.content.decode()


def test_a_workbook_is_read_as_wide_and_long_as_its_cells_whatever_its_dimension_claims(
    settings: Any,
) -> None:
    settings.BULK_MAX_ROWS = 20
    content = workbook_bytes(
        [("A1", "Lab Order Id"), ("B1", "Note"), ("A2", "shp_1"), ("A3", "shp_2"), ("C3", "x")],
        dimension="A1:XFD1048576",
    )

    values = file_values("rows.xlsx", content)

    assert values == [["Lab Order Id", "Note"], ["shp_1"], ["shp_2", "", "x"]]


@pytest.mark.django_db
def test_a_workbook_of_too_many_cells_is_400_too_many_cells_and_read_in_bounded_memory(
    settings: Any,
) -> None:
    # 4 KB: a cell in the last column (XFD) on each of 400 rows, 6.5 million cells once padded.
    content = workbook_bytes([("A1", "Lab Order Id"), *((f"XFD{n}", "x") for n in range(2, 402))])
    assert len(content) < 5000

    tracemalloc.start()
    try:
        with pytest.raises(ValidationFailed) as refused:
            file_values("wide.xlsx", content)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    response = operator().post(TOOL, {"file": SimpleUploadedFile("wide.xlsx", content)})

    assert refused.value.failures == {
        "file": [
            (
                "TooManyCells",
                "The file has more than 200000 cells, the most one job takes; remove the "
                "columns the tool does not use, or split it.",
            )
        ]
    }
    assert peak < 10 * 1024 * 1024
    assert response.status_code == 400
    assert "The file has more than 200000 cells" in response.content.decode()
    assert BulkJob.objects.count() == 0


@pytest.mark.django_db
def test_a_workbook_that_unpacks_beyond_the_limit_is_too_large_and_never_unpacked(
    settings: Any,
) -> None:
    settings.BULK_UPLOAD_MAX_UNPACKED_BYTES = 1024 * 1024
    # 100,000 shared strings: 1.7 MB unpacked from a few KB.
    content = workbook_bytes(
        [("A1", "Lab Order Id")], shared_strings=itertools.repeat("a", 100_000)
    )
    assert len(content) < 10_000

    tracemalloc.start()
    try:
        with pytest.raises(ValidationFailed) as refused:
            file_values("bomb.xlsx", content)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    response = operator().post(TOOL, {"file": SimpleUploadedFile("bomb.xlsx", content)})

    [(code, description)] = refused.value.failures["file"]
    assert code == "TooLarge"
    assert description.startswith("The workbook unpacks to 17")
    assert description.endswith(" bytes, over the 1048576 taken.")
    assert peak < 256 * 1024
    assert response.status_code == 400
    assert "over the 1048576 taken." in response.content.decode()


@pytest.mark.django_db
def test_a_csv_of_too_many_cells_is_400_too_many_cells(settings: Any) -> None:
    settings.BULK_UPLOAD_MAX_CELLS = 10
    content = b"Lab Order Id,Note\n" + b"shp_1,a\n" * 4 + b"shp_2,,\n"

    with pytest.raises(ValidationFailed) as refused:
        file_values("rows.csv", content)

    assert refused.value.failures["file"][0][0] == "TooManyCells"
    assert file_values("rows.csv", content[: -len(b"shp_2,,\n")])[-1] == ["shp_1", "a"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("posted", "message"),
    [
        (
            {"file_name": "a.csv", "file_values": "{not json"},
            "The file&#x27;s cells are malformed.",
        ),
        ({"file_name": "a.csv", "file_values": "[[1, 2]]"}, "The file&#x27;s cells are malformed."),
        ({"file_name": "a.csv", "file_values": '{"a": 1}'}, "The file&#x27;s cells are malformed."),
        (
            {"file_name": "a\r\nSet-Cookie: x=1.csv", "file_values": '[["Lab Order Id"]]'},
            "must be a plain .csv or .xlsx file name",
        ),
        ({"file_values": '[["Lab Order Id"]]'}, "must be a plain .csv or .xlsx file name"),
    ],
)
def test_malformed_carried_form_data_is_400(posted: dict[str, str], message: str) -> None:
    response = operator().post(TOOL, {**posted, "confirm": "1"})

    assert response.status_code == 400
    assert message in response.content.decode()
    assert BulkJob.objects.count() == 0


def test_results_files_give_formulas_as_text() -> None:
    values = [
        ["Lab Order Id", "Message", "Note"],
        ['=HYPERLINK("http://evil.example/","click")', "", "+1"],
        ["-2", "", "@SUM(A1)"],
        ["\tx", "", "\r=1"],
        ["shp_12", "", "plain"],
    ]
    cells = {(5, 1): "=cmd|' /C calc'!A0", (2, 1): "Resubmitted as shp_9."}

    as_csv, _ = file_with_results(name="a.csv", values=values, cells=cells)
    as_xlsx, _ = file_with_results(name="a.xlsx", values=values, cells=cells)

    rows = list(csv.reader(io.StringIO(as_csv.decode(), newline="")))
    sheet = openpyxl.load_workbook(io.BytesIO(as_xlsx)).worksheets[0]
    from_xlsx = [[c.value or "" for c in row] for row in sheet.iter_rows()]
    formulas = [c for row in sheet.iter_rows() for c in row if c.data_type == "f"]
    expected = [
        ["Lab Order Id", "Message", "Note"],
        ['\'=HYPERLINK("http://evil.example/","click")', "Resubmitted as shp_9.", "'+1"],
        ["'-2", "", "'@SUM(A1)"],
        ["'\tx", "", "'\r=1"],
        ["shp_12", "'=cmd|' /C calc'!A0", "plain"],
    ]
    # In a CSV the line break starts a field too, for a program that ignores quotes.
    assert rows == [[cell.replace("\r=", "\r'=") for cell in row] for row in expected]
    # XML keeps no bare carriage return: the workbook reads it back as a line feed.
    assert from_xlsx == [[cell.replace("\r", "\n") for cell in row] for row in expected]
    assert formulas == []


@pytest.mark.parametrize("separator", [",", ";", "\t", "|"])
def test_no_field_of_a_csv_results_file_starts_a_formula_whatever_the_separator(
    separator: str,
) -> None:
    values = [
        ["Lab Order Id", "Message", "Note"],
        ["shp_1", "", "a;=1+1"],
        ["shp_2", "", 'b";=HYPERLINK("http://evil.example/")'],
        ["shp_3", "", "c|@SUM(A1)"],
        ["shp_4", "", "d\t+1"],
        ["shp_5", "", "e, -2"],
        ["shp_6", "", "f\n=1+1"],
    ]
    cells = {(2, 1): "Refused; =cmd|' /C calc'!A0"}

    content, content_type = file_with_results(name="a.csv", values=values, cells=cells)
    text = content.decode()

    assert content_type == "text/csv"
    # Every field as a program splitting on this separator finds it, with quotes or without.
    fields = [
        field
        for row in csv.reader(io.StringIO(text, newline=""), delimiter=separator)
        for field in row
    ]
    fields += [field for line in text.splitlines() for field in line.split(separator)]
    assert fields
    assert [f for f in fields if f.lstrip(' \t"').startswith(("=", "+", "-", "@"))] == []


def test_csv_results_quote_every_cell_with_a_separator_a_quote_or_a_line_break() -> None:
    values = [
        ["Lab Order Id", "Note"],
        ["shp_1", "a;=1+1"],
        ["shp_2", "x|y"],
        ["shp_3", "tab\there"],
        ["shp_4", 'say "hi"'],
        ["shp_5", "two\nlines"],
        ["shp_6", "plain text"],
    ]

    content, _ = file_with_results(name="a.csv", values=values, cells={})

    assert content.decode() == (
        "Lab Order Id,Note\r\n"
        'shp_1,"a;\'=1+1"\r\n'
        'shp_2,"x|y"\r\n'
        'shp_3,"tab\there"\r\n'
        'shp_4,"say ""hi"""\r\n'
        'shp_5,"two\nlines"\r\n'
        "shp_6,plain text\r\n"
    )
    assert list(csv.reader(io.StringIO(content.decode(), newline=""))) == [
        ["Lab Order Id", "Note"],
        ["shp_1", "a;'=1+1"],
        *values[2:],
    ]


@pytest.mark.django_db
def test_a_second_submit_while_the_sheets_job_runs_answers_with_that_job(
    sandbox_api: APIClient, staff_api: APIClient, sheets: SheetsServer
) -> None:
    shipment = Shipment.objects.get(order=order_at_labs(sandbox_api))
    sheets.put(SHEET, TAB, [["Lab Order Id"], [shipment.public_id]])
    query = {"spreadsheetId": SHEET, "worksheetName": TAB, "lab": "gb2"}

    first = staff_api.post(f"{BASE}/submit", query, format="json").json()
    second = staff_api.post(f"{BASE}/submit", query, format="json").json()

    [job] = BulkJob.objects.all()
    assert (first["accepted"], first["jobId"]) == (True, job.id)
    assert (second["accepted"], second["jobId"], second["queuedRowCount"]) == (False, job.id, 1)
    assert second["message"].startswith(f"Job {job.id} is still running over this worksheet")


@pytest.mark.django_db(transaction=True)
def test_ten_submits_of_one_sheet_at_once_make_one_job(
    sandbox_api: APIClient, staff_user: Any, sheets: SheetsServer
) -> None:
    shipment = Shipment.objects.get(order=order_at_labs(sandbox_api))
    sheets.put(SHEET, TAB, [["Lab Order Id"], [shipment.public_id]])
    start = threading.Barrier(10)
    answers: list[str] = []

    def submit() -> None:
        try:
            start.wait()
            source = Source(spreadsheet_id=SHEET, worksheet_name=TAB)
            try:
                job = services.resubmission_submit(user=staff_user, source=source, lab="gb2")
                answers.append(f"created {job.id}")
            except JobRunning as running:
                answers.append(f"running {running.job.id}")
            except Exception as exc:
                answers.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    [job] = BulkJob.objects.all()
    assert sorted(answers) == [f"created {job.id}"] + [f"running {job.id}"] * 9
