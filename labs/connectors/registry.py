"""Which connector serves a lab: Sandbox always gets the simulator."""

from collections.abc import Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from labs.capabilities import CAPABILITIES
from labs.connectors.base import LabConnector, LabOrder, LabProgress, LabResult
from labs.connectors.simulator import SimulatorConnector
from labs.models import Connector, Lab

SITEFLOW_MISSING = "Site Flow connector is not configured in this deployment."


class UnavailableConnector(LabConnector):
    """A connector this deployment does not have (Site Flow): every operation is refused with
    a clear message and progress never advances, so a submission fails through the usual
    retry and ``SubmissionFailed`` path and actions answer per shipment, instead of crashing."""

    def __init__(self, *, lab_code: str, capabilities: frozenset[str], message: str) -> None:
        super().__init__(lab_code=lab_code, capabilities=capabilities)
        self.message = message

    def _refused(self) -> LabResult:
        return LabResult(False, message=self.message)

    def submit(self, order: LabOrder) -> LabResult:
        return self._refused()

    def progress(self, order: LabOrder, *, submitted_at: datetime, now: datetime) -> LabProgress:
        return LabProgress(next_check_at=now + timedelta(hours=1))

    def cancel(self, order: LabOrder) -> LabResult:
        return self._refused()

    def hold(self, order: LabOrder) -> LabResult:
        return self._refused()

    def unhold(self, order: LabOrder) -> LabResult:
        return self._refused()

    def update_address(self, order: LabOrder, recipient: Mapping[str, Any]) -> LabResult:
        return self._refused()

    def update_shipping_method(self, order: LabOrder, shipping_method: str) -> LabResult:
        return self._refused()


def connector_for(*, lab_code: str, sandbox: bool) -> LabConnector:
    lab = Lab.objects.filter(code=lab_code).first()
    capabilities = frozenset(lab.capabilities if lab is not None else CAPABILITIES)
    failure_share = Decimal(lab.simulator_failure_share) if lab is not None else Decimal(0)
    if sandbox or lab is None or lab.connector == Connector.SIMULATOR:
        return SimulatorConnector(
            lab_code=lab_code, capabilities=capabilities, failure_share=failure_share
        )
    message = (
        SITEFLOW_MISSING
        if lab.connector == Connector.SITEFLOW
        else f"Lab {lab_code} uses connector '{lab.connector}', which is not available here."
    )
    return UnavailableConnector(lab_code=lab_code, capabilities=capabilities, message=message)
