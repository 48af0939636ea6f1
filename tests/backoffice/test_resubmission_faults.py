"""A bulk resubmission job survives its worker being killed (SIGKILL) mid-job: the restarted
worker's sweeper queues the job once its claim's lease expires, it goes on from the first
pending row, no row is resubmitted twice, and a row whose lab call a killed worker never heard
the answer of is reconciled with the lab rather than failed."""

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from backoffice.models import BulkJob, BulkJobRow, JobStatus, RowStatus
from labs.models import SimulatedLabOrder
from orders.models import Order, PipelineStep, Shipment, ShipmentResubmission, ShipmentStatus
from tests.support.orders import order_at_labs, photo_order, pk
from tests.support.pipeline import advance_to
from tests.support.sheets import SheetsServer
from tests.support.siteflow import SiteflowServer, lab_at_site, site_running
from tests.support.worker import Worker, needs_worker, purge_queues, start_worker, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,  # its bounds are minutes; it kills its own workers only
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue"),
    needs_worker,
]
ROWS = 60
SITE_ROWS = 3


@pytest.fixture
def sheets() -> Iterator[SheetsServer]:
    server = SheetsServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def job_worker(live_server: Any, sheets: SheetsServer) -> Iterator[Worker]:
    with tempfile.TemporaryDirectory(prefix="bulk-faults-") as folder:
        running = start_worker(
            Path(folder),
            live_server.url,
            PIPELINE_CLAIM_SECONDS="4",
            ASSET_DOWNLOAD_DEADLINE_SECONDS="3",
            PIPELINE_SWEEP_SECONDS="0.5",
            SHEETS_API_URL=sheets.api_url,
            SHEETS_ACCESS_TOKEN=sheets.token,
            BULK_WRITE_BACK_SECONDS="0.5",
        )
        try:
            yield running
        finally:
            running.kill()
            purge_queues()


def test_a_killed_worker_delays_the_job_and_no_row_is_resubmitted_twice(
    job_worker: Worker,
    sandbox_api: APIClient,
    staff_api: APIClient,
    sheets: SheetsServer,
    settings: Any,
) -> None:
    settings.SHEETS_API_URL = sheets.api_url
    settings.SHEETS_ACCESS_TOKEN = sheets.token
    originals = [Shipment.objects.get(order=order_at_labs(sandbox_api)) for _ in range(ROWS)]
    Order.objects.update(due_at=None)  # the pipeline has nothing to do meanwhile
    sheets.put("s", "T", [["Lab Order Id"], *[[s.public_id] for s in originals]])
    done = BulkJobRow.objects.exclude(status=RowStatus.PENDING)

    answer = staff_api.post(
        "/v4.0/micro-ui/bulk-resubmission/submit",
        {"spreadsheetId": "s", "worksheetName": "T", "lab": "gb2"},
        format="json",
    ).json()
    assert answer["queuedRowCount"] == ROWS
    wait_for("some rows done", lambda: done.count() >= 5, job_worker)
    job_worker.kill()
    assert done.count() < ROWS
    job_worker.start()
    wait_for(
        "the job done",
        lambda: BulkJob.objects.filter(status=JobStatus.DONE).exists(),
        job_worker,
        timeout=120,
    )

    assert BulkJobRow.objects.filter(status=RowStatus.SUCCEEDED).count() == ROWS
    assert ShipmentResubmission.objects.filter(submitted_at__isnull=False).count() == ROWS
    for original in originals:
        assert Shipment.objects.filter(order=original.order).count() == 2
    new_ids = [f"shp_{r.new_shipment_id}" for r in ShipmentResubmission.objects.all()]
    assert SimulatedLabOrder.objects.filter(shipment_id__in=new_ids).count() == ROWS
    assert sorted(sheets.column("s", "T", "New Lab Order Id")) == sorted(
        str(r.new_shipment_id) for r in ShipmentResubmission.objects.all()
    )


@pytest.fixture
def site(settings: Any) -> Iterator[SiteflowServer]:
    with site_running(settings, token="token-bulk", secret="secret-bulk") as server:
        yield server


def test_a_job_killed_during_its_rows_lab_calls_finishes_each_row_resubmitted_once(
    live_server: Any,
    live_api: APIClient,
    staff_api: APIClient,
    httpserver: HTTPServer,
    sheets: SheetsServer,
    site: SiteflowServer,
    settings: Any,
    tmp_path: Path,
) -> None:
    """With the project's own lease. The worker is killed twice: while the site has cancelled
    a row's original and its answer is on its way, and while the site has made a row's new lab
    order and its answer is on its way. The job finishes within two minutes of the last
    restart; the cancel the site had made counts as done, and the new lab order is adopted, not
    made again."""
    settings.LIVE_BASE_URL = live_server.url  # the site fetches the print files from here
    settings.SHEETS_API_URL = sheets.api_url
    settings.SHEETS_ACCESS_TOKEN = sheets.token
    lab_at_site(site, "gb1")
    lab_at_site(site, "de1")
    originals = []
    for n in range(SITE_ROWS):
        order_id = photo_order(live_api, httpserver, f"bulk-{n}")
        advance_to(order_id, PipelineStep.PRODUCTION)
        originals.append(Shipment.objects.get(order_id=pk(order_id)))
    assert {s.lab_code for s in originals} == {"gb1"} and len(site.orders) == SITE_ROWS
    Order.objects.update(due_at=None)  # the pipeline has nothing to do meanwhile
    sheets.put("s", "T", [["Lab Order Id"], *[[s.public_id] for s in originals]])
    # Each answer held long enough for the kill to land while it is on its way (the test sees
    # the call within a 0.05 s poll and kills at once), and no longer: three rows make six.
    site.answer_delays.update(cancel=2.0, submit=2.0)
    worker = start_worker(
        tmp_path,
        live_server.url,
        SHEETS_API_URL=sheets.api_url,
        SHEETS_ACCESS_TOKEN=sheets.token,
        BULK_WRITE_BACK_SECONDS="0.5",
    )
    try:
        answer = staff_api.post(
            "/v4.0/micro-ui/bulk-resubmission/submit",
            {"spreadsheetId": "s", "worksheetName": "T", "lab": "de1"},
            format="json",
        ).json()
        assert answer.get("queuedRowCount") == SITE_ROWS, answer
        wait_for("a cancel in flight", lambda: site.in_flight["cancel"] > 0, worker)
        worker.kill()
        worker.start()
        wait_for("a submission in flight", lambda: site.in_flight["submit"] > 0, worker)
        worker.kill()
        killed_during_submission = ShipmentResubmission.objects.filter(
            submitted_at__isnull=True
        ).count()
        worker.start()
        restarted = time.monotonic()
        wait_for(
            "the job done",
            lambda: BulkJob.objects.filter(status=JobStatus.DONE).exists(),
            worker,
            timeout=120,
        )
        finished_after = time.monotonic() - restarted
    finally:
        worker.kill()
        purge_queues()

    assert killed_during_submission == 1 and finished_after < 120
    rows = list(BulkJobRow.objects.order_by("row_index"))
    assert [row.status for row in rows] == [RowStatus.SUCCEEDED] * SITE_ROWS
    assert all("Original cancelled." in row.message for row in rows), [r.message for r in rows]
    records = list(ShipmentResubmission.objects.all())
    assert len(records) == SITE_ROWS and all(r.submitted_at is not None for r in records)
    new_ids = {f"shp_{r.new_shipment_id}" for r in records}
    # Each row's new lab order asked of the site once, each original cancelled there once.
    assert {k: v for k, v in site.submissions.items() if k in new_ids} == dict.fromkeys(new_ids, 1)
    assert site.lookups >= 1
    for original in originals:
        assert site.order(original.public_id).status == "cancelled"
        stored = Shipment.objects.get(id=original.id)
        assert (stored.status, stored.lab_operation) == (ShipmentStatus.CANCELLED, "")
    for record in records:
        new = Shipment.objects.get(id=record.new_shipment_id)
        assert new.lab_order_reference == site.order(new.public_id).id
    assert sorted(sheets.column("s", "T", "New Lab Order Id")) == sorted(
        str(r.new_shipment_id) for r in records
    )
