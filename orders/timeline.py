"""An order's story in words, for the people who read it (the merchant's dashboard, the staff
admin): stage and step names, callback events as sentences, and the order's timeline. Plain
functions over rows already loaded (``order.shipments.all()`` may be prefetched)."""

from dataclasses import dataclass
from datetime import datetime

from orders.models import DetailState, ItemStatus, Order, Stage
from webhooks.models import CallbackEvent

STAGE_NAMES: dict[str, str] = {
    Stage.ON_HOLD: "On hold",
    Stage.AWAITING_PAYMENT: "Awaiting payment",
    Stage.IN_PROGRESS: "In progress",
    Stage.COMPLETE: "Complete",
    Stage.CANCELLED: "Cancelled",
}

# A step's state (``status.details``) in words.
STEP_STATE_NAMES: dict[str, str] = {
    DetailState.NOT_STARTED: "Not started",
    DetailState.IN_PROGRESS: "In progress",
    DetailState.COMPLETE: "Complete",
    DetailState.ERROR: "Failed",
}

ITEM_STATUS_NAMES: dict[str, str] = {
    ItemStatus.NOT_YET_DOWNLOADED: "image not downloaded yet",
    ItemStatus.OK: "image ready",
    ItemStatus.INVALID: "image refused",
}

# The steps of ``status.details`` (callback names) in words.
DETAIL_STEP_NAMES: dict[str, str] = {
    "downloadAssets": "Downloading the images",
    "allocateProductionLocation": "Choosing a lab",
    "printReadyAssetsPrepared": "Preparing the print files",
    "inProduction": "Production",
    "shipping": "Shipping",
}

_EVENT_WORDS = {
    "status.stage.changed": "Stage now {state}",
    "shipments.shipment": "A shipment is now {state}",
    "status.details.downloadAssets": "Images downloaded",
}
_SHIPMENT_STATES = {"Processing": "in production", "Shipped": "shipped", "Cancelled": "cancelled"}


def event_words(event_type: str) -> str:
    """A callback event's type (``com.service.order.status.stage.changed#InProgress``) as the
    pages say it: ``Stage now In progress``; ``Choosing a lab failed`` for a step's Error."""
    name, _, state = event_type.partition("#")
    for suffix, words in _EVENT_WORDS.items():
        if name.endswith(suffix):
            shown = STAGE_NAMES.get(state) or _SHIPMENT_STATES.get(state) or state
            return words.format(state=shown)
    step = name.rsplit(".", 1)[-1]
    step_name = DETAIL_STEP_NAMES.get(step, "A step")
    if state == DetailState.ERROR:
        return f"{step_name} failed"
    return f"{step_name}: {STEP_STATE_NAMES.get(state, 'changed').lower()}"


@dataclass(frozen=True)
class Moment:
    at: datetime
    what: str


def order_timeline(order: Order, events: list[CallbackEvent]) -> list[Moment]:
    """What happened to the order, oldest first: its creation, payment, lab submission and
    dispatches, and every change merchants were called back about."""
    moments = [Moment(order.created, "Order placed")]
    if order.payment_authorised_at:
        moments.append(Moment(order.payment_authorised_at, "Payment received"))
    if order.submitted_at:
        moments.append(Moment(order.submitted_at, "Sent to the labs"))
    for shipment in order.shipments.all():
        if shipment.dispatch_date:
            dispatched = f"Shipment {shipment.public_id} dispatched"
            moments.append(Moment(shipment.dispatch_date, dispatched))
    moments += [Moment(event.created, event_words(event.event_type)) for event in events]
    return sorted(moments, key=lambda moment: moment.at)
