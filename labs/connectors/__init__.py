"""Lab connectors: one interface to every production lab (see ``base.LabConnector``)."""

from labs.capabilities import CAPABILITIES
from labs.connectors.base import (
    LAB_CANCELLED,
    LAB_ERROR,
    LabConnector,
    LabOrder,
    LabOrderItem,
    LabProgress,
    LabResult,
)
from labs.connectors.registry import connector_for, lab_connector, simulator_serves

__all__ = [
    "CAPABILITIES",
    "LAB_CANCELLED",
    "LAB_ERROR",
    "LabConnector",
    "LabOrder",
    "LabOrderItem",
    "LabProgress",
    "LabResult",
    "connector_for",
    "lab_connector",
    "simulator_serves",
]
