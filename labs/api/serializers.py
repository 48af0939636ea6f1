"""Response shapes of the lab capability endpoint."""

from rest_framework import serializers

from api.serializers import TraceParentField
from labs.capabilities import CAPABILITIES


class CapabilityField(serializers.ChoiceField):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(choices=CAPABILITIES, **kwargs)  # type: ignore[arg-type]


class LabCapabilitiesOutput(serializers.Serializer):
    capabilities = serializers.ListField(
        child=CapabilityField(), help_text="What the lab can do to a lab order once submitted."
    )


class LabCapabilitiesResponse(serializers.Serializer):
    success = serializers.BooleanField(help_text="Whether the lab's capabilities were read.")
    result = LabCapabilitiesOutput(help_text="What the lab can do.")
    message = serializers.CharField(allow_blank=True, help_text="Why not, when not; else empty.")
    traceParent = TraceParentField()
