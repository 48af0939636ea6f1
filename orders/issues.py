"""Every code an order can carry on ``status.issues`` or in a shipment update result.

One vocabulary: the pipeline, creation and actions use these names, never their own strings.
"""

# Order issues (``status.issues[].errorCode``).
ITEM_UNAVAILABLE = "order.items.ItemUnavailable"
ASSET_NOT_DOWNLOADED = "order.items.assets.NotDownloaded"
ASSET_FAILED_TO_DOWNLOAD = "order.items.assets.FailedToDownloaded"
# The packing slip and branding files (``objectId`` is the order's id).
PACKING_SLIP_NOT_DOWNLOADED = "order.packingSlip.NotDownloaded"
PACKING_SLIP_FAILED_TO_DOWNLOAD = "order.packingSlip.FailedToDownloaded"
BRANDING_NOT_DOWNLOADED = "order.branding.NotDownloaded"
BRANDING_FAILED_TO_DOWNLOAD = "order.branding.FailedToDownloaded"
PRINT_READY_FAILED = "order.items.assets.PrintReadyFailed"
SUBMISSION_FAILED = "order.shipments.SubmissionFailed"
# A lab order its lab cancelled or failed on its side (``objectId`` is the shipment's id).
LAB_CANCELLED = "order.shipments.LabCancelled"
LAB_ERROR = "order.shipments.LabError"
# A change the merchant asked of a lab order whose lab did not answer in time: the lab is being
# asked what it did (``objectId`` is the shipment's id); gone once that is recorded.
LAB_ANSWER_PENDING = "order.shipments.LabAnswerPending"
# A change (the merchant's or staff's) whose lab never said whether it made it, however long it
# was asked (``orders.shipments.LAB_ANSWER_WAIT``): no longer awaited, for staff to check at
# the lab (``objectId`` is the shipment's id).
LAB_ANSWER_UNKNOWN = "order.shipments.LabAnswerUnknown"
# A Live order of a card-billed merchant waits until its cost is authorised.
REQUIRES_PAYMENT_AUTHORISATION = "RequiresPaymentAuthorisation"

# Shipment update results of the order actions (``shipmentUpdateResults[].errorCode``).
SHIPMENT_UPDATE_FAILED = "order.shipments.updateFailed"
SHIPMENT_NOT_AVAILABLE = "order.shipments.notAvailable"
