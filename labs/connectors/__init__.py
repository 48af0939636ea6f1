"""Lab connectors: one interface to every production lab (see ``base.LabConnector``)."""

from labs.capabilities import CAPABILITIES
from labs.connectors.base import (
    LabConnector,
    LabOrder,
    LabOrderItem,
    LabProgress,
    LabResult,
)
from labs.connectors.registry import connector_for, lab_connector

__all__ = [
    "CAPABILITIES",
    "LabConnector",
    "LabOrder",
    "LabOrderItem",
    "LabProgress",
    "LabResult",
    "connector_for",
    "lab_connector",
]
