"""The interface every lab connector implements, over plain data (no ORM rows)."""

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class LabOrderItem:
    item_id: str
    sku: str
    copies: int
    attributes: Mapping[str, str]  # canonical: every attribute of the product, defaults filled
    files: Mapping[str, str]  # print area → print-ready file URL
    spine: Mapping[str, Any] | None = None  # a photobook's spine object as the order gave it


@dataclass(frozen=True)
class LabOrder:
    """What a lab needs to make and ship one shipment."""

    shipment_id: str
    order_id: str
    lab_code: str
    shipping_method: str
    recipient: Mapping[str, Any]
    items: tuple[LabOrderItem, ...]
    # Files that go in the parcel: the packing slip's URL ("" without one) and branding name
    # → URL (``postcard``, ``sticker_exterior_round``, ...).
    packing_slip: str = ""
    branding: Mapping[str, str] = field(default_factory=dict)
    reference: str = ""  # the lab's own order reference once submitted
    carrier_name: str = ""  # the carrier planned for the shipment, when known
    carrier_service: str = ""
    # The lab order's hold clock: on hold since, and seconds held before that. A real lab keeps
    # its own; the built-in simulator is told it (``simulator.py``). Never sent to a lab.
    held_since: datetime | None = field(default=None, metadata={"sent": False})
    held_seconds: float = field(default=0.0, metadata={"sent": False})


@dataclass(frozen=True)
class LabResult:
    """A lab's answer. An unsuccessful submission is tried again (up to ``LAB_SUBMIT_ATTEMPTS``)
    only when ``retryable``: the lab was unreachable or failed (a 5xx), not when it refused.
    ``unanswered``: an operation was sent but no answer came in time (a timeout, a connection
    lost after sending), or an answer that does not say (a 2xx without the lab order), so the
    lab may have done it; the caller asks it later (``LabConnector.operation_done``) rather
    than take it as refused."""

    successful: bool
    reference: str = ""
    message: str = ""
    retryable: bool = True
    unanswered: bool = False


# How a lab order can end on the lab's side (``LabProgress.ended``).
LAB_CANCELLED = "cancelled"
LAB_ERROR = "error"


@dataclass(frozen=True)
class LabProgress:
    """Where a submitted lab order stands; a due time says when to ask again. ``ended`` says
    the lab ended the lab order on its side (``LAB_CANCELLED`` or ``LAB_ERROR``, with the lab's
    ``message`` when it gave one): it is not asked again."""

    in_production_at: datetime | None = None
    shipped_at: datetime | None = None
    carrier_name: str = ""
    carrier_service: str = ""
    tracking_number: str = ""
    tracking_url: str = ""
    next_check_at: datetime | None = None
    ended: str = ""
    message: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


class LabConnector(ABC):
    """Submit, change and follow lab orders. Operations a lab lacks answer unsuccessfully.
    ``simulated``: no real lab is behind it (the built-in simulator)."""

    simulated = False

    def __init__(self, *, lab_code: str, capabilities: frozenset[str]) -> None:
        self.lab_code = lab_code
        self.capabilities = capabilities

    def supports(self, capability: str) -> bool:
        return capability in self.capabilities

    def _unsupported(self, capability: str) -> LabResult:
        return LabResult(False, message=f"Lab {self.lab_code} does not support {capability}.")

    @abstractmethod
    def submit(self, order: LabOrder) -> LabResult: ...

    def find(self, order: LabOrder) -> LabResult | None:
        """The lab order the lab already has for this shipment (by its id, ``shipment_id``),
        as ``submit`` answers an accepted one; None when the lab has none, or cannot say (the
        caller then submits: a lab takes the shipment id as the submission's key). Asked
        before submitting again a shipment whose earlier submission's answer was never
        recorded (a worker killed during the call), so that the lab's order is adopted
        rather than sent again."""
        return None

    @abstractmethod
    def progress(
        self, order: LabOrder, *, submitted_at: datetime, now: datetime
    ) -> LabProgress: ...

    def answer_window_seconds(self) -> float:
        """How long after an operation was sent the lab may still act on it (the longest a
        call of ours lasts): an ``operation_done`` answer of False is believed only after."""
        return 0.0

    def operation_done(
        self, order: LabOrder, operation: str, change: Mapping[str, Any]
    ) -> bool | None:
        """Whether the lab order shows ``operation`` done (a capability's name, with ``change``
        as it was asked: ``shippingMethod``, ``carrierAlias``, ``recipient``), asked of the lab
        when its answer to the operation never came; None when the lab cannot say now."""
        return None

    @abstractmethod
    def cancel(self, order: LabOrder) -> LabResult: ...

    @abstractmethod
    def hold(self, order: LabOrder) -> LabResult: ...

    @abstractmethod
    def unhold(self, order: LabOrder) -> LabResult: ...

    @abstractmethod
    def update_address(self, order: LabOrder, recipient: Mapping[str, Any]) -> LabResult: ...

    @abstractmethod
    def update_shipping_method(self, order: LabOrder, shipping_method: str) -> LabResult: ...

    def map_to_json(self, order: LabOrder, *, include_nulls: bool = True) -> dict[str, Any]:
        """The lab order as this connector would send it."""
        data = asdict(order)
        for name in [f.name for f in fields(order) if not f.metadata.get("sent", True)]:
            del data[name]
        if include_nulls:
            return data
        return {k: v for k, v in data.items() if v not in (None, "")}
