"""Shapes of the micro-ui endpoints (the spec's bulk resubmission resources)."""

from rest_framework import serializers

from api.serializers import StrictSerializer, TraceParentField
from common.shipping import ShippingMethod, shipping_method_parse


class LabOption(serializers.Serializer):
    alias = serializers.CharField(help_text="The lab's code, as `lab` takes it, e.g. `gb1`.")
    name = serializers.CharField(help_text="The lab's name.")
    description = serializers.CharField(help_text="Its name and country, to show.")


class ValueLabel(serializers.Serializer):
    value = serializers.CharField(help_text="The value to send.")
    label = serializers.CharField(help_text="What to show for it.")  # type: ignore[assignment]


class FormOptions(serializers.Serializer):
    labs = LabOption(many=True, help_text="The active labs a row can be resubmitted to.")
    cancelOptions = ValueLabel(
        many=True, help_text="What a resubmission does with the original lab order."
    )
    shippingMethods = ValueLabel(many=True, help_text="The shipping methods.")
    traceParent = TraceParentField()


class SpreadsheetInfo(serializers.Serializer):
    totalRowCount = serializers.IntegerField(help_text="The worksheet's data rows.")
    resubmittableRowCount = serializers.IntegerField(
        help_text="Those that name a shipment that can be resubmitted."
    )
    traceParent = TraceParentField()


class Row(serializers.Serializer):
    rowIndex = serializers.IntegerField(help_text="The row's number in the worksheet.")
    labOrderId = serializers.IntegerField(
        allow_null=True, help_text="The shipment's number the row names; null when it names none."
    )
    message = serializers.CharField(allow_blank=True, help_text="The row's message cell.")
    newLabOrderId = serializers.IntegerField(
        allow_null=True, help_text="The row's new lab order cell; null when empty."
    )
    lastActivity = serializers.DateTimeField(
        allow_null=True, help_text="The row's last activity cell; null when empty."
    )
    labs = serializers.ListField(child=serializers.CharField(), help_text="The labs the row names.")
    cancelOption = serializers.CharField(
        allow_blank=True, help_text="The row's cancel option cell; empty when none."
    )
    skipRow = serializers.BooleanField(help_text="Whether the row says to skip it.")


class SpreadsheetData(serializers.Serializer):
    rows = Row(many=True, help_text="The worksheet's data rows, read.")
    traceParent = TraceParentField()


class ReviewRequest(StrictSerializer):
    spreadsheetId = serializers.CharField(
        max_length=200, help_text="The Google spreadsheet's id (from its URL)."
    )
    worksheetName = serializers.CharField(max_length=200, help_text="The worksheet's name.")
    lab = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=20,
        help_text="The lab (its alias) to resubmit every row to; empty for the cheapest able.",
    )
    cancelOption = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=20,
        help_text="What to do with the original lab orders (a form option's value); "
        "CancelOriginal when empty.",
    )
    preferredGlobalShippingMethod = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=20,
        help_text="The shipping method of every resubmission; empty for each shipment's own.",
    )


class ReviewResponse(serializers.Serializer):
    isOk = serializers.BooleanField(help_text="Whether the submission can go ahead.")
    numberOfLabOrders = serializers.IntegerField(
        help_text="The lab orders that would be resubmitted."
    )
    sheetContainsNumberOfLabOrders = serializers.IntegerField(
        help_text="The lab orders the worksheet names."
    )
    lab = serializers.CharField(help_text="The lab chosen, as sent.")
    cancelOption = serializers.CharField(help_text="The cancel option chosen, as sent.")
    preferredGlobalShippingMethod = serializers.CharField(
        help_text="The shipping method chosen, as sent."
    )
    statement = serializers.CharField(help_text="What the submission would do, in words.")
    traceParent = TraceParentField()


class SubmitResponse(serializers.Serializer):
    accepted = serializers.BooleanField(
        help_text="False when the worksheet's last job is still running: that job (`jobId`) "
        "goes on and nothing more is queued."
    )
    queuedRowCount = serializers.IntegerField(help_text="The rows queued for resubmission.")
    message = serializers.CharField(help_text="What was done, in words.")
    jobId = serializers.IntegerField(help_text="The job resubmitting them (see the admin).")
    traceParent = TraceParentField()


class SiteflowShippingUpdateRequest(StrictSerializer):
    spreadsheetId = serializers.CharField(
        max_length=200, help_text="The Google spreadsheet's id (from its URL)."
    )
    worksheetName = serializers.CharField(max_length=200, help_text="The worksheet's name.")
    shippingSpeed = serializers.CharField(
        max_length=20, help_text="The shipping method to set (any letter case)."
    )
    carrierAlias = serializers.CharField(
        max_length=100, help_text="The Site Flow carrier alias to set."
    )

    def validate_shippingSpeed(self, value: str) -> str:
        method = shipping_method_parse(value)
        if method is not None:
            return method
        raise serializers.ValidationError(
            f"Must be one of {', '.join(ShippingMethod.values)}.", code="invalid"
        )


class SiteflowShippingRowResult(serializers.Serializer):
    rowIndex = serializers.IntegerField(help_text="The row's number in the worksheet.")
    labOrderId = serializers.IntegerField(
        allow_null=True, help_text="The shipment's number; null when the row named none of ours."
    )
    success = serializers.BooleanField(help_text="Whether the lab order was changed.")
    message = serializers.CharField(help_text="What was done, or why not.")


class SiteflowShippingUpdateResponse(serializers.Serializer):
    results = SiteflowShippingRowResult(many=True, help_text="Each row's result.")
    updatedCount = serializers.IntegerField(help_text="The rows whose lab order was changed.")
    failedCount = serializers.IntegerField(help_text="The rows that failed.")
    jobId = serializers.IntegerField(
        help_text="The job doing the update: its admin page follows it to the end."
    )
    pending = serializers.IntegerField(
        help_text="Rows still queued when the answer was sent (0: every row is in results)."
    )
    traceParent = TraceParentField()
