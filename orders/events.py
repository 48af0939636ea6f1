"""The order changes merchants hear about, written to the callback outbox (``webhooks``).

Call these inside the transaction that makes the change, so the event exists exactly when the
change does (a rolled-back change sends nothing).
"""

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from merchants.models import Environment
from orders.models import Order, Shipment
from orders.parts import OrderParts
from orders.representation import order_representation
from orders.selectors import order_numbered_get, order_with_parts_numbered_get
from webhooks.models import CallbackEvent
from webhooks.services import event_create


def type_prefix() -> str:
    return str(getattr(settings, "CALLBACK_EVENT_TYPE_PREFIX", "com.service.order"))


def stage_changed_type(stage: str) -> str:
    return f"{type_prefix()}.status.stage.changed#{stage}"


def shipment_type(shipment_status: str) -> str:
    return f"{type_prefix()}.shipments.shipment#{shipment_status}"


def downloads_complete_type() -> str:
    return f"{type_prefix()}.status.details.downloadAssets#Complete"


# The order's detail fields under the names ``status.details`` shows them with.
DETAIL_NAMES = {
    "download_assets": "downloadAssets",
    "allocate_production_location": "allocateProductionLocation",
    "print_ready_assets_prepared": "printReadyAssetsPrepared",
    "in_production": "inProduction",
    "shipping": "shipping",
}


def step_error_type(detail: str) -> str:
    """``...status.details.<step>#Error`` for the order field ``detail``."""
    return f"{type_prefix()}.status.details.{DETAIL_NAMES[detail]}#Error"


def event_source(environment: Environment) -> str:
    """The environment's orders address, ``{base_url}/v4.0/Orders/``."""
    return f"{environment.base_url.rstrip('/')}/v4.0/Orders/"


def callback_target(order: Order) -> str:
    """The order's callback URL, else its environment's default; blank when neither is set."""
    return order.callback_url or order.environment.callback_url


@dataclass
class PartsKept:
    """For several events of one order in one transaction, between which only the order row
    changes (its stage or details, as a step moves the order on): the order's items, assets,
    shipments, charges and issues as the first event read them, reused by the others, which
    read the order row alone."""

    parts: OrderParts | None = None


def order_event_create(
    *, order: Order, event_type: str, kept: PartsKept | None = None
) -> CallbackEvent:
    """Write the event with the order as ``GET`` shows it now; deliver once the change commits.

    The order row's sequence counter is incremented in place, which also serialises concurrent
    events of one order, so their numbers follow the order of their commits. The event's number
    is the counter as the order row, read for the event's body right after, shows it (one round
    trip for both on PostgreSQL: ``order_with_parts_numbered_get``). With ``kept`` holding the
    parts of an earlier event of this transaction, only the row is read (``PartsKept``).
    """
    assert transaction.get_connection().in_atomic_block, (
        "record events inside the change's transaction"
    )
    environment = order.environment
    if kept is not None and kept.parts is not None:
        current, parts = order_numbered_get(environment=environment, order=order), kept.parts
    else:
        current, parts = order_with_parts_numbered_get(environment=environment, order_id=order.id)
        if kept is not None:
            kept.parts = parts
    representation = order_representation(current, base_url=environment.base_url, parts=parts)
    return event_create(
        environment=environment,
        subject=order.public_id,
        sequence=current.callback_sequence,
        event_type=event_type,
        source=event_source(environment),
        data={"order": representation},
        target_url=callback_target(order),
    )


def order_stage_changed(*, order: Order, kept: PartsKept | None = None) -> None:
    order_event_create(order=order, event_type=stage_changed_type(order.stage), kept=kept)


def shipment_changed(*, order: Order, shipment: Shipment, kept: PartsKept | None = None) -> None:
    order_event_create(order=order, event_type=shipment_type(shipment.status), kept=kept)


def downloads_complete(*, order: Order) -> None:
    order_event_create(order=order, event_type=downloads_complete_type())


def step_failed(*, order: Order, detail: str, kept: PartsKept | None = None) -> None:
    """A processing step ended in Error (the order shows ``detail`` as Error)."""
    order_event_create(order=order, event_type=step_error_type(detail), kept=kept)
