"""Response shapes of the order endpoints and the staff shipment endpoints' inputs (field names
as the specification)."""

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from api.serializers import CarrierFields, FulfillmentLocationFields, StrictSerializer
from orders.inputs import AddressInput

# The request shapes (``OrderCreateInput`` and the actions' inputs) are in ``orders.inputs``,
# shared with the dashboard's forms.

# --- output ---------------------------------------------------------------------------------


class CostOutput(serializers.Serializer):
    amount = serializers.CharField(help_text='Decimal with two places, e.g. "12.50".')
    currency = serializers.CharField()


CARD_COST_CHANGES = (
    "For a merchant billed by card, an order is never produced with charges above what was "
    "authorised. A change that raises the cost of an order already paid for, made before its "
    "shipments reach a lab, gives the order a new `RequiresPaymentAuthorisation` issue whose "
    "`paymentDetails.amount` is the difference: the order goes to no lab (stage "
    "`AwaitingPayment`) until that is authorised. A change that would raise the cost of "
    "shipments already at their labs is refused (`FailedToUpdate`, each shipment saying why). "
    "A change that lowers the cost refunds the difference (shown in `charges` as an `Other` "
    "charge of the difference, the part of the payment beyond the cost, and the `Refund` "
    "charge that gives it back)."
)


class IssueOutput(serializers.Serializer):
    objectId = serializers.CharField()
    errorCode = serializers.CharField()
    description = serializers.CharField()
    authorisationDetails = serializers.DictField(
        required=False,
        help_text="RequiresPaymentAuthorisation only: `authorisationUrl` and `paymentDetails` "
        "(amount and currency) to authorise: the order's total, or after a change that raised "
        "the cost of a paid order, the difference.",
    )


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
    chargeType = serializers.CharField(
        help_text="Item, Shipping, Refund or Other. Every refund to a card is a Refund charge; "
        "Other is card money beyond what the order costs now, given back by the Refund charge "
        "beside it."
    )
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
