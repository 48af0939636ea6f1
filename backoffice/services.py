"""What the bulk endpoints and the admin tools do: read a sheet, say what submit would do,
queue the job."""

from dataclasses import dataclass
from typing import Any

from backoffice.jobs import Source, bulk_job_create, sheet_job_check
from backoffice.models import BulkJob, JobKind
from backoffice.resubmission import RowAssessment, rows_assess
from backoffice.rows import SheetRow, rows_parse
from backoffice.sheets import SPREADSHEET_ID, Table
from backoffice.shipping import ShippingAssessment, shipping_rows_assess
from common.errors import ValidationFailed
from labs.models import Lab
from orders.models import CancelOption
from orders.resubmission import NO_ALLOWED_LAB


@dataclass(frozen=True)
class Review:
    """What submit would do with a sheet: ``sheet_row_count`` rows name a lab order (skipped
    and unknown ones included); ``resubmittable`` are those it would queue."""

    is_ok: bool
    statement: str
    sheet_row_count: int
    assessments: list[RowAssessment]

    @property
    def resubmittable(self) -> list[RowAssessment]:
        return [a for a in self.assessments if a.queued]


def lab_check(lab: str, field: str = "lab") -> str:
    """The lab code as stored (any letter case given), or a failure on ``field``."""
    if not lab:
        return ""
    found = Lab.objects.filter(code__iexact=lab.strip(), is_active=True).first()
    if found is None:
        raise ValidationFailed.single(field, "UnknownLab", f"There is no active lab '{lab}'.")
    return found.code


def cancel_option_check(option: str, field: str = "cancelOption") -> str:
    if not option:
        return CancelOption.CANCEL_ORIGINAL
    for value in CancelOption.values:
        if value.lower() == option.strip().lower():
            return value
    choices = ", ".join(CancelOption.values)
    raise ValidationFailed.single(field, "Invalid", f"Must be one of {choices}.")


def sheet_rows(source: Source) -> tuple[Table, list[SheetRow]]:
    table = source.table()
    return table, rows_parse(table)


def resubmission_review(
    *,
    source: Source,
    lab: str = "",
    shipping_method: str = "",
    cancel_option: str = CancelOption.CANCEL_ORIGINAL,
) -> tuple[Table, Review]:
    """What submit would do, changing nothing: the very assessment submit makes its job of."""
    table, rows = sheet_rows(source)
    assessments = rows_assess(
        rows=rows, lab=lab, shipping_method=shipping_method, cancel_option=cancel_option
    )
    named = [a for a in assessments if a.row.lab_order_text]
    ok = [a for a in assessments if a.queued]
    # Rows no allowed lab can make: the sheet or the lab chosen needs a look (isOk false).
    unmade = [
        a for a in assessments if a.shipment is not None and a.reason.startswith(NO_ALLOWED_LAB)
    ]
    if not ok:
        statement = "No row of the sheet can be resubmitted."
    else:
        where = f"lab {lab}" if lab else "the cheapest allowed lab"
        statement = f"{len(ok)} of {len(named)} lab orders will be resubmitted to {where}."
    if unmade:
        statement += " " + " ".join(f"Row {a.row.row_index}: {a.reason}" for a in unmade)
    return table, Review(bool(ok) and not unmade, statement, len(named), assessments)


def resubmission_submit(
    *,
    user: Any,
    source: Source,
    lab: str = "",
    cancel_option: str = CancelOption.CANCEL_ORIGINAL,
    shipping_method: str = "",
) -> BulkJob:
    """Queue a job over the sheet's data rows: the resubmittable ones for the worker, the
    others recorded at once with why not (every row gets its Message). No resubmittable row
    is a failure on ``spreadsheetId``, and no job. ``JobRunning`` when the worksheet's last job
    is not done yet."""
    sheet_job_check(source)
    table, review = resubmission_review(
        source=source, lab=lab, shipping_method=shipping_method, cancel_option=cancel_option
    )
    if not review.resubmittable:
        sheet_job_check(source)  # its rows were queued by a submit that just made the job
        raise ValidationFailed.single(
            SPREADSHEET_ID, "NothingToResubmit", f"{review.statement} Nothing was queued."
        )
    return bulk_job_create(
        kind=JobKind.RESUBMISSION,
        user=user,
        source=source,
        table=table,
        rows=review.assessments,
        lab=lab,
        cancel_option=cancel_option,
        shipping_method=shipping_method,
    )


def shipping_review(source: Source) -> tuple[Table, list[ShippingAssessment]]:
    """Each row naming a lab order, with what submit would do with it; changes nothing."""
    table, rows = sheet_rows(source)
    return table, shipping_rows_assess(rows)


def shipping_job_create(
    *, user: Any, source: Source, shipping_method: str, carrier_alias: str
) -> BulkJob:
    """Queue a job over the sheet's rows: those at a Site Flow lab for the worker, the others
    recorded at once with why not. ``JobRunning`` when the worksheet's last job is not done."""
    sheet_job_check(source)
    table, assessments = shipping_review(source)
    return bulk_job_create(
        kind=JobKind.SHIPPING,
        user=user,
        source=source,
        table=table,
        rows=assessments,
        shipping_method=shipping_method,
        carrier_alias=carrier_alias,
    )
