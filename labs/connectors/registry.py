"""Which connector serves a lab: Sandbox always gets the simulator."""

from decimal import Decimal

from labs.connectors.base import CAPABILITIES, LabConnector
from labs.connectors.simulator import SimulatorConnector
from labs.models import Lab


def connector_for(*, lab_code: str, sandbox: bool) -> LabConnector:
    lab = Lab.objects.filter(code=lab_code).first()
    capabilities = frozenset(lab.capabilities if lab is not None else CAPABILITIES)
    failure_share = Decimal(lab.simulator_failure_share) if lab is not None else Decimal(0)
    if sandbox or lab is None or lab.connector == "simulator":
        return SimulatorConnector(
            lab_code=lab_code, capabilities=capabilities, failure_share=failure_share
        )
    raise NotImplementedError(
        f"Lab {lab_code} uses connector '{lab.connector}', which is not available here."
    )
