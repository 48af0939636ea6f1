"""Which connector serves a lab: Sandbox always gets the simulator, a Live Site Flow lab the
Site Flow connector (when its base URL, token and secret are set). A Live lab left on the
simulator gets it only where the development setting ``SIMULATOR_PRODUCES_LIVE`` is on (its
shipments then say "simulated"); otherwise nothing is produced there."""

from collections.abc import Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings

from labs.capabilities import CAPABILITIES
from labs.connectors.base import LabConnector, LabOrder, LabProgress, LabResult
from labs.connectors.simulator import SimulatorConnector
from labs.connectors.siteflow import SiteflowConnector, SiteflowSettings
from labs.models import Connector, Lab, LabProduct


class UnavailableConnector(LabConnector):
    """A connector this lab cannot use (Site Flow settings missing): every operation is refused with
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


def simulator_serves(*, sandbox: bool) -> bool:
    """Whether the built-in simulator may make this environment's orders: Sandbox always,
    Live only under the development setting ``SIMULATOR_PRODUCES_LIVE``. Allocation gives Live
    work only to labs with a real connector when it may not."""
    return sandbox or bool(settings.SIMULATOR_PRODUCES_LIVE)


def connector_for(*, lab_code: str, sandbox: bool) -> LabConnector:
    return lab_connector(
        lab_code=lab_code, lab=Lab.objects.filter(code=lab_code).first(), sandbox=sandbox
    )


def lab_connector(*, lab_code: str, lab: Lab | None, sandbox: bool) -> LabConnector:
    """As ``connector_for``, from the lab row already read (None: no lab has that code)."""
    capabilities = frozenset(lab.capabilities if lab is not None else CAPABILITIES)
    if sandbox or lab is None or lab.connector == Connector.SIMULATOR:
        if not simulator_serves(sandbox=sandbox):
            message = (
                f"Lab {lab_code} has no connector configured for Live orders; the built-in "
                "simulator makes Sandbox orders only."
            )
            return UnavailableConnector(
                lab_code=lab_code, capabilities=capabilities, message=message
            )
        return SimulatorConnector(
            lab_code=lab_code,
            capabilities=capabilities,
            failure_share=Decimal(lab.simulator_failure_share) if lab else Decimal(0),
            cancel_share=Decimal(lab.simulator_cancel_share) if lab else Decimal(0),
            error_share=Decimal(lab.simulator_error_share) if lab else Decimal(0),
            live=not sandbox,
        )
    if lab.connector != Connector.SITEFLOW:
        message = f"Lab {lab_code} uses connector '{lab.connector}', which is not available here."
        return UnavailableConnector(lab_code=lab_code, capabilities=capabilities, message=message)
    missing = lab.siteflow_missing()
    if missing:
        listed = " and ".join(
            [", ".join(missing[:-1]), missing[-1]] if len(missing) > 1 else missing
        )
        message = f"Site Flow lab {lab_code} is missing its {listed}."
        return UnavailableConnector(lab_code=lab_code, capabilities=capabilities, message=message)
    product_codes: dict[str, str] = {}
    variant_codes: dict[str, dict[str, str]] = {}
    for sku, code, codes in LabProduct.objects.filter(lab=lab).values_list(
        "product__sku", "lab_sku", "variant_codes"
    ):
        if code:
            product_codes[sku] = code
        if codes:
            variant_codes[sku] = dict(codes)
    site = SiteflowSettings(
        base_url=lab.siteflow_base_url,
        token=lab.siteflow_token,
        secret=lab.siteflow_secret,
        destination=lab.siteflow_destination,
        carrier_aliases=dict(lab.siteflow_carrier_aliases or {}),
        product_codes=product_codes,
        variant_codes=variant_codes,
    )
    return SiteflowConnector(lab_code=lab_code, capabilities=capabilities, site=site)
