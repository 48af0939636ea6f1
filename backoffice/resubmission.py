"""Bulk resubmission, the rows' side: one assessment of a sheet's rows, shared by the review
and the job (so the review promises exactly what submit queues), and each queued row done by
one call to the orders service that resubmits a shipment (``orders.resubmission``), which does
the order's work (plan, cancel the original, record, submit, move the order on)."""

from collections.abc import Sequence
from dataclasses import dataclass

from backoffice.models import BulkJob, BulkJobRow, JobKind, JobStatus, RowStatus
from backoffice.rows import RowOutcome, SheetRow
from backoffice.selectors import rows_shipments
from common.chunks import chunks
from common.ids import PREFIXES, format_id
from orders.models import CancelOption, Shipment
from orders.resubmission import (
    ALREADY_SHIPPED,
    ORDER_CANCELLED,
    ResubmissionOffer,
    shipment_resubmission_offer,
    shipment_resubmit,
    shipment_resubmittable,
    shipments_standing,
)

SKIPPED = "Skipped (Skip Row)."
NO_LAB_ORDER = "No Lab Order Id: nothing to resubmit."


@dataclass(frozen=True)
class RowAssessment:
    """What submit does with a row: queued for the worker (with the lab it would go to and its
    cost, ``offer``), or recorded at once with ``status`` and ``reason`` as its message."""

    row: SheetRow
    shipment: Shipment | None = None
    reason: str = ""
    status: str = RowStatus.PENDING
    offer: ResubmissionOffer | None = None

    @property
    def queued(self) -> bool:
        return not self.reason


def row_cancel_option(row_option: str, job_option: str) -> str:
    """The cancel option a row is resubmitted with: the row's own (``Cancel Option``, any
    letter case), else the job's."""
    given = row_option.strip().lower()
    return next((v for v in CancelOption.values if v.lower() == given), job_option)


def rows_assess(
    *,
    rows: Sequence[SheetRow],
    lab: str = "",
    shipping_method: str = "",
    cancel_option: str = CancelOption.CANCEL_ORIGINAL,
) -> list[RowAssessment]:
    """Every data row's fate: the review shows it and the job is made of it (``cancel_option``:
    the job's, each row's own first). A resubmittable row carries its plan (the very plan the
    job then makes first); a shipped one is resubmittable, as a reprint, with ``KeepOriginal``
    alone."""
    found = rows_shipments([row for row in rows if not row.skip_row])
    shipments = {s.id: s for s in found.values() if isinstance(s, Shipment)}
    ids = list(shipments)
    standings = shipments_standing(shipments=shipments.values())
    queued_in = {
        shipment_id: job_id
        for piece in chunks(ids)
        for shipment_id, job_id in BulkJobRow.objects.filter(
            lab_order_id__in=piece, status=RowStatus.PENDING, job__kind=JobKind.RESUBMISSION
        )
        .exclude(job__status=JobStatus.DONE)
        .values_list("lab_order_id", "job_id")
    }
    answers = []
    for row in rows:
        if row.skip_row:
            answers.append(RowAssessment(row, reason=SKIPPED, status=RowStatus.SKIPPED))
            continue
        if not row.lab_order_text:
            answers.append(RowAssessment(row, reason=NO_LAB_ORDER, status=RowStatus.SKIPPED))
            continue
        shipment = found[row.row_index]
        if isinstance(shipment, str):
            answers.append(RowAssessment(row, reason=shipment, status=RowStatus.FAILED))
            continue
        standing = standings[shipment.id]
        new_id = standing.resubmitted_as or row.new_lab_order_id
        reason, status = "", RowStatus.SKIPPED
        if new_id is not None:
            reason = f"Already resubmitted as {format_id(PREFIXES['shipment'], new_id)}."
        elif standing.order_cancelled:
            reason, status = ORDER_CANCELLED, RowStatus.FAILED
        elif standing.shipped and not shipment_resubmittable(
            shipment=shipment, cancel_option=row_cancel_option(row.cancel_option, cancel_option)
        ):
            reason = ALREADY_SHIPPED
        elif shipment.id in queued_in:
            reason = f"Already queued for resubmission (job {queued_in[shipment.id]})."
        if reason:
            answers.append(RowAssessment(row, shipment, reason, status))
            continue
        offer = shipment_resubmission_offer(
            shipment=shipment,
            labs=[lab] if lab else list(row.labs),
            shipping_method=shipping_method,
        )
        if isinstance(offer, str):
            answers.append(RowAssessment(row, shipment, offer, RowStatus.FAILED))
        else:
            answers.append(RowAssessment(row, shipment, offer=offer))
    return answers


def row_resubmit(*, job: BulkJob, row: BulkJobRow) -> RowOutcome:
    """Resubmit (or reprint) the row's shipment at the job's lab, else at the row's allowed
    labs (any active lab when it names none), with the row's cancel option, else the job's."""
    done = shipment_resubmit(
        shipment_id=row.lab_order_id,
        labs=[job.lab] if job.lab else list(row.labs),
        cancel_option=row_cancel_option(row.cancel_option, job.cancel_option),
        shipping_method=job.shipping_method,
    )
    return RowOutcome(done.successful, done.message, done.new_shipment_id)
