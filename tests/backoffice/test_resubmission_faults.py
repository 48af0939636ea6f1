"""A bulk resubmission job survives its worker being killed (SIGKILL) mid-job: the restarted
worker's sweeper queues the job once its claim expires, it goes on from the first pending row,
and no row is resubmitted twice."""

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from backoffice.models import BulkJob, BulkJobRow, JobStatus, RowStatus
from labs.models import SimulatedLabOrder
from orders.models import Order, Shipment, ShipmentResubmission
from tests.support.orders import order_at_labs
from tests.support.sheets import SheetsServer
from tests.support.worker import Worker, needs_worker, purge_queues, start_worker, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue"),
    needs_worker,
]
ROWS = 60


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
