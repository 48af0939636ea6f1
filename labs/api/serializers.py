"""Response shapes of the lab capability endpoint."""

from rest_framework import serializers

from labs.capabilities import CAPABILITIES


class CapabilityField(serializers.ChoiceField):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(choices=CAPABILITIES, **kwargs)  # type: ignore[arg-type]


class LabCapabilitiesOutput(serializers.Serializer):
    capabilities = serializers.ListField(
        child=CapabilityField(), help_text="What the lab can do to a lab order once submitted."
    )


class LabCapabilitiesResponse(serializers.Serializer):
    success = serializers.BooleanField()
    result = LabCapabilitiesOutput()
    message = serializers.CharField(allow_blank=True)
    traceParent = serializers.CharField()
