"""Request and response shapes of the order endpoints (field names as the specification)."""

import json
import re
from typing import Any
from urllib.parse import urlsplit

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from api.serializers import (
    CarrierFields,
    FulfillmentLocationFields,
    JsonIntegerField,
    StrictSerializer,
)
from common.countries import is_country_code
from orders.models import ShippingMethod, Sizing

METADATA_MAX_CHARACTERS = 2000
BRANDING_NAMES = (
    "postcard",
    "flyer",
    "packing_slip_bw",
    "packing_slip_color",
    "sticker_exterior_round",
    "sticker_exterior_rectangle",
    "sticker_interior_round",
    "sticker_interior_rectangle",
)
_MD5 = re.compile(r"^[0-9a-fA-F]{32}$")


# --- input fields ---------------------------------------------------------------------------


class Int64Field(JsonIntegerField):
    """An int64, as the specification types ``omsId``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(min_value=-(2**63), max_value=2**63 - 1, **kwargs)


class CaseInsensitiveChoiceField(serializers.ChoiceField):
    """Accepts any letter case and returns the canonical spelling."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str):
            for choice in self.choices:
                if str(choice).lower() == data.strip().lower():
                    return choice
        self.fail("invalid_choice", input=data)


class HttpUrlField(serializers.URLField):
    """An absolute http(s) URL (no other scheme is ever fetched or called)."""

    default_error_messages = {"invalid": "Enter an absolute http or https URL."}

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not value.lower().startswith(("http://", "https://")):
            self.fail("invalid")
        try:
            urlsplit(value).port  # noqa: B018 (a port beyond 65535 raises)
        except ValueError:
            self.fail("invalid")
        return value


class CountryCodeField(serializers.CharField):
    default_error_messages = {
        "invalid_country": "'{value}' is not an ISO 3166-1 alpha-2 country code."
    }

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data).upper()
        if not is_country_code(value):
            self.fail("invalid_country", value=data)
        return value


class MetadataField(serializers.JSONField):
    default_error_messages = {
        "not_object": "Metadata must be a JSON object.",
        "too_long": f"Metadata must be at most {METADATA_MAX_CHARACTERS} characters (compact).",
    }

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            self.fail("not_object")
        if (
            len(json.dumps(data, separators=(",", ":"), ensure_ascii=False))
            > METADATA_MAX_CHARACTERS
        ):
            self.fail("too_long")
        return data


class AttributesField(serializers.DictField):
    child = serializers.CharField(allow_blank=False)


class AddressInput(StrictSerializer):
    line1 = serializers.CharField(max_length=200)
    line2 = serializers.CharField(max_length=200, required=False, allow_blank=True, allow_null=True)
    postalOrZipCode = serializers.CharField(max_length=40)
    countryCode = CountryCodeField()
    townOrCity = serializers.CharField(max_length=100)
    stateOrCounty = serializers.CharField(
        max_length=100, required=False, allow_blank=True, allow_null=True
    )


class RecipientInput(StrictSerializer):
    name = serializers.CharField(max_length=200)
    email = serializers.EmailField(required=False, allow_blank=True, allow_null=True)
    phoneNumber = serializers.CharField(
        max_length=50, required=False, allow_blank=True, allow_null=True
    )
    address = AddressInput()


class CostInput(StrictSerializer):
    amount = serializers.DecimalField(max_digits=12, decimal_places=2, min_value=0)
    currency = serializers.RegexField(r"^[A-Za-z]{3}$")


class SpineInput(StrictSerializer):
    text = serializers.CharField(max_length=200, required=False, allow_blank=True)
    backgroundColourHexCode = serializers.RegexField(r"^#?[0-9A-Fa-f]{6}$", required=False)
    textColourHexCode = serializers.RegexField(r"^#?[0-9A-Fa-f]{6}$", required=False)
    textSizePx = JsonIntegerField(min_value=1, max_value=500, required=False, allow_null=True)
    textFontFamily = serializers.CharField(max_length=100, required=False, allow_blank=True)


class AssetInput(StrictSerializer):
    omsId = Int64Field(required=False, allow_null=True)
    printArea = serializers.CharField(max_length=50, required=False, default="default")
    url = HttpUrlField(max_length=2000)
    md5Hash = serializers.RegexField(_MD5, required=False, allow_null=True)
    pageCount = JsonIntegerField(min_value=1, max_value=10000, required=False, allow_null=True)


class ItemInput(StrictSerializer):
    omsId = Int64Field(required=False, allow_null=True)
    merchantReference = serializers.CharField(
        max_length=200, required=False, allow_blank=True, allow_null=True
    )
    sku = serializers.CharField(max_length=100)
    copies = JsonIntegerField(min_value=1, max_value=100000)
    sizing = CaseInsensitiveChoiceField(choices=Sizing.values, required=False, default=Sizing.FILL)
    attributes = AttributesField(required=False, default=dict)
    spine = SpineInput(required=False, allow_null=True)
    assets = AssetInput(many=True, allow_empty=False)
    recipientCost = CostInput(required=False, allow_null=True)


class PackingSlipInput(StrictSerializer):
    url = HttpUrlField(max_length=2000, required=False, allow_null=True)


class BrandingItemInput(StrictSerializer):
    url = HttpUrlField(max_length=2000)


class BrandingInput(StrictSerializer):
    def get_fields(self) -> dict[str, serializers.Field]:
        return {name: BrandingItemInput(required=False) for name in BRANDING_NAMES}


class OrderCreateInput(StrictSerializer):
    omsId = Int64Field(required=False, allow_null=True)
    callbackUrl = HttpUrlField(max_length=2000, required=False, allow_null=True, allow_blank=True)
    merchantReference = serializers.CharField(
        max_length=200, required=False, allow_blank=True, allow_null=True
    )
    idempotencyKey = serializers.CharField(max_length=200, required=False, allow_null=True)
    shippingMethod = CaseInsensitiveChoiceField(choices=ShippingMethod.values)
    recipient = RecipientInput()
    items = ItemInput(many=True, allow_empty=False, max_length=500)  # type: ignore[call-arg]
    packingSlip = PackingSlipInput(required=False, allow_null=True)
    branding = BrandingInput(required=False, allow_null=True)
    metadata = MetadataField(required=False, allow_null=True)


class ShippingMethodInput(StrictSerializer):
    shippingMethod = CaseInsensitiveChoiceField(choices=ShippingMethod.values)


class MetadataInput(StrictSerializer):
    metadata = MetadataField()


class RecipientUpdateInput(RecipientInput):
    """The recipient, flat, as the body of ``updateRecipient``."""


# --- output ---------------------------------------------------------------------------------


class CostOutput(serializers.Serializer):
    amount = serializers.CharField(help_text='Decimal with two places, e.g. "12.50".')
    currency = serializers.CharField()


class IssueOutput(serializers.Serializer):
    objectId = serializers.CharField()
    errorCode = serializers.CharField()
    description = serializers.CharField()
    authorisationDetails = serializers.DictField(required=False)


class DetailsOutput(serializers.Serializer):
    downloadAssets = serializers.CharField()
    allocateProductionLocation = serializers.CharField()
    printReadyAssetsPrepared = serializers.CharField()
    inProduction = serializers.CharField()
    shipping = serializers.CharField()


class StatusOutput(serializers.Serializer):
    stage = serializers.CharField(
        help_text="InProgress, Complete, Cancelled (OnHold while paused, AwaitingPayment until "
        "a card payment is authorised)."
    )
    details = DetailsOutput()
    issues = IssueOutput(many=True)


class ChargeItemOutput(serializers.Serializer):
    id = serializers.CharField()
    itemId = serializers.CharField(allow_null=True)
    shipmentId = serializers.CharField(allow_null=True)
    cost = CostOutput()
    chargeType = serializers.CharField()


class ChargeOutput(serializers.Serializer):
    id = serializers.CharField()
    chargeType = serializers.CharField(help_text="Item, Shipping, Refund or Other.")
    serviceInvoiceNumber = serializers.CharField(allow_null=True)
    totalCost = CostOutput()
    totalTax = CostOutput()
    items = ChargeItemOutput(many=True)


class CarrierOutput(CarrierFields):
    pass


class TrackingOutput(serializers.Serializer):
    url = serializers.CharField()
    number = serializers.CharField()


class ShipmentItemOutput(serializers.Serializer):
    itemId = serializers.CharField()
    availability = serializers.CharField()


class FulfillmentLocationOutput(FulfillmentLocationFields):
    pass


class ShipmentOutput(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.CharField(help_text="Processing, Shipped or Cancelled.")
    carrier = CarrierOutput()
    tracking = TrackingOutput(allow_null=True)
    dispatchDate = serializers.DateTimeField(allow_null=True)
    items = ShipmentItemOutput(many=True)
    fulfillmentLocation = FulfillmentLocationOutput()
    cancelled = serializers.BooleanField(required=False)


class AddressOutput(serializers.Serializer):
    line1 = serializers.CharField()
    line2 = serializers.CharField(allow_null=True)
    postalOrZipCode = serializers.CharField()
    countryCode = serializers.CharField()
    townOrCity = serializers.CharField()
    stateOrCounty = serializers.CharField(allow_null=True)


class RecipientOutput(serializers.Serializer):
    name = serializers.CharField()
    email = serializers.CharField(allow_null=True)
    phoneNumber = serializers.CharField(allow_null=True)
    address = AddressOutput()


class AssetOutput(serializers.Serializer):
    id = serializers.CharField()
    omsId = serializers.CharField(allow_null=True)
    printArea = serializers.CharField()
    status = serializers.CharField(help_text="InProgress, Complete or Error.")
    url = serializers.CharField()
    thumbnailUrl = serializers.CharField(allow_null=True)
    md5Hash = serializers.CharField(allow_null=True)
    pageCount = serializers.IntegerField(allow_null=True)


class ItemOutput(serializers.Serializer):
    id = serializers.CharField()
    omsId = serializers.CharField(allow_null=True)
    status = serializers.CharField(help_text="Ok, Invalid or NotYetDownloaded.")
    merchantReference = serializers.CharField(allow_null=True)
    sku = serializers.CharField()
    copies = serializers.IntegerField()
    sizing = serializers.CharField()
    thumbnailUrl = serializers.CharField(allow_null=True)
    attributes = serializers.DictField(child=serializers.CharField())
    spine = serializers.DictField(allow_null=True)
    assets = AssetOutput(many=True)
    recipientCost = CostOutput(allow_null=True)


class PackingSlipOutput(serializers.Serializer):
    url = serializers.CharField()
    status = serializers.CharField(allow_null=True)


class OrderOutput(serializers.Serializer):
    id = serializers.CharField()
    omsId = serializers.CharField(allow_null=True)
    created = serializers.DateTimeField()
    lastUpdated = serializers.DateTimeField()
    callbackUrl = serializers.CharField(allow_null=True)
    merchantReference = serializers.CharField(allow_null=True)
    shippingMethod = serializers.CharField()
    idempotencyKey = serializers.CharField(allow_null=True)
    status = StatusOutput()
    charges = ChargeOutput(many=True)
    shipments = ShipmentOutput(many=True)
    recipient = RecipientOutput()
    items = ItemOutput(many=True)
    packingSlip = PackingSlipOutput(allow_null=True)
    branding = serializers.DictField(
        allow_null=True, help_text="Branding name to {url, status}; null when the order has none."
    )
    metadata = serializers.DictField()
    tag = serializers.CharField(allow_null=True)
    usSalesTaxAlreadyCollected = serializers.BooleanField()


class OrderIdOutput(serializers.Serializer):
    id = serializers.CharField()


class OrderResponse(serializers.Serializer):
    outcome = serializers.CharField(help_text="Created, CreatedWithIssues, AlreadyExists or Ok.")
    order = OrderOutput()
    traceParent = serializers.CharField()


class OnHoldResponse(serializers.Serializer):
    outcome = serializers.CharField(help_text="OnHold: only the order id is returned.")
    order = OrderIdOutput()
    traceParent = serializers.CharField()


class ValidationOnlyResponse(serializers.Serializer):
    outcome = serializers.CharField(help_text="Ok: the order is valid; nothing was stored.")
    traceParent = serializers.CharField()


# One object, not a list of them, although it answers a viewset's ``list`` action.
@extend_schema_serializer(many=False)
class OrderListResponse(serializers.Serializer):
    outcome = serializers.CharField()
    orders = OrderOutput(many=True)
    hasMore = serializers.BooleanField()
    nextUrl = serializers.CharField(allow_null=True)
    traceParent = serializers.CharField()


class AvailabilityOutput(serializers.Serializer):
    isAvailable = serializers.ChoiceField(choices=["Yes", "No"])


class ActionsResponse(serializers.Serializer):
    outcome = serializers.CharField()
    cancel = AvailabilityOutput()
    changeRecipientDetails = AvailabilityOutput()
    changeShippingMethod = AvailabilityOutput()
    changeMetaData = AvailabilityOutput()
    traceParent = serializers.CharField()


class ShipmentUpdateResultOutput(serializers.Serializer):
    shipmentId = serializers.CharField()
    successful = serializers.BooleanField()
    errorCode = serializers.CharField(allow_null=True)
    description = serializers.CharField(allow_null=True)


class CancelResponse(serializers.Serializer):
    outcome = serializers.CharField(help_text="Cancelled, FailedToCancel or ActionNotAvailable.")
    order = OrderOutput()
    traceParent = serializers.CharField()


class ShippingUpdateResponse(serializers.Serializer):
    outcome = serializers.CharField(
        help_text="Updated, PartiallyUpdated, FailedToUpdate or ActionNotAvailable."
    )
    order = OrderOutput()
    shipmentUpdateResults = ShipmentUpdateResultOutput(many=True)
    shippingUpdateResults = ShipmentUpdateResultOutput(many=True)
    traceParent = serializers.CharField()


class RecipientUpdateResponse(serializers.Serializer):
    outcome = serializers.CharField(
        help_text="Updated, PartiallyUpdated, FailedToUpdate or ActionNotAvailable."
    )
    order = OrderOutput()
    shipmentUpdateResults = ShipmentUpdateResultOutput(many=True)
    traceParent = serializers.CharField()


class MetadataUpdateResponse(serializers.Serializer):
    outcome = serializers.CharField(help_text="Updated.")
    order = OrderOutput()
    traceParent = serializers.CharField()


# --- staff: shipment capabilities and operations ---------------------------------------------


class ShipmentAddressInput(StrictSerializer):
    """The body of ``updateAddress``: an address as in an order's recipient."""

    address = AddressInput()


class ShipmentCapabilitiesOutput(serializers.Serializer):
    labCode = serializers.CharField()
    countryCode = serializers.CharField()
    capabilities = serializers.ListField(
        child=serializers.CharField(),
        help_text="Drawn from cancel, hold, unhold, updateAddress and updateShippingMethod.",
    )


class ShipmentCapabilitiesResponse(serializers.Serializer):
    success = serializers.BooleanField()
    result = ShipmentCapabilitiesOutput()
    message = serializers.CharField(allow_blank=True)
    traceParent = serializers.CharField()


class ShipmentOperationOutput(serializers.Serializer):
    shipmentId = serializers.CharField()
    labCode = serializers.CharField()
    labOrderReference = serializers.CharField(
        allow_blank=True, help_text="The lab's own reference of the lab order."
    )
    operation = serializers.CharField(
        help_text="cancel, hold, unhold, updateAddress or updateShippingMethod."
    )
    shipment = ShipmentOutput(help_text="The shipment as the order's GET shows it afterwards.")


class ShipmentOperationResponse(serializers.Serializer):
    success = serializers.BooleanField(help_text="Whether the lab made the change.")
    message = serializers.CharField(allow_blank=True, help_text="Why not, when it did not.")
    result = ShipmentOperationOutput()
    traceParent = serializers.CharField()


class LabOrderItemJson(serializers.Serializer):
    item_id = serializers.CharField()
    sku = serializers.CharField()
    copies = serializers.IntegerField()
    attributes = serializers.DictField(child=serializers.CharField())
    files = serializers.DictField(
        child=serializers.CharField(), help_text="Print area → print-ready file URL."
    )


class LabOrderJson(serializers.Serializer):
    """The built-in simulator's lab order; another connector answers its own wire format."""

    shipment_id = serializers.CharField()
    order_id = serializers.CharField()
    lab_code = serializers.CharField()
    shipping_method = serializers.CharField()
    recipient = serializers.DictField()
    items = LabOrderItemJson(many=True)
    reference = serializers.CharField(allow_blank=True)
    carrier_name = serializers.CharField(allow_blank=True)
    carrier_service = serializers.CharField(allow_blank=True)
