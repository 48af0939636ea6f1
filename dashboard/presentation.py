"""What the dashboard's order pages show in words: issues with what to do, the money of an
order; stage names, events and the timeline are ``orders.timeline``'s, shared with the staff
admin. Plain functions over rows already loaded: none reads the database."""

import json
from dataclasses import dataclass
from decimal import Decimal

from orders import issues as codes
from orders.models import ChargeType, Order, OrderIssue, Stage
from orders.timeline import DETAIL_STEP_NAMES as DETAIL_STEP_NAMES
from orders.timeline import ITEM_STATUS_NAMES as ITEM_STATUS_NAMES
from orders.timeline import STAGE_NAMES as STAGE_NAMES
from orders.timeline import STEP_STATE_NAMES as STEP_STATE_NAMES
from orders.timeline import Moment as Moment
from orders.timeline import event_words as event_words
from orders.timeline import order_timeline as order_timeline
from webhooks.models import CallbackEvent

# Issue code: (what happened, what to do), in the merchant's words.
_ISSUE_WORDS = {
    codes.REQUIRES_PAYMENT_AUTHORISATION: (
        "This order is waiting for its payment.",
        "Pay for it on its payment page; it starts as soon as it is paid.",
    ),
    codes.ITEM_UNAVAILABLE: (
        "An item is temporarily unavailable at every lab.",
        "Nothing to do: we try again regularly. Contact us if it lasts more than a day.",
    ),
    codes.ASSET_NOT_DOWNLOADED: (
        "An image could not be downloaded yet.",
        "We keep trying; check that its URL is public and answers with the file.",
    ),
    codes.ASSET_FAILED_TO_DOWNLOAD: (
        "An image could not be downloaded after every attempt.",
        "Check its URL, then cancel this order and place it again with a working URL.",
    ),
    codes.PACKING_SLIP_NOT_DOWNLOADED: (
        "The packing slip could not be downloaded yet.",
        "We keep trying; check that its URL is public.",
    ),
    codes.PACKING_SLIP_FAILED_TO_DOWNLOAD: (
        "The packing slip could not be downloaded after every attempt.",
        "Check its URL, then place the order again.",
    ),
    codes.BRANDING_NOT_DOWNLOADED: (
        "A branding file could not be downloaded yet.",
        "We keep trying; check that its URL is public.",
    ),
    codes.BRANDING_FAILED_TO_DOWNLOAD: (
        "A branding file could not be downloaded after every attempt.",
        "Check its URL, then place the order again.",
    ),
    codes.PRINT_READY_FAILED: (
        "An image could not be made ready for print.",
        "Check that it is a valid image of the right size, then place the order again.",
    ),
    codes.SUBMISSION_FAILED: (
        "A shipment could not be sent to its lab.",
        "Nothing to do: our staff are told and resubmit it.",
    ),
    "order.shipments.LabCancelled": (
        "The lab cancelled a shipment.",
        "Nothing to do: our staff resubmit it to a lab or contact you.",
    ),
    "order.shipments.LabError": (
        "The lab could not produce a shipment.",
        "Nothing to do: our staff resubmit it to a lab or contact you.",
    ),
}


@dataclass(frozen=True)
class IssueInWords:
    what: str
    to_do: str
    detail: str  # the API's description (names the file, the lab's message)
    code: str
    payment: bool


def issue_in_words(issue: OrderIssue) -> IssueInWords:
    what, to_do = _ISSUE_WORDS.get(issue.error_code, (issue.description, "Contact us."))
    # The payment issue's description is written for API clients (it names
    # ``authorisationDetails``); the page has its own words and a Pay button instead.
    payment = issue.error_code == codes.REQUIRES_PAYMENT_AUTHORISATION
    return IssueInWords(
        what=what,
        to_do=to_do,
        detail="" if what == issue.description or payment else issue.description,
        code=issue.error_code,
        payment=payment,
    )


@dataclass(frozen=True)
class Money:
    """The order's charges added up by kind; ``total`` = item + shipping + other + tax -
    refunds. ``other`` is card money beyond what the order costs now (Other charges), which a
    Refund charge beside it gives back."""

    item: Decimal
    shipping: Decimal
    tax: Decimal
    refunds: Decimal
    currency: str
    other: Decimal = Decimal(0)

    @property
    def total(self) -> Decimal:
        return self.item + self.shipping + self.other + self.tax - self.refunds


def order_money(order: Order) -> Money | None:
    """From the order's prefetched charges; None before the order is charged (no Item or
    Shipping charge yet), unless it was cancelled (a refund of what it was paid shows then)."""
    charges = list(order.charges.all())
    charged = any(c.charge_type in (ChargeType.ITEM, ChargeType.SHIPPING) for c in charges)
    if not charges or (not charged and order.stage != Stage.CANCELLED):
        return None
    sums = {kind: Decimal(0) for kind in ChargeType.values}
    tax = refunds = Decimal(0)
    for charge in charges:
        if charge.charge_type == ChargeType.REFUND:
            refunds -= charge.total_cost + charge.total_tax
        else:
            sums[charge.charge_type] += charge.total_cost
            tax += charge.total_tax
    return Money(
        item=sums[ChargeType.ITEM],
        shipping=sums[ChargeType.SHIPPING],
        other=sums[ChargeType.OTHER],
        tax=tax,
        refunds=refunds,
        currency=charges[0].currency,
    )


# A callback event's state and a delivery attempt's outcome, in words.
EVENT_STATE_NAMES = {
    "Pending": "Pending",
    "Delivered": "Delivered",
    "Failed": "Failed",
    "Stopped": "Stopped: the URL answered 410 Gone",
    "NoDestination": "Not sent: no callback URL",
}
ATTEMPT_OUTCOME_NAMES = {
    "Delivered": "Delivered",
    "Gone": "Gone (410): deliveries stopped",
    "RetryAfter": "Retry when the receiver asked",
    "Retry": "Retry",
    "Refused": "Refused: the address is not allowed",
}


def event_payload_text(event: CallbackEvent) -> str:
    """The exact body sent, indented for reading (as sent when it is not JSON)."""
    raw = bytes(event.body)
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except ValueError:
        return raw.decode("utf-8", "replace")
