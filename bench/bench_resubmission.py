"""Bulk resubmission of a 1,000-row sheet: review, then the job, at simulator labs.

Sets up a throwaway SQLite database under a temporary folder (or uses ``DATABASE_URL`` if set),
migrates it, loads the demo catalogue, places ``--rows`` Sandbox orders whose shipments are at
their labs, and writes their lab order ids to a worksheet of the local Sheets v4 server (the
one the tests use, reached through gspread over HTTP). Then it times ``review`` (through the
API, staff key) and the job run in this process (as a worker runs it), and prints rows per
second and the Sheets API requests per row (the goal is under 0.1: reads are two requests,
results are written back in batches).

    .venv/bin/python bench/bench_resubmission.py [--rows 1000] [--write-back-seconds 2]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--write-back-seconds", type=float, default=2.0)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="bench-resubmission-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    os.environ.setdefault("VAR_DIR", folder)
    os.environ["BULK_WRITE_BACK_SECONDS"] = str(args.write_back_seconds)
    os.environ.setdefault("LOG_LEVEL", "WARNING")

    import logging

    import django

    django.setup()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    from django.core.management import call_command
    from django.db import connections, transaction
    from django.utils import timezone
    from rest_framework.test import APIClient

    call_command("migrate", verbosity=0)
    from django.conf import settings

    from backoffice.jobs import Source, bulk_job_run
    from backoffice.models import BulkJob, RowStatus
    from backoffice.services import resubmission_submit
    from labs.services import demo_catalogue_load
    from orders.models import Order, Shipment
    from orders.pipeline.steps.allocate import order_allocate
    from staff.services import staff_api_key_create
    from tests.merchants.factories import merchant_with_keys
    from tests.staff.factories import StaffUserFactory
    from tests.support.orders import order_body
    from tests.support.sheets import SheetsServer

    demo_catalogue_load()
    merchant = merchant_with_keys(name="Bench Prints")
    staff = StaffUserFactory.create(username="bench")
    staff_key = staff_api_key_create(user=staff, name="bench")[1]
    merchant_api = APIClient()
    merchant_api.credentials(HTTP_X_API_KEY=merchant.sandbox_api_key)
    started = time.perf_counter()
    ids = []
    for n in range(args.rows):
        answer = merchant_api.post(
            "/v4.0/orders", order_body(merchantReference=f"B{n}"), format="json"
        )
        order = Order.objects.get(id=int(answer.json()["order"]["id"].split("_")[1]))
        with transaction.atomic():
            order_allocate(order=order)
        Shipment.objects.filter(order=order).update(
            submitted_at=timezone.now(), lab_order_reference=f"SIM-{order.id}"
        )
        ids.append(Shipment.objects.get(order=order).public_id)
    Order.objects.update(due_at=None)
    print(f"setup: {args.rows} orders at their labs in {time.perf_counter() - started:.1f} s")

    sheets = SheetsServer()
    sheets.start()
    settings.SHEETS_API_URL = sheets.api_url
    settings.SHEETS_ACCESS_TOKEN = sheets.token
    settings.BULK_WRITE_BACK_SECONDS = args.write_back_seconds
    sheets.put(
        "bench",
        "Rows",
        [["Lab Order Id", "Message", "New Lab Order Id", "Last Activity"]] + [[i] for i in ids],
    )
    staff_api = APIClient()
    staff_api.credentials(HTTP_X_API_KEY=staff_key)
    body = {"spreadsheetId": "bench", "worksheetName": "Rows", "lab": "gb2"}

    started = time.perf_counter()
    review = staff_api.post("/v4.0/micro-ui/bulk-resubmission/review", body, format="json").json()
    review_seconds = time.perf_counter() - started
    assert review["numberOfLabOrders"] == args.rows, review

    started = time.perf_counter()
    job = resubmission_submit(
        user=staff, source=Source(spreadsheet_id="bench", worksheet_name="Rows"), lab="gb2"
    )
    submit_seconds = time.perf_counter() - started
    started = time.perf_counter()
    bulk_job_run(job_id=job.id)
    run_seconds = time.perf_counter() - started
    job = BulkJob.objects.get(id=job.id)
    succeeded = job.rows.filter(status=RowStatus.SUCCEEDED).count()
    calls = len(sheets.calls)
    written = sum(1 for v in sheets.column("bench", "Rows", "New Lab Order Id") if v)
    sheets.stop()

    print(
        f"review:   {args.rows} rows in {review_seconds:.2f} s "
        f"({args.rows / review_seconds:.0f} rows/s)"
    )
    print(f"submit:   {submit_seconds:.2f} s (answers at once; job queued)")
    print(
        f"job:      {succeeded}/{args.rows} rows resubmitted in {run_seconds:.1f} s "
        f"({args.rows / run_seconds:.1f} rows/s)"
    )
    print(f"sheet:    {written} rows written back")
    print(f"Sheets API requests: {calls} in all, {calls / args.rows:.3f} per row (goal < 0.1)")
    connections.close_all()
    shutil.rmtree(folder, ignore_errors=True)  # the throwaway SQLite database and media


if __name__ == "__main__":
    main()
