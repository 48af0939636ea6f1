"""Bulk resubmission, the rows' side: what a sheet's rows would do, and each row done by one
call to the orders service that resubmits a shipment (``orders.resubmission``), which does the
order's work (plan, cancel the original, record, submit, move the order on)."""

from collections.abc import Sequence
from dataclasses import dataclass

from backoffice.models import BulkJob, BulkJobRow, JobKind, JobStatus, RowStatus
from backoffice.rows import RowOutcome, SheetRow
from orders.models import Shipment
from orders.resubmission import shipment_resubmit, shipments_standing


@dataclass(frozen=True)
class RowAssessment:
    """What submit would do with a row: ``reason`` says why not when it is not resubmittable;
    ``warning`` is a problem submit would meet (the chosen lab cannot make the products)."""

    row: SheetRow
    resubmittable: bool
    reason: str = ""
    warning: str = ""
    shipment: Shipment | None = None

    @property
    def queued(self) -> bool:
        return self.resubmittable

    @property
    def status(self) -> str:
        return RowStatus.SKIPPED


def rows_assess(*, rows: Sequence[SheetRow], lab: str = "") -> list[RowAssessment]:
    """Each row's fate, read in a few queries whatever the number of rows."""
    named = [r.lab_order_id for r in rows if r.lab_order_id is not None]
    standings = shipments_standing(shipment_ids=named, lab=lab)
    queued = set(
        BulkJobRow.objects.filter(
            lab_order_id__in=named,
            status=RowStatus.PENDING,
            job__kind=JobKind.RESUBMISSION,
        )
        .exclude(job__status=JobStatus.DONE)
        .values_list("lab_order_id", flat=True)
    )
    answers = []
    for row in rows:
        standing = standings.get(row.lab_order_id) if row.lab_order_id is not None else None
        reason = ""
        if row.skip_row:
            reason = "Skipped (Skip Row)."
        elif not row.lab_order_text:
            reason = "No Lab Order Id."
        elif standing is None:
            reason = f"No shipment '{row.lab_order_text}'."
        elif row.new_lab_order_id is not None or standing.resubmitted:
            reason = "Already resubmitted."
        elif standing.shipped:
            reason = "The shipment has been shipped."
        elif row.lab_order_id in queued:
            reason = "Already queued for resubmission."
        warning = ""
        if not reason and standing is not None and standing.missing:
            warning = f"Lab {lab} cannot make {', '.join(standing.missing)}."
        shipment = standing.shipment if standing is not None else None
        answers.append(RowAssessment(row, not reason, reason, warning, shipment))
    return answers


def row_resubmit(*, job: BulkJob, row: BulkJobRow) -> RowOutcome:
    """Resubmit the row's shipment at the job's lab, else at the row's allowed labs (any
    active lab when it names none), with the row's cancel option, else the job's."""
    done = shipment_resubmit(
        shipment_id=row.lab_order_id,
        labs=[job.lab] if job.lab else list(row.labs),
        cancel_option=row.cancel_option or job.cancel_option,
        shipping_method=job.shipping_method,
    )
    return RowOutcome(done.successful, done.message, done.new_shipment_id)
