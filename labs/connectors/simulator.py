"""The built-in lab simulator: serves Sandbox always, and Live labs configured for it.

It produces half-way through ``LAB_SIMULATOR_SECONDS`` after submission and ships at the end,
with the carrier planned for the shipment, a tracking number and URL. Accepted submissions are
recorded (``labs.SimulatedLabOrder``), one per shipment id. A lab's ``simulator_failure_share``
makes that share of submissions fail; its ``simulator_cancel_share`` and
``simulator_error_share`` make that share of accepted lab orders end on the lab's side when
production would start (cancelled, or failed), as a real site may. Each is chosen
deterministically from the shipment id so tests can rely on it.

The simulator makes Sandbox orders. A Live shipment reaches it only under the development
setting ``SIMULATOR_PRODUCES_LIVE`` (``registry.simulator_serves``); its tracking then says
"simulated" (number ``SIMULATED-...``, URL under ``/simulated/``): no parcel left any lab.

A lab order on hold (``LabOrder.held_since``) stops where it is: it is not produced or shipped
until released, and its timeline then resumes, later by the time it spent on hold
(``held_seconds`` plus the current hold).
"""

import hashlib
from collections.abc import Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings

from common.db import row_insert_or_count
from labs.connectors.base import (
    LAB_CANCELLED,
    LAB_ERROR,
    LabConnector,
    LabOrder,
    LabProgress,
    LabResult,
)
from labs.models import SimulatedLabOrder

# Only for a lab order that does not say which carrier was planned for it.
_CARRIERS = {
    "Budget": ("Royal Mail", "2nd Class"),
    "Standard": ("Royal Mail", "Tracked 48"),
    "StandardPlus": ("DPD", "Next Day"),
    "Express": ("DHL", "Express Worldwide"),
    "Overnight": ("FedEx", "Priority Overnight"),
}


SIMULATED_TRACKING_PREFIX = "SIMULATED-"


def _fraction(text: str) -> Decimal:
    digest = hashlib.sha256(text.encode()).digest()
    return Decimal(int.from_bytes(digest[:4], "big") % 10_000) / Decimal(10_000)


class SimulatorConnector(LabConnector):
    simulated = True

    def __init__(
        self,
        *,
        lab_code: str,
        capabilities: frozenset[str],
        failure_share: Decimal = Decimal(0),
        cancel_share: Decimal = Decimal(0),
        error_share: Decimal = Decimal(0),
        live: bool = False,
    ) -> None:
        super().__init__(lab_code=lab_code, capabilities=capabilities)
        self.failure_share = failure_share
        self.cancel_share = cancel_share
        self.error_share = error_share
        self.live = live

    def _ending(self, shipment_id: str) -> LabProgress | None:
        """The lab's own end of this lab order (cancel or error mode), or None."""
        if _fraction(f"cancel:{shipment_id}") < self.cancel_share:
            return LabProgress(
                ended=LAB_CANCELLED, message=f"Simulated cancellation by lab {self.lab_code}."
            )
        if _fraction(f"error:{shipment_id}") < self.error_share:
            return LabProgress(
                ended=LAB_ERROR, message=f"Simulated production failure at lab {self.lab_code}."
            )
        return None

    def submit(self, order: LabOrder) -> LabResult:
        """Accept (or refuse, by ``failure_share``) the shipment; idempotent on its id: the
        accepted lab order is recorded once and a resubmission gets the same reference."""
        if _fraction(order.shipment_id) < self.failure_share:
            return LabResult(False, message=f"Simulated rejection by lab {self.lab_code}.")
        reference = f"SIM-{self.lab_code.upper()}-{order.shipment_id.split('_')[-1]}"
        # The first accepted submission of the shipment recorded, a later one counted on it.
        recorded = row_insert_or_count(
            SimulatedLabOrder(
                shipment_id=order.shipment_id, lab_code=self.lab_code, reference=reference
            ),
            key="shipment_id",
            counter="submissions",
            answer="reference",
        )
        return LabResult(True, reference=recorded)

    def find(self, order: LabOrder) -> LabResult | None:
        """The simulated lab order recorded for the shipment, if a submission was accepted."""
        reference = (
            SimulatedLabOrder.objects.filter(shipment_id=order.shipment_id)
            .values_list("reference", flat=True)
            .first()
        )
        return None if reference is None else LabResult(True, reference=reference)

    def progress(self, order: LabOrder, *, submitted_at: datetime, now: datetime) -> LabProgress:
        seconds = float(settings.LAB_SIMULATOR_SECONDS)
        start = submitted_at + timedelta(seconds=order.held_seconds)
        produced = start + timedelta(seconds=seconds / 2)
        shipped = start + timedelta(seconds=seconds)
        held = order.held_since is not None
        # On hold the lab's clock stands still at the hold; it is asked again a while later.
        clock = min(now, order.held_since) if order.held_since is not None else now
        recheck = now + timedelta(seconds=max(seconds / 2, 1.0))
        if clock < produced:
            return LabProgress(next_check_at=recheck if held else produced)
        ending = self._ending(order.shipment_id)
        if ending is not None:
            return ending
        if clock < shipped:
            return LabProgress(
                in_production_at=produced, next_check_at=recheck if held else shipped
            )
        carrier, service = (order.carrier_name, order.carrier_service)
        if not carrier:
            carrier, service = _CARRIERS.get(order.shipping_method, ("Royal Mail", "Tracked 48"))
        number = "SIM" + hashlib.sha256(order.shipment_id.encode()).hexdigest()[:12].upper()
        url = f"https://tracking.example.com/{number}"
        if self.live:
            number = SIMULATED_TRACKING_PREFIX + number
            url = f"https://tracking.example.com/simulated/{number}"
        return LabProgress(
            in_production_at=produced,
            shipped_at=shipped,
            carrier_name=carrier,
            carrier_service=service,
            tracking_number=number,
            tracking_url=url,
        )

    def operation_done(
        self, order: LabOrder, operation: str, change: Mapping[str, Any]
    ) -> bool | None:
        """Never: the simulator keeps no state of its own beyond submissions (what an operation
        does is what the service records), so one whose answer was never recorded is undone."""
        return False

    def _simple(self, capability: str, order: LabOrder) -> LabResult:
        if not self.supports(capability):
            return self._unsupported(capability)
        return LabResult(True, reference=order.reference)

    def cancel(self, order: LabOrder) -> LabResult:
        return self._simple("cancel", order)

    def hold(self, order: LabOrder) -> LabResult:
        return self._simple("hold", order)

    def unhold(self, order: LabOrder) -> LabResult:
        return self._simple("unhold", order)

    def update_address(self, order: LabOrder, recipient: Mapping[str, Any]) -> LabResult:
        return self._simple("updateAddress", order)

    def update_shipping_method(self, order: LabOrder, shipping_method: str) -> LabResult:
        return self._simple("updateShippingMethod", order)
