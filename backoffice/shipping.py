"""The Site Flow bulk shipping update: which rows it acts on (review and job share this one
assessment) and one row's update through the connector."""

from collections.abc import Sequence
from dataclasses import dataclass

from backoffice.models import RowStatus
from backoffice.rows import RowOutcome, SheetRow
from backoffice.selectors import rows_shipments
from labs.models import Connector, Lab
from orders.models import Shipment, ShipmentStatus
from orders.shipments import shipment_update_carrier

SKIPPED = "Skipped (Skip Row)."


@dataclass(frozen=True)
class ShippingAssessment:
    """What submit does with a row: ``reason`` (with ``status``) when it is not queued."""

    row: SheetRow
    shipment: Shipment | None
    reason: str = ""
    status: str = RowStatus.PENDING

    @property
    def queued(self) -> bool:
        return not self.reason


def _refusal(shipment: Shipment, siteflow_labs: set[str]) -> str:
    if shipment.order.environment.is_sandbox or shipment.lab_code not in siteflow_labs:
        return f"Lab {shipment.lab_code} is not a Site Flow lab."
    if shipment.status == ShipmentStatus.SHIPPED:
        return "The shipment has been shipped."
    if shipment.status == ShipmentStatus.CANCELLED:
        return "The shipment is cancelled."
    if shipment.submitted_at is None:
        return "The shipment is not at a lab yet."
    return ""


def shipping_rows_assess(rows: Sequence[SheetRow]) -> list[ShippingAssessment]:
    """Every row naming a lab order: queued when its shipment is at a Site Flow lab and not
    shipped or cancelled; else why not. Nothing is read row by row."""
    named = [row for row in rows if row.lab_order_text]
    shipments = rows_shipments([row for row in named if not row.skip_row])
    codes = {s.lab_code for s in shipments.values() if isinstance(s, Shipment)}
    siteflow_labs = set(
        Lab.objects.filter(code__in=codes, connector=Connector.SITEFLOW).values_list(
            "code", flat=True
        )
    )
    answers = []
    for row in named:
        if row.skip_row:
            answers.append(ShippingAssessment(row, None, SKIPPED, RowStatus.SKIPPED))
            continue
        found = shipments[row.row_index]
        if isinstance(found, str):
            answers.append(ShippingAssessment(row, None, found, RowStatus.FAILED))
            continue
        refusal = _refusal(found, siteflow_labs)
        answers.append(
            ShippingAssessment(
                row, found, refusal, RowStatus.FAILED if refusal else RowStatus.PENDING
            )
        )
    return answers


def shipping_row_update(
    *, shipment_id: int, shipping_method: str, carrier_alias: str
) -> RowOutcome:
    """Give the row's Site Flow lab order the carrier and method (checked again: the lab
    order may have shipped since the review)."""
    shipment = Shipment.objects.filter(id=shipment_id).first()
    if shipment is None:
        return RowOutcome(False, f"Unknown lab order shp_{shipment_id}.")
    result = shipment_update_carrier(
        shipment=shipment, shipping_method=shipping_method, carrier_alias=carrier_alias
    )
    if not result.successful:
        return RowOutcome(False, result.message)
    return RowOutcome(True, f"Carrier changed to {carrier_alias} ({shipping_method}).")
