"""Bulk jobs: created from a sheet's rows, run row by row by a worker, results written back.

A job is claimed by a conditional update (one worker at a time) for a short lease
(``common.leases``), renewed by a heartbeat while the worker runs it, a row's lab calls
included; rows are done in order and each result is kept in its row at once, only while the
claim holds. Results reach the sheet in one ``values:batchUpdate`` per
``BULK_WRITE_BACK_SECONDS`` (or ``BULK_WRITE_BACK_ROWS`` rows), and when the job ends. A
killed worker stops renewing the lease, so the job is due again within
``PIPELINE_CLAIM_SECONDS``; the sweeper then queues it and the next run goes on from the first
pending row (a row's work itself is safe to repeat: the orders service reconciles with the
lab what a killed row had sent).
"""

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from backoffice.models import BulkJob, BulkJobRow, JobKind, JobStatus, RowStatus
from backoffice.resubmission import row_resubmit
from backoffice.rows import (
    FILE_FIELD,
    LAST_ACTIVITY,
    MESSAGE,
    NEW_LAB_ORDER_ID,
    RowOutcome,
    SheetRow,
    file_name_check,
    file_table,
    file_values,
    file_values_check,
    file_with_results,
    result_columns,
)
from backoffice.sheets import Table, sheet_cells_write, sheet_read
from backoffice.shipping import shipping_row_update
from common.chunks import chunks
from common.errors import ValidationFailed
from common.leases import ClaimLost, Heartbeat, claim_token_new, lease_until
from common.sweeping import sweep_batch_mark
from common.tasks import task_enqueue_on_commit
from orders.models import Shipment

log = logging.getLogger(__name__)
RUN_TASK = "backoffice.tasks.bulk_job_run_task"
WRITE_BACK_RETRY = timedelta(seconds=60)
WAIT_POLL_SECONDS = 0.2


@dataclass(frozen=True)
class Source:
    """Where rows come from: a worksheet, or an uploaded file's cells."""

    spreadsheet_id: str = ""
    worksheet_name: str = ""
    file_name: str = ""
    file_values: list[list[str]] = field(default_factory=list)

    @classmethod
    def upload(cls, name: str, content: bytes) -> "Source":
        return cls(file_name=name, file_values=file_values(name, content))

    @classmethod
    def carried(cls, name: object, values_json: str) -> "Source":
        """An upload's name and cells carried through the review's form: checked again,
        since a form can be sent with anything in it."""
        try:
            values = json.loads(values_json)
        except ValueError as exc:
            raise ValidationFailed.single(
                FILE_FIELD, "Invalid", "The file's cells are malformed."
            ) from exc
        return cls(file_name=file_name_check(name), file_values=file_values_check(values))

    def table(self) -> Table:
        if self.file_name:
            return file_table(self.file_values)
        return sheet_read(spreadsheet_id=self.spreadsheet_id, worksheet_name=self.worksheet_name)


class Assessed(Protocol):
    """A row as a tool's assessment left it: queued for the worker, or recorded at once with
    ``status`` and ``reason`` as its message (skipped, unknown, refused)."""

    @property
    def row(self) -> SheetRow: ...

    @property
    def shipment(self) -> Shipment | None: ...

    @property
    def queued(self) -> bool: ...

    @property
    def reason(self) -> str: ...

    @property
    def status(self) -> str: ...


class JobRunning(Exception):
    """The sheet has a job that is not done yet: ``job``, which goes on (no second one)."""

    def __init__(self, job: BulkJob) -> None:
        super().__init__(f"Job {job.id} is still running over this worksheet.")
        self.job = job


def sheet_job_running(source: "Source") -> BulkJob | None:
    """The worksheet's job that is not done yet (None for an uploaded file: each is its own)."""
    if not source.spreadsheet_id:
        return None
    return (
        BulkJob.objects.filter(
            spreadsheet_id=source.spreadsheet_id, worksheet_name=source.worksheet_name
        )
        .exclude(status=JobStatus.DONE)
        .first()
    )


def sheet_job_check(source: "Source") -> None:
    """Raise ``JobRunning`` when the worksheet has a job not done yet."""
    running = sheet_job_running(source)
    if running is not None:
        raise JobRunning(running)


@transaction.atomic
def bulk_job_create(
    *,
    kind: str,
    user: Any,
    source: Source,
    table: Table,
    rows: Sequence[Assessed],
    lab: str = "",
    cancel_option: str = "",
    shipping_method: str = "",
    carrier_alias: str = "",
    queue: bool = True,
) -> BulkJob:
    """A job over ``rows``: the queued ones pending for a worker (queued once committed), the
    others with their outcome already, for the worker to write back. Raises ``JobRunning``
    when the worksheet has a job not done yet (two submits at once make one job: the
    database's constraint decides)."""
    now = timezone.now()
    sheet_job_check(source)
    try:
        with transaction.atomic():
            job = BulkJob.objects.create(
                kind=kind,
                created_by=user,
                spreadsheet_id=source.spreadsheet_id,
                worksheet_name=source.worksheet_name,
                file_name=source.file_name,
                file_values=source.file_values if source.file_name else None,
                header_row=table.header_row,
                columns=result_columns(table),
                lab=lab,
                cancel_option=cancel_option
                or BulkJob._meta.get_field("cancel_option").get_default(),
                shipping_method=shipping_method,
                carrier_alias=carrier_alias,
                due_at=timezone.now(),
                queued_rows=sum(1 for a in rows if a.queued),
            )
    except IntegrityError:
        sheet_job_check(source)  # the other submit's job
        raise
    BulkJobRow.objects.bulk_create(
        [
            BulkJobRow(
                job=job,
                row_index=a.row.row_index,
                lab_order_text=a.row.lab_order_text[:200],
                lab_order_id=a.shipment.id if a.shipment is not None else a.row.lab_order_id or 0,
                labs=list(a.row.labs),
                cancel_option=a.row.cancel_option,
                status=RowStatus.PENDING if a.queued else a.status,
                message="" if a.queued else a.reason,
                last_activity=None if a.queued else now,
            )
            for a in rows
        ]
    )
    if queue:
        task_enqueue_on_commit(RUN_TASK, job.id)
    return job


# --- running ----------------------------------------------------------------------------------


def _claim(job_id: int) -> int | None:
    """Claim the job for this worker (a new lease); the claim's token, or None when it is done
    or another worker holds it."""
    now = timezone.now()
    token = claim_token_new()
    claimed = (
        BulkJob.objects.filter(id=job_id)
        .exclude(status=JobStatus.DONE)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(status=JobStatus.RUNNING, claimed_until=lease_until(now), claim_token=token)
    )
    return token if claimed else None


def bulk_job_run(*, job_id: int) -> bool:
    """Do the job's pending rows (when it can be claimed); True once it is done.

    The claim is renewed by a heartbeat while the rows run; once a renewal finds it taken over
    (this worker was presumed dead), no further row is started and nothing more is recorded:
    the worker that holds it goes on."""
    token = _claim(job_id)
    if token is None:
        return False
    held = BulkJob.objects.filter(id=job_id, claim_token=token)

    def renew() -> bool:
        return bool(held.update(claimed_until=lease_until()))

    try:
        with Heartbeat(renew, name=f"bulk job {job_id}") as heartbeat:
            return _rows_run(BulkJob.objects.get(id=job_id), token, heartbeat)
    except ClaimLost:
        log.warning("job %s: claim lost; another worker carries on", job_id)
        return False


def _rows_run(job: BulkJob, token: int, heartbeat: Heartbeat) -> bool:
    flushed_at = time.monotonic()
    unwritten = 0
    for row in list(job.rows.filter(status=RowStatus.PENDING)):
        heartbeat.check()
        outcome = row_process(job, row)
        recorded = BulkJobRow.objects.filter(
            id=row.id, status=RowStatus.PENDING, job__claim_token=token
        ).update(
            status=RowStatus.SUCCEEDED if outcome.successful else RowStatus.FAILED,
            message=outcome.message,
            new_lab_order_id=outcome.new_shipment_id,
            last_activity=timezone.now(),
        )
        if not recorded and not BulkJob.objects.filter(id=job.id, claim_token=token).exists():
            raise ClaimLost(f"bulk job {job.id}: claim lost")
        unwritten += 1
        if (
            unwritten >= settings.BULK_WRITE_BACK_ROWS
            or time.monotonic() - flushed_at >= settings.BULK_WRITE_BACK_SECONDS
        ):
            job_write_back(job)
            flushed_at, unwritten = time.monotonic(), 0
    heartbeat.check()
    written = job_write_back(job)
    now = timezone.now()
    held = BulkJob.objects.filter(id=job.id, claim_token=token)
    if not written:
        held.update(claimed_until=None, claim_token=None, due_at=now + WRITE_BACK_RETRY)
        return False
    return bool(
        held.update(
            status=JobStatus.DONE,
            finished_at=now,
            claimed_until=None,
            claim_token=None,
            due_at=None,
        )
    )


def row_process(job: BulkJob, row: BulkJobRow) -> RowOutcome:
    if job.kind == JobKind.SHIPPING:
        return _shipping_row(job, row)
    return row_resubmit(job=job, row=row)


def _shipping_row(job: BulkJob, row: BulkJobRow) -> RowOutcome:
    return shipping_row_update(
        shipment_id=row.lab_order_id,
        shipping_method=job.shipping_method,
        carrier_alias=job.carrier_alias,
    )


def job_rows_wait(*, job_id: int, seconds: float) -> list[BulkJobRow]:
    """The job's rows once none is pending, or as they stand after ``seconds`` (a worker
    does them meanwhile)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not BulkJobRow.objects.filter(job_id=job_id, status=RowStatus.PENDING).exists():
            break
        time.sleep(WAIT_POLL_SECONDS)
    return list(BulkJobRow.objects.filter(job_id=job_id).order_by("row_index"))


# --- results ------------------------------------------------------------------------------------


def row_cells(
    job: BulkJob, rows: QuerySet[BulkJobRow] | list[BulkJobRow]
) -> dict[tuple[int, int], str]:
    """The cells the rows' results write ((sheet row, column) → text), headers included for
    columns the sheet lacked."""
    columns = job.columns
    cells: dict[tuple[int, int], str] = {}
    for title, index in columns.items():
        cells[(job.header_row, int(index))] = title
    for row in rows:
        cells[(row.row_index, int(columns[MESSAGE]))] = row.message
        cells[(row.row_index, int(columns[LAST_ACTIVITY]))] = (
            row.last_activity.isoformat() if row.last_activity else ""
        )
        if job.kind == JobKind.RESUBMISSION and row.new_lab_order_id is not None:
            cells[(row.row_index, int(columns[NEW_LAB_ORDER_ID]))] = str(row.new_lab_order_id)
    return cells


def job_write_back(job: BulkJob) -> bool:
    """Write the results not yet written to the sheet, in one request; False when the sheet
    refused (the rows stay unwritten, for the next run)."""
    rows = list(job.rows.filter(written_back=False).exclude(status=RowStatus.PENDING))
    if not rows:
        return True
    if not job.file_name:
        try:
            sheet_cells_write(
                spreadsheet_id=job.spreadsheet_id,
                worksheet_name=job.worksheet_name,
                cells=row_cells(job, rows),
            )
        except ValidationFailed as exc:
            log.warning("job %s: results not written back: %s", job.id, exc)
            BulkJob.objects.filter(id=job.id).update(write_back_error=str(exc))
            return False
    for piece in chunks([r.id for r in rows]):
        BulkJobRow.objects.filter(id__in=piece).update(written_back=True)
    BulkJob.objects.filter(id=job.id).exclude(write_back_error="").update(write_back_error="")
    return True


def job_file(job: BulkJob) -> tuple[bytes, str, str]:
    """An uploaded job's file with its results: bytes, content type, file name."""
    assert job.file_name
    content, content_type = file_with_results(
        name=job.file_name,
        values=job.file_values or [],
        cells=row_cells(job, list(job.rows.exclude(status=RowStatus.PENDING))),
    )
    # A header's value: only printable characters, no quote (names kept before they were
    # checked at upload may have anything).
    name = "".join(c for c in job.file_name if c.isprintable() and c not in '"\\')
    return content, content_type, f"results-{name}"


def jobs_due() -> QuerySet[BulkJob]:
    now = timezone.now()
    return (
        BulkJob.objects.exclude(status=JobStatus.DONE)
        .filter(due_at__lte=now)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
    )


def bulk_jobs_sweep() -> list[int]:
    """The ids of unfinished jobs no worker holds (a killed worker's, a lost message's)."""
    return sweep_batch_mark(
        jobs_due(),
        swept_field="swept_at",
        due_field="due_at",
        claim_field="claimed_until",
        batch=50,
    )
