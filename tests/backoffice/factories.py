"""Bulk jobs and their rows as the tools make them.

``BulkJobFactory`` makes a resubmission job over an uploaded file (no sheet to write back to)
by a staff user, queued; ``BulkJobRowFactory`` a pending row of it naming a shipment (pass
``lab_order_id``), or, with ``done=True``, one already done and written back.
"""

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from backoffice.models import BulkJob, BulkJobRow, JobKind, JobStatus, RowStatus
from orders.models import CancelOption
from tests.staff.factories import StaffUserFactory


class BulkJobFactory(DjangoModelFactory[BulkJob]):
    class Meta:
        model = BulkJob

    class Params:
        shipping = factory.Trait(
            kind=JobKind.SHIPPING, carrier_alias="DHL", shipping_method="Express"
        )
        finished = factory.Trait(
            status=JobStatus.DONE, finished_at=factory.LazyFunction(timezone.now), due_at=None
        )

    kind = JobKind.RESUBMISSION
    created_by = factory.SubFactory(StaffUserFactory)
    file_name = "rows.csv"
    file_values = factory.LazyFunction(lambda: [["Lab Order Id"]])
    header_row = 1
    columns = factory.LazyFunction(
        lambda: {"Message": 1, "New Lab Order Id": 2, "Last Activity": 3}
    )
    cancel_option = CancelOption.CANCEL_ORIGINAL
    status = JobStatus.QUEUED
    due_at = factory.LazyFunction(timezone.now)


class BulkJobRowFactory(DjangoModelFactory[BulkJobRow]):
    class Meta:
        model = BulkJobRow

    class Params:
        done = factory.Trait(
            status=RowStatus.SUCCEEDED,
            message="Resubmitted.",
            last_activity=factory.LazyFunction(timezone.now),
            written_back=True,
        )

    job = factory.SubFactory(BulkJobFactory)
    row_index = factory.Sequence(lambda n: n + 2)
    lab_order_text = factory.LazyAttribute(lambda row: f"shp_{row.lab_order_id}")
    lab_order_id = 0
    status = RowStatus.PENDING
