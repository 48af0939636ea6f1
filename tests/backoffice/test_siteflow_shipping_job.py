"""The Site Flow shipping update of a long sheet against a slow site runs as a job on a real
worker: ``bulk-update`` answers within its bound with the rows done so far, ``jobId`` and
``pending``, and the worker goes on until every row is updated and written back."""

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.test import APIClient

from backoffice.models import BulkJob, BulkJobRow, JobStatus, RowStatus
from merchants.models import EnvironmentKind
from merchants.services import CreatedMerchant
from orders.models import Shipment
from staff.models import ADMINISTRATORS_GROUP
from tests.orders.factories import ShipmentFactory
from tests.support.sheets import SheetsServer
from tests.support.siteflow import SiteflowServer, SiteOrder, lab_at_site
from tests.support.worker import Worker, needs_worker, purge_queues, start_worker, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,  # its bounds are minutes; it kills its own workers only
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue"),
    needs_worker,
]
ROWS = 200
SITE_DELAY = 0.03  # each site answer; a row is two (the lab order's state, then the change)
BOUND = 2.0


@pytest.fixture
def site() -> Iterator[SiteflowServer]:
    server = SiteflowServer(token="tok-gb1", secret="secret-gb1-site")
    server.delay_seconds = SITE_DELAY
    server.start()
    lab_at_site(server)
    yield server
    server.stop()


@pytest.fixture
def job_worker(live_server: Any, sheets: SheetsServer) -> Iterator[Worker]:
    with tempfile.TemporaryDirectory(prefix="shipping-job-") as folder:
        running = start_worker(
            Path(folder),
            live_server.url,
            SHEETS_API_URL=sheets.api_url,
            SHEETS_ACCESS_TOKEN=sheets.token,
            BULK_WRITE_BACK_SECONDS="1",
        )
        try:
            yield running
        finally:
            running.kill()
            purge_queues()


def test_two_hundred_rows_against_a_slow_site_finish_as_a_job_written_back(
    job_worker: Worker,
    site: SiteflowServer,
    sheets: SheetsServer,
    merchant: CreatedMerchant,
    staff_user: Any,
    staff_api: APIClient,
    settings: Any,
) -> None:
    settings.SITEFLOW_SHIPPING_WAIT_SECONDS = BOUND
    staff_user.groups.add(Group.objects.get_or_create(name=ADMINISTRATORS_GROUP)[0])
    live = merchant.merchant.environments.get(kind=EnvironmentKind.LIVE)
    shipments = [
        ShipmentFactory.create(
            order__environment=live,
            order__producing=True,
            order__due_at=None,  # the pipeline has nothing to do meanwhile
            submitted_at=timezone.now(),
            lab_order_reference=f"sf{number:04d}",
        )
        for number in range(ROWS)
    ]
    for shipment in shipments:
        site.orders[shipment.public_id] = SiteOrder(id=shipment.lab_order_reference, submitted={})
    sheets.put("long", "Rows", [["Lab Order Id"], *[[s.public_id] for s in shipments]])

    started = time.monotonic()
    response = staff_api.post(
        "/v4.0/micro-ui/siteflow-shipping/bulk-update",
        {
            "spreadsheetId": "long",
            "worksheetName": "Rows",
            "shippingSpeed": "Express",
            "carrierAlias": "dhl-express",
        },
        format="json",
    )
    answered_in = time.monotonic() - started

    assert response.status_code == 200, response.content
    answer = response.json()
    job = BulkJob.objects.get()
    assert answer["jobId"] == job.id
    assert answered_in < BOUND + 5  # the bound, not the sheet's length, sets the wait
    assert 0 < answer["pending"] < ROWS
    assert len(answer["results"]) == ROWS - answer["pending"]
    assert answer["updatedCount"] == len(answer["results"]) and answer["failedCount"] == 0
    assert all(r["success"] for r in answer["results"])

    wait_for(
        "the job done",
        lambda: BulkJob.objects.filter(id=job.id, status=JobStatus.DONE).exists(),
        job_worker,
        timeout=180,
    )

    rows = BulkJobRow.objects.filter(job=job)
    assert rows.filter(status=RowStatus.SUCCEEDED, written_back=True).count() == ROWS
    assert len(site.operations()) == ROWS
    assert set(Shipment.objects.values_list("carrier_name", "carrier_service")) == {
        ("DHL", "Express")
    }
    changed = "Carrier changed to dhl-express (Express)."
    assert sheets.column("long", "Rows", "Message") == [changed] * ROWS
    assert all(sheets.column("long", "Rows", "Last Activity"))
