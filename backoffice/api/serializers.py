"""Shapes of the micro-ui endpoints (the spec's bulk resubmission resources)."""

from rest_framework import serializers

from api.serializers import StrictSerializer
from common.shipping import ShippingMethod, shipping_method_parse


class LabOption(serializers.Serializer):
    alias = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()


class ValueLabel(serializers.Serializer):
    value = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]


class FormOptions(serializers.Serializer):
    labs = LabOption(many=True)
    cancelOptions = ValueLabel(many=True)
    shippingMethods = ValueLabel(many=True)


class SpreadsheetInfo(serializers.Serializer):
    totalRowCount = serializers.IntegerField()
    resubmittableRowCount = serializers.IntegerField()


class Row(serializers.Serializer):
    rowIndex = serializers.IntegerField()
    labOrderId = serializers.IntegerField(allow_null=True)
    message = serializers.CharField(allow_blank=True)
    newLabOrderId = serializers.IntegerField(allow_null=True)
    lastActivity = serializers.DateTimeField(allow_null=True)
    labs = serializers.ListField(child=serializers.CharField())
    cancelOption = serializers.CharField(allow_blank=True)
    skipRow = serializers.BooleanField()


class SpreadsheetData(serializers.Serializer):
    rows = Row(many=True)


class ReviewRequest(StrictSerializer):
    spreadsheetId = serializers.CharField(max_length=200)
    worksheetName = serializers.CharField(max_length=200)
    lab = serializers.CharField(required=False, allow_blank=True, max_length=20)
    cancelOption = serializers.CharField(required=False, allow_blank=True, max_length=20)
    preferredGlobalShippingMethod = serializers.CharField(
        required=False, allow_blank=True, max_length=20
    )


class ReviewResponse(serializers.Serializer):
    isOk = serializers.BooleanField()
    numberOfLabOrders = serializers.IntegerField()
    sheetContainsNumberOfLabOrders = serializers.IntegerField()
    lab = serializers.CharField()
    cancelOption = serializers.CharField()
    preferredGlobalShippingMethod = serializers.CharField()
    statement = serializers.CharField()


class SubmitResponse(serializers.Serializer):
    accepted = serializers.BooleanField(
        help_text="False when the worksheet's last job is still running: that job (`jobId`) "
        "goes on and nothing more is queued."
    )
    queuedRowCount = serializers.IntegerField()
    message = serializers.CharField()
    jobId = serializers.IntegerField()


class SiteflowShippingUpdateRequest(StrictSerializer):
    spreadsheetId = serializers.CharField(max_length=200)
    worksheetName = serializers.CharField(max_length=200)
    shippingSpeed = serializers.CharField(max_length=20)
    carrierAlias = serializers.CharField(max_length=100)

    def validate_shippingSpeed(self, value: str) -> str:
        method = shipping_method_parse(value)
        if method is not None:
            return method
        raise serializers.ValidationError(
            f"Must be one of {', '.join(ShippingMethod.values)}.", code="invalid"
        )


class SiteflowShippingRowResult(serializers.Serializer):
    rowIndex = serializers.IntegerField()
    labOrderId = serializers.IntegerField(
        allow_null=True, help_text="The shipment's number; null when the row named none of ours."
    )
    success = serializers.BooleanField()
    message = serializers.CharField()


class SiteflowShippingUpdateResponse(serializers.Serializer):
    results = SiteflowShippingRowResult(many=True)
    updatedCount = serializers.IntegerField()
    failedCount = serializers.IntegerField()
    jobId = serializers.IntegerField(
        help_text="The job doing the update: its admin page follows it to the end."
    )
    pending = serializers.IntegerField(
        help_text="Rows still queued when the answer was sent (0: every row is in results)."
    )
    traceParent = serializers.CharField()
