"""Lab connectors: one interface to every production lab (see ``base.LabConnector``)."""

from labs.connectors.base import (
    CAPABILITIES,
    LabConnector,
    LabOrder,
    LabOrderItem,
    LabProgress,
    LabResult,
)
from labs.connectors.registry import connector_for

__all__ = [
    "CAPABILITIES",
    "LabConnector",
    "LabOrder",
    "LabOrderItem",
    "LabProgress",
    "LabResult",
    "connector_for",
]
