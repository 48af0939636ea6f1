"""The back-office's services called directly, with orders, shipments, jobs and rows made by
the factories: what a sheet's rows would do, a job run row by row (each row one call of
``orders.resubmission``), the results file, and the checks of the tools' inputs."""

import csv
import io
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from backoffice.jobs import Source, bulk_job_run, job_file, row_cells
from backoffice.models import BulkJob, BulkJobRow, JobStatus, RowStatus
from backoffice.resubmission import RowAssessment, row_resubmit, rows_assess
from backoffice.rows import SheetRow
from backoffice.services import (
    cancel_option_check,
    lab_check,
    resubmission_review,
    resubmission_submit,
)
from common.errors import ValidationFailed
from orders.models import CancelOption, Shipment, ShipmentResubmission, ShipmentStatus
from orders.resubmission import ALREADY_SHIPPED
from tests.backoffice.factories import BulkJobFactory, BulkJobRowFactory
from tests.orders.factories import OrderFactory, ShipmentFactory
from tests.staff.factories import StaffUserFactory
from tests.support.documents import document_rewritten

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]


def _at_its_lab() -> Shipment:
    """A shipment gb1 accepted, of an order in production."""
    return ShipmentFactory.create(order=OrderFactory.create(producing=True), submitted=True)


def _row(index: int, text: str, **changes: Any) -> SheetRow:
    number = int(text.removeprefix("shp_")) if text.removeprefix("shp_").isdigit() else None
    fields: dict[str, Any] = {
        "row_index": index,
        "lab_order_text": text,
        "lab_order_id": number,
        "message": "",
        "new_lab_order_id": None,
        "last_activity": None,
        "labs": (),
        "cancel_option": "",
        "skip_row": False,
    }
    return SheetRow(**(fields | changes))


def _fates(assessments: list[RowAssessment]) -> list[tuple[int, bool, str, str]]:
    return [(a.row.row_index, a.queued, a.status, a.reason) for a in assessments]


def test_each_rows_fate_is_read_with_a_fixed_number_of_queries_besides_one_plan_a_row() -> None:
    ready, shipped, resubmitted, queued = (_at_its_lab() for _ in range(4))
    Shipment.objects.filter(id=shipped.id).update(status=ShipmentStatus.SHIPPED)
    document_rewritten(shipped.order_id)
    ShipmentResubmission.objects.create(
        original=resubmitted,
        new_shipment_id=resubmitted.id + 1,
        lab_code="us1",
        lab_country_code="US",
        shipping_method="Standard",
        submitted_at=timezone.now(),
    )
    pending = BulkJobRowFactory.create(lab_order_id=queued.id)
    rows = [
        _row(2, ready.public_id),
        _row(3, shipped.public_id),
        _row(4, resubmitted.public_id),
        _row(5, queued.public_id),
        _row(6, "shp_999"),
        _row(7, ready.public_id, skip_row=True),
        _row(8, ""),
        _row(9, ready.public_id, new_lab_order_id=123),
    ]

    assessments = rows_assess(rows=rows, lab="us1")
    with CaptureQueriesContext(connection) as counted:  # as read again, the catalogue kept
        rows_assess(rows=rows, lab="us1")
    more = [_row(10 + n, shipped.public_id) for n in range(5)] + [_row(20, "shp_998")]
    with CaptureQueriesContext(connection) as counted_more:
        rows_assess(rows=[*rows, *more], lab="us1")
    assert len(counted_more) == len(counted)  # more rows that are not resubmitted: no query more
    # The shipments are read once: by id, then by lab reference for the row naming none of ours.
    assert len([q for q in counted if q["sql"].startswith('SELECT "orders_shipment"')]) == 2

    fates = _fates(assessments)
    assert fates[0] == (2, True, RowStatus.PENDING, "")
    assert fates[1:5] == [
        (3, False, RowStatus.SKIPPED, ALREADY_SHIPPED),
        (4, False, RowStatus.SKIPPED, f"Already resubmitted as shp_{resubmitted.id + 1}."),
        (5, False, RowStatus.SKIPPED, f"Already queued for resubmission (job {pending.job_id})."),
        (6, False, RowStatus.FAILED, fates[4][3]),
    ]
    assert "shp_999" in fates[4][3]
    assert fates[5:] == [
        (7, False, RowStatus.SKIPPED, "Skipped (Skip Row)."),
        (8, False, RowStatus.SKIPPED, "No Lab Order Id: nothing to resubmit."),
        (9, False, RowStatus.SKIPPED, "Already resubmitted as shp_123."),
    ]
    assert assessments[0].shipment == ready
    assert assessments[0].offer is not None and assessments[0].offer.lab_code == "us1"


def _active_labs_reads(queries: CaptureQueriesContext) -> int:
    """The reads of which labs are active (the codes alone, where a plan would begin)."""
    return len(
        [
            q
            for q in queries
            if q["sql"].startswith('SELECT "labs_lab"."code"') and "is_active" in q["sql"]
        ]
    )


def test_rows_naming_no_lab_are_planned_at_every_active_lab_read_once() -> None:
    rows = [_row(2 + n, _at_its_lab().public_id) for n in range(3)]
    rows_assess(rows=rows[:1])  # the catalogue snapshot, labs included, read once

    with CaptureQueriesContext(connection) as counted:
        assessments = rows_assess(rows=rows)

    assert [a.offer.lab_code if a.offer else a.reason for a in assessments] == ["gb1"] * 3
    assert _active_labs_reads(counted) == 0


def test_a_job_of_rows_naming_no_lab_reads_the_active_labs_once_at_most() -> None:
    job = BulkJobFactory.create()
    for n in range(3):
        BulkJobRowFactory.create(job=job, row_index=2 + n, lab_order_id=_at_its_lab().id, labs=[])

    with CaptureQueriesContext(connection) as counted:
        bulk_job_run(job_id=job.id)

    assert set(job.rows.values_list("status", flat=True)) == {RowStatus.SUCCEEDED}
    assert _active_labs_reads(counted) <= 1


def test_a_chosen_lab_that_cannot_make_the_items_fails_the_row_with_why() -> None:
    shipment = _at_its_lab()

    (assessment,) = rows_assess(rows=[_row(2, shipment.public_id)], lab="gb3")

    assert (assessment.queued, assessment.status) == (False, RowStatus.FAILED)
    assert "gb3" in assessment.reason


def test_a_row_is_resubmitted_at_the_jobs_lab_else_its_own_labs_with_its_own_cancel_option() -> (
    None
):
    by_row, by_job = _at_its_lab(), _at_its_lab()
    own_labs = BulkJobRowFactory.create(
        lab_order_id=by_row.id, labs=["us1"], cancel_option=CancelOption.KEEP_ORIGINAL
    )
    jobs_lab = BulkJobRowFactory.create(
        lab_order_id=by_job.id, labs=["nolab"], job=BulkJobFactory.create(lab="us1")
    )

    first = row_resubmit(job=own_labs.job, row=own_labs)
    second = row_resubmit(job=jobs_lab.job, row=jobs_lab)

    assert first.successful and second.successful, (first, second)
    assert first.new_shipment_id is not None and second.new_shipment_id is not None
    assert Shipment.objects.get(id=first.new_shipment_id).lab_code == "us1"
    assert Shipment.objects.get(id=second.new_shipment_id).lab_code == "us1"
    # The row's KeepOriginal kept its original; the job's CancelOriginal cancelled the other.
    assert Shipment.objects.get(id=by_row.id).status == ShipmentStatus.PROCESSING
    assert Shipment.objects.get(id=by_job.id).status == ShipmentStatus.CANCELLED
    assert first.message.startswith(f"Resubmitted as shp_{first.new_shipment_id} at us1.")
    assert "Original cancelled." in second.message


def test_a_job_does_each_pending_row_once_then_is_done_and_written_back() -> None:
    ready, shipped = _at_its_lab(), _at_its_lab()
    Shipment.objects.filter(id=shipped.id).update(status=ShipmentStatus.SHIPPED)
    document_rewritten(shipped.order_id)
    job = BulkJobFactory.create(lab="us1")
    first = BulkJobRowFactory.create(job=job, lab_order_id=ready.id)
    second = BulkJobRowFactory.create(job=job, lab_order_id=shipped.id)
    earlier = BulkJobRowFactory.create(job=job, lab_order_id=ready.id, done=True)

    assert bulk_job_run(job_id=job.id) is True

    rows = {row.id: row for row in BulkJobRow.objects.filter(job=job)}
    record = ShipmentResubmission.objects.get(original=ready)
    assert (rows[first.id].status, rows[first.id].new_lab_order_id) == (
        RowStatus.SUCCEEDED,
        record.new_shipment_id,
    )
    assert (rows[second.id].status, rows[second.id].message) == (
        RowStatus.FAILED,
        ALREADY_SHIPPED,
    )
    assert rows[earlier.id].message == "Resubmitted."  # done before: not done again
    assert all(row.written_back for row in rows.values())
    finished = BulkJob.objects.get(id=job.id)
    assert (finished.status, finished.claimed_until, finished.due_at) == (
        JobStatus.DONE,
        None,
        None,
    )
    # A second run finds the job done: nothing is sent or written again.
    assert bulk_job_run(job_id=job.id) is False
    assert ShipmentResubmission.objects.count() == 1
    assert Shipment.objects.filter(order_id=ready.order_id).count() == 2


def test_an_uploaded_file_is_reviewed_then_queued_and_given_back_with_its_results() -> None:
    ready, shipped = _at_its_lab(), _at_its_lab()
    Shipment.objects.filter(id=shipped.id).update(status=ShipmentStatus.SHIPPED)
    document_rewritten(shipped.order_id)
    content = f"Lab Order Id,Message\n{ready.public_id},\n{shipped.id},\nshp_999,\n".encode()
    source = Source.upload("rows.csv", content)

    _, review = resubmission_review(source=source, lab="us1")
    job = resubmission_submit(user=StaffUserFactory.create(), source=source, lab="us1")

    assert (review.is_ok, review.statement, review.sheet_row_count) == (
        True,
        "1 of 3 lab orders will be resubmitted to lab us1.",
        3,
    )
    # Every data row is in the job: the resubmittable one for the worker, the others recorded.
    assert list(job.rows.order_by("row_index").values_list("lab_order_id", "status")) == [
        (ready.id, RowStatus.PENDING),
        (shipped.id, RowStatus.SKIPPED),
        (999, RowStatus.FAILED),
    ]
    assert bulk_job_run(job_id=job.id) is True
    row = job.rows.get(lab_order_id=ready.id)
    assert row_cells(job, [row])[(row.row_index, 1)] == row.message
    body, content_type, name = job_file(job)
    assert (content_type.startswith("text/csv"), name) == (True, "results-rows.csv")
    table = list(csv.reader(io.StringIO(body.decode("utf-8-sig"))))
    assert table[0][:3] == ["Lab Order Id", "Message", "New Lab Order Id"]
    assert table[1][1].startswith(f"Resubmitted as shp_{row.new_lab_order_id} at us1.")
    assert table[1][2] == str(row.new_lab_order_id)


def test_the_tools_inputs_are_read_in_any_letter_case_or_refused_naming_their_field() -> None:
    assert cancel_option_check(" keeporiginal ") == CancelOption.KEEP_ORIGINAL
    assert cancel_option_check("") == CancelOption.CANCEL_ORIGINAL
    assert lab_check("GB2") == "gb2"
    assert lab_check("") == ""
    with pytest.raises(ValidationFailed) as refused:
        cancel_option_check("later")
    assert "cancelOption" in str(refused.value.failures)
    with pytest.raises(ValidationFailed) as unknown:
        lab_check("zz9", field="lab")
    assert "UnknownLab" in str(unknown.value.failures)
