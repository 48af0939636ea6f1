"""Response shapes of the order endpoints and the staff shipment endpoints' inputs (field names
as the specification)."""

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from api.serializers import (
    OK_OUTCOMES,
    CarrierFields,
    FulfillmentLocationFields,
    OutcomeField,
    StrictSerializer,
    TraceParentField,
)
from orders.inputs import AddressInput
from orders.models import (
    AssetStatus,
    ChargeType,
    DetailState,
    ItemAvailability,
    ItemStatus,
    ShipmentStatus,
    ShippingMethod,
    Sizing,
    Stage,
)

# The request shapes (``OrderCreateInput`` and the actions' inputs) are in ``orders.inputs``,
# shared with the dashboard's forms.

# --- output ---------------------------------------------------------------------------------

# Each answer's outcomes (their enumerations are named in SPECTACULAR_SETTINGS).
CREATE_OUTCOMES = ("Created", "CreatedWithIssues", "AlreadyExists", "Ok")
ON_HOLD_OUTCOMES = ("OnHold",)
CANCEL_OUTCOMES = ("Cancelled", "FailedToCancel", "ActionNotAvailable")
UPDATE_OUTCOMES = ("Updated", "PartiallyUpdated", "FailedToUpdate", "ActionNotAvailable")
METADATA_OUTCOMES = ("Updated",)
ORDER_ID_TEXT = "The order's id: `ord_` and digits, set by the service."


class CostOutput(serializers.Serializer):
    amount = serializers.CharField(
        help_text='A decimal with two places, as a string, e.g. "12.50": positive is a debit, '
        "negative a credit."
    )
    currency = serializers.CharField(help_text="The three-letter ISO currency code, e.g. `GBP`.")


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


class PaymentDetailsOutput(serializers.Serializer):
    amount = serializers.CharField(
        help_text='The amount to authorise: a decimal with two places, as a string, e.g. "12.50".'
    )
    currency = serializers.CharField(help_text="The three-letter ISO currency code, e.g. `GBP`.")


class AuthorisationDetailsOutput(serializers.Serializer):
    authorisationUrl = serializers.CharField(
        help_text="The page where the payment is made (send your customer or pay there)."
    )
    paymentDetails = PaymentDetailsOutput(
        help_text="What to authorise: the order's total, or after a change that raised the "
        "cost of a paid order, the difference."
    )


class IssueOutput(serializers.Serializer):
    objectId = serializers.CharField(
        help_text="What the issue is about: an `ord_`, `ori_` or `shp_` id."
    )
    errorCode = serializers.CharField(
        help_text="What went wrong, e.g. `order.items.assets.NotDownloaded` (one download "
        "attempt failed; the service tries 10 times), `order.items.assets.FailedToDownloaded` "
        "(all 10 failed), `order.items.ItemUnavailable` (a SKU cannot be made now) or "
        "`RequiresPaymentAuthorisation`."
    )
    description = serializers.CharField(help_text="What went wrong, for a person to read.")
    authorisationDetails = AuthorisationDetailsOutput(
        required=False,
        help_text="`RequiresPaymentAuthorisation` only: where and how much to authorise.",
    )


DETAIL_TEXT = "NotStarted, InProgress, Complete or Error (with an entry in `issues`)"


class DetailsOutput(serializers.Serializer):
    downloadAssets = serializers.ChoiceField(
        choices=DetailState.choices, help_text=f"Download of the assets: {DETAIL_TEXT}."
    )
    allocateProductionLocation = serializers.ChoiceField(
        choices=DetailState.choices, help_text=f"Allocation to labs: {DETAIL_TEXT}."
    )
    printReadyAssetsPrepared = serializers.ChoiceField(
        choices=DetailState.choices,
        help_text=f"Conversion of the assets to print-ready files: {DETAIL_TEXT}.",
    )
    inProduction = serializers.ChoiceField(
        choices=DetailState.choices,
        help_text=f"Submission to the labs and production: {DETAIL_TEXT}.",
    )
    shipping = serializers.ChoiceField(
        choices=DetailState.choices, help_text=f"Dispatch to the recipient: {DETAIL_TEXT}."
    )


class StatusOutput(serializers.Serializer):
    stage = serializers.ChoiceField(
        choices=Stage.choices,
        help_text="InProgress, Complete, Cancelled (OnHold while paused, AwaitingPayment until "
        "a card payment is authorised).",
    )
    details = DetailsOutput(help_text="The progress of each processing step.")
    issues = IssueOutput(many=True, help_text="What needs attention; empty when nothing does.")


class ChargeItemOutput(serializers.Serializer):
    id = serializers.CharField(help_text="The charge item's id: `chi_` and digits.")
    itemId = serializers.CharField(
        allow_null=True, help_text="The `ori_` id of the item charged; null for shipping."
    )
    shipmentId = serializers.CharField(
        allow_null=True,
        help_text="The `shp_` id of the shipment charged; null for a product charge.",
    )
    cost = CostOutput(help_text="What this line costs, tax excluded.")
    chargeType = serializers.ChoiceField(
        choices=ChargeType.choices, help_text="Item, Shipping, Refund or Other."
    )


class ChargeOutput(serializers.Serializer):
    id = serializers.CharField(help_text="The charge's id: `chg_` and digits.")
    chargeType = serializers.ChoiceField(
        choices=ChargeType.choices,
        help_text="Item, Shipping, Refund or Other. Every refund to a card is a Refund "
        "charge; Other is card money beyond what the order costs now, given back by the Refund "
        "charge beside it.",
    )
    serviceInvoiceNumber = serializers.CharField(
        allow_null=True,
        help_text="The service's invoice that bills this charge; null until it is invoiced.",
    )
    totalCost = CostOutput(help_text="The total of all charge items, tax excluded.")
    totalTax = CostOutput(help_text="The tax on the charge.")
    items = ChargeItemOutput(many=True, help_text="The charge's lines.")


class CarrierOutput(CarrierFields):
    pass


class TrackingOutput(serializers.Serializer):
    url = serializers.CharField(help_text="The carrier's tracking page of the shipment.")
    number = serializers.CharField(help_text="The carrier's tracking number.")


class ShipmentItemOutput(serializers.Serializer):
    itemId = serializers.CharField(help_text="The `ori_` id of an item in this shipment.")
    availability = serializers.ChoiceField(
        choices=ItemAvailability.choices,
        help_text="Available, or Unavailable when the lab cannot make it.",
    )


class FulfillmentLocationOutput(FulfillmentLocationFields):
    pass


class ShipmentOutput(serializers.Serializer):
    id = serializers.CharField(help_text="The shipment's id: `shp_` and digits.")
    status = serializers.ChoiceField(
        choices=ShipmentStatus.choices,
        help_text="Processing (not yet shipped), Shipped or Cancelled.",
    )
    carrier = CarrierOutput(help_text="Who carries the shipment.")
    tracking = TrackingOutput(
        allow_null=True, help_text="Where to follow the shipment; null until it is trackable."
    )
    dispatchDate = serializers.DateTimeField(
        allow_null=True, help_text="When the lab dispatched it; null until then."
    )
    items = ShipmentItemOutput(many=True, help_text="The order's items in this shipment.")
    fulfillmentLocation = FulfillmentLocationOutput(help_text="The lab that makes it.")
    cancelled = serializers.BooleanField(
        required=False, help_text="Whether the shipment is cancelled (shown by cancellations)."
    )


class AddressOutput(serializers.Serializer):
    line1 = serializers.CharField(help_text="The first line of the address.")
    line2 = serializers.CharField(allow_null=True, help_text="The second line, if any.")
    postalOrZipCode = serializers.CharField(help_text="The postal or ZIP code.")
    countryCode = serializers.CharField(help_text="The two-letter ISO country code.")
    townOrCity = serializers.CharField(help_text="The town or city.")
    stateOrCounty = serializers.CharField(allow_null=True, help_text="The state or county, if any.")


class RecipientOutput(serializers.Serializer):
    name = serializers.CharField(
        help_text="Who receives the order (very long names may be shortened for couriers)."
    )
    email = serializers.CharField(allow_null=True, help_text="The recipient's email, if given.")
    phoneNumber = serializers.CharField(
        allow_null=True, help_text="The recipient's mobile number, if given."
    )
    address = AddressOutput(help_text="Where the order is shipped.")


OMS_ID_TEXT = "Your own number for this {}, as sent in `omsId`, in a string; null when none was."


class AssetOutput(serializers.Serializer):
    id = serializers.CharField(help_text="The asset's id: `ast_` and digits.")
    omsId = serializers.CharField(allow_null=True, help_text=OMS_ID_TEXT.format("asset"))
    printArea = serializers.CharField(
        help_text="The print area the image is for: `default`, or e.g. `spine` (photobooks) or "
        "`lid` (jigsaws)."
    )
    status = serializers.ChoiceField(
        choices=AssetStatus.choices,
        help_text="InProgress (not yet downloaded), Complete (downloaded) or Error (the download "
        "failed).",
    )
    url = serializers.CharField(help_text="Where the image is downloaded from, as sent.")
    thumbnailUrl = serializers.CharField(
        allow_null=True, help_text="A small preview; null until the asset is downloaded."
    )
    md5Hash = serializers.CharField(
        allow_null=True, help_text="The MD5 hash the download must match, if sent."
    )
    pageCount = serializers.IntegerField(
        allow_null=True, help_text="The number of pages (photobooks), if sent."
    )


class SpineOutput(serializers.Serializer):
    text = serializers.CharField(required=False, help_text="The text printed on the spine.")
    backgroundColourHexCode = serializers.CharField(
        required=False, help_text="The spine's background colour, e.g. `#FFFFFF`."
    )
    textColourHexCode = serializers.CharField(
        required=False, help_text="The colour of the text, e.g. `#000000`."
    )
    textSizePx = serializers.IntegerField(
        required=False, allow_null=True, help_text="The size of the text, in pixels."
    )
    textFontFamily = serializers.CharField(required=False, help_text="The font of the text.")


class ItemOutput(serializers.Serializer):
    id = serializers.CharField(help_text="The item's id: `ori_` and digits.")
    omsId = serializers.CharField(allow_null=True, help_text=OMS_ID_TEXT.format("item"))
    status = serializers.ChoiceField(
        choices=ItemStatus.choices,
        help_text="NotYetDownloaded, Ok, or Invalid (one or more assets failed to download).",
    )
    merchantReference = serializers.CharField(
        allow_null=True, help_text="Your own reference of the item, if sent."
    )
    sku = serializers.CharField(help_text="The product's SKU.")
    copies = serializers.IntegerField(help_text="How many of it.")
    sizing = serializers.ChoiceField(
        choices=Sizing.values,
        help_text="How the image fits the print area: fillPrintArea, fitPrintArea or "
        "stretchToPrintArea.",
    )
    thumbnailUrl = serializers.CharField(
        allow_null=True, help_text="A small preview; null until the item is prepared."
    )
    attributes = serializers.DictField(
        child=serializers.CharField(), help_text="The product attributes chosen, e.g. a wrap."
    )
    spine = SpineOutput(allow_null=True, help_text="A photobook's spine, as sent; else null.")
    assets = AssetOutput(many=True, help_text="The item's images, one per print area.")
    recipientCost = CostOutput(
        allow_null=True, help_text="What you charged the recipient for it, if sent."
    )


class PackingSlipOutput(serializers.Serializer):
    url = serializers.CharField(help_text="Where the packing slip is downloaded from.")
    status = serializers.ChoiceField(
        choices=AssetStatus.choices,
        allow_null=True,
        help_text="Its download: InProgress, Complete or Error.",
    )


class BrandingItemOutput(serializers.Serializer):
    url = serializers.CharField(help_text="Where the branded asset is downloaded from.")
    status = serializers.ChoiceField(
        choices=AssetStatus.choices, help_text="Its download: InProgress, Complete or Error."
    )


class OrderOutput(serializers.Serializer):
    id = serializers.CharField(help_text=ORDER_ID_TEXT)
    omsId = serializers.CharField(allow_null=True, help_text=OMS_ID_TEXT.format("order"))
    created = serializers.DateTimeField(help_text="When the order was created (UTC).")
    lastUpdated = serializers.DateTimeField(help_text="When the order last changed (UTC).")
    callbackUrl = serializers.CharField(
        allow_null=True,
        help_text="Where this order's callbacks go, if sent; else your account's callback URL.",
    )
    merchantReference = serializers.CharField(
        allow_null=True, help_text="Your own reference of the order, if sent."
    )
    shippingMethod = serializers.ChoiceField(
        choices=ShippingMethod.values,
        help_text="Budget, Standard, StandardPlus, Express or Overnight.",
    )
    idempotencyKey = serializers.CharField(
        allow_null=True, help_text="The idempotency key it was created with, if any."
    )
    status = StatusOutput(help_text="Where the order stands.")
    charges = ChargeOutput(many=True, help_text="What the order costs you, once allocated.")
    shipments = ShipmentOutput(
        many=True, help_text="The shipments the order is split into, once allocated."
    )
    recipient = RecipientOutput(help_text="Who receives the order, and where.")
    items = ItemOutput(many=True, help_text="What is made.")
    packingSlip = PackingSlipOutput(
        allow_null=True, help_text="The packing slip sent with the order; null when none."
    )
    branding = serializers.DictField(
        child=BrandingItemOutput(),
        allow_null=True,
        help_text="Branding name (e.g. `postcard`, `flyer`) to its asset, as sent at creation; "
        "null when the order has none.",
    )
    metadata = serializers.DictField(help_text="Your own keys and values, as last set.")
    tag = serializers.CharField(allow_null=True, help_text="A label of the order; null if none.")
    usSalesTaxAlreadyCollected = serializers.BooleanField(
        help_text="Whether US sales tax was already collected from the recipient."
    )


class OrderIdOutput(serializers.Serializer):
    id = serializers.CharField(help_text=ORDER_ID_TEXT)


class OrderResponse(serializers.Serializer):
    outcome = OutcomeField(
        CREATE_OUTCOMES,
        "Created, CreatedWithIssues (the order has issues to fix), AlreadyExists (the same "
        "idempotency key: the order created then), or Ok when read.",
    )
    order = OrderOutput(help_text="The order.")
    traceParent = TraceParentField()


class OnHoldResponse(serializers.Serializer):
    outcome = OutcomeField(ON_HOLD_OUTCOMES, "OnHold: only the order id is returned.")
    order = OrderIdOutput(help_text="The order's id only, while its pause window lasts.")
    traceParent = TraceParentField()


class ValidationOnlyResponse(serializers.Serializer):
    outcome = OutcomeField(OK_OUTCOMES, "Ok: the order is valid; nothing was stored.")
    traceParent = TraceParentField()


# One object, not a list of them, although it answers a viewset's ``list`` action.
@extend_schema_serializer(many=False)
class OrderListResponse(serializers.Serializer):
    outcome = OutcomeField(OK_OUTCOMES, "Ok.")
    orders = OrderOutput(many=True, help_text="This page's orders, newest first.")
    hasMore = serializers.BooleanField(help_text="Whether more orders follow this page.")
    nextUrl = serializers.CharField(
        allow_null=True, help_text="The full URL of the next page when `hasMore`; else null."
    )
    traceParent = TraceParentField()


class AvailabilityOutput(serializers.Serializer):
    isAvailable = serializers.ChoiceField(
        choices=["Yes", "No"], help_text="Yes when the action can be made now, else No."
    )


class ActionsResponse(serializers.Serializer):
    outcome = OutcomeField(OK_OUTCOMES, "Ok.")
    cancel = AvailabilityOutput(help_text="Whether the order can be cancelled.")
    changeRecipientDetails = AvailabilityOutput(
        help_text="Whether the recipient can be changed (updateRecipient)."
    )
    changeShippingMethod = AvailabilityOutput(
        help_text="Whether the shipping method can be changed (updateShippingMethod)."
    )
    changeMetaData = AvailabilityOutput(
        help_text="Whether the metadata can be replaced (updateMetadata: always)."
    )
    traceParent = TraceParentField()


class ShipmentUpdateResultOutput(serializers.Serializer):
    shipmentId = serializers.CharField(help_text="The `shp_` id of the shipment.")
    successful = serializers.BooleanField(help_text="Whether its lab took the change.")
    errorCode = serializers.CharField(
        allow_null=True,
        help_text="Why not: `order.shipments.updateFailed`, `order.shipments.invalid` or "
        "`order.shipments.notAvailable`; null when successful.",
    )
    description = serializers.CharField(
        allow_null=True, help_text="Why not, for a person to read; null when successful."
    )


class CancelResponse(serializers.Serializer):
    outcome = OutcomeField(
        CANCEL_OUTCOMES,
        "Cancelled, FailedToCancel (too late, e.g. in production) or ActionNotAvailable.",
    )
    order = OrderOutput(help_text="The order after the attempt.")
    traceParent = TraceParentField()


UPDATE_OUTCOME_TEXT = (
    "Updated (the order and all its shipments), PartiallyUpdated (some shipments failed), "
    "FailedToUpdate (no shipment could be; the order is unchanged) or ActionNotAvailable."
)
SHIPMENT_RESULTS_TEXT = "Each shipment's result."


class ShippingUpdateResponse(serializers.Serializer):
    outcome = OutcomeField(UPDATE_OUTCOMES, UPDATE_OUTCOME_TEXT)
    order = OrderOutput(help_text="The order after the change.")
    shipmentUpdateResults = ShipmentUpdateResultOutput(many=True, help_text=SHIPMENT_RESULTS_TEXT)
    shippingUpdateResults = ShipmentUpdateResultOutput(
        many=True, help_text="The same results as `shipmentUpdateResults`, under a second name."
    )
    traceParent = TraceParentField()


class RecipientUpdateResponse(serializers.Serializer):
    outcome = OutcomeField(UPDATE_OUTCOMES, UPDATE_OUTCOME_TEXT)
    order = OrderOutput(help_text="The order after the change.")
    shipmentUpdateResults = ShipmentUpdateResultOutput(many=True, help_text=SHIPMENT_RESULTS_TEXT)
    traceParent = TraceParentField()


class MetadataUpdateResponse(serializers.Serializer):
    outcome = OutcomeField(METADATA_OUTCOMES, "Updated.")
    order = OrderOutput(help_text="The order with its new metadata.")
    traceParent = TraceParentField()


# --- staff: shipment capabilities and operations ---------------------------------------------

SHIPMENT_OPERATIONS_TEXT = "cancel, hold, unhold, updateAddress or updateShippingMethod"


class ShipmentAddressInput(StrictSerializer):
    """The body of ``updateAddress``: an address as in an order's recipient."""

    address = AddressInput(help_text="The shipment's new address at its lab.")


class ShipmentCapabilitiesOutput(serializers.Serializer):
    labCode = serializers.CharField(help_text="The code of the shipment's lab, e.g. `gb1`.")
    countryCode = serializers.CharField(help_text="The lab's two-letter ISO country code.")
    capabilities = serializers.ListField(
        child=serializers.CharField(),
        help_text=f"What the lab can do to the shipment: drawn from {SHIPMENT_OPERATIONS_TEXT}.",
    )


class ShipmentCapabilitiesResponse(serializers.Serializer):
    success = serializers.BooleanField(help_text="Whether the lab's capabilities were read.")
    result = ShipmentCapabilitiesOutput(help_text="The shipment's lab and what it can do.")
    message = serializers.CharField(allow_blank=True, help_text="Why not, when not; else empty.")
    traceParent = TraceParentField()


class ShipmentOperationOutput(serializers.Serializer):
    shipmentId = serializers.CharField(help_text="The `shp_` id of the shipment.")
    labCode = serializers.CharField(help_text="The code of its lab, e.g. `gb1`.")
    labOrderReference = serializers.CharField(
        allow_blank=True, help_text="The lab's own reference of the lab order."
    )
    operation = serializers.CharField(help_text=f"The operation made: {SHIPMENT_OPERATIONS_TEXT}.")
    shipment = ShipmentOutput(help_text="The shipment as the order's GET shows it afterwards.")


class ShipmentOperationResponse(serializers.Serializer):
    success = serializers.BooleanField(help_text="Whether the lab made the change.")
    message = serializers.CharField(allow_blank=True, help_text="Why not, when it did not.")
    result = ShipmentOperationOutput(help_text="The shipment and the operation made.")
    traceParent = TraceParentField()


class LabOrderItemJson(serializers.Serializer):
    item_id = serializers.CharField(help_text="The `ori_` id of the item.")
    sku = serializers.CharField(help_text="The product's SKU.")
    copies = serializers.IntegerField(help_text="How many of it.")
    attributes = serializers.DictField(
        child=serializers.CharField(),
        help_text="Every attribute of the product, defaults filled in, as the catalogue spells "
        "them.",
    )
    files = serializers.DictField(
        child=serializers.CharField(),
        help_text="Print area to the URL of its print-ready file (empty until it is made).",
    )
    spine = SpineOutput(allow_null=True, help_text="A photobook's spine, as the order gave it.")


class LabOrderJson(serializers.Serializer):
    """The built-in simulator's lab order; another connector answers its own wire format."""

    shipment_id = serializers.CharField(help_text="The `shp_` id of the shipment.")
    order_id = serializers.CharField(help_text="The `ord_` id of its order.")
    lab_code = serializers.CharField(help_text="The code of the lab, e.g. `gb1`.")
    shipping_method = serializers.CharField(help_text="The shipment's shipping method.")
    recipient = RecipientOutput(help_text="The recipient, at the shipment's address.")
    items = LabOrderItemJson(many=True, help_text="The items the lab makes.")
    packing_slip = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="The URL of the packing slip's file; empty when none.",
    )
    branding = serializers.DictField(
        child=serializers.CharField(),
        help_text="Branding name to the URL of its file; empty when none.",
    )
    reference = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="The lab's reference of the lab order; empty until sent.",
    )
    carrier_name = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="The carrier planned for the shipment; empty when unknown.",
    )
    carrier_service = serializers.CharField(
        required=False, allow_blank=True, help_text="That carrier's service; empty when unknown."
    )
