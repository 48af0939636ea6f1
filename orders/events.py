"""The order changes merchants hear about, written to the callback outbox (``webhooks``).

Call these inside the transaction that makes the change, so the event exists exactly when the
change does (a rolled-back change sends nothing).
"""

from django.conf import settings
from django.db import transaction
from django.db.models import F

from merchants.models import Environment
from orders.document import order_document_write
from orders.models import Order, Shipment
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


def order_event_create(*, order: Order, event_type: str) -> CallbackEvent:
    """Write the event with the order's document as it is now (written afresh here:
    ``orders.document``); deliver once the change commits.

    The order row's sequence counter is incremented in place first, which also serialises
    concurrent events of one order (the increment locks the row until the transaction ends),
    so their numbers follow the order of their commits; the order read for the document shows
    the event's number."""
    assert transaction.get_connection().in_atomic_block, (
        "record events inside the change's transaction"
    )
    Order.objects.filter(id=order.id).update(callback_sequence=F("callback_sequence") + 1)
    current, document = order_document_write(order.id)
    environment = current.environment
    return event_create(
        environment=environment,
        subject=order.public_id,
        sequence=current.callback_sequence,
        event_type=event_type,
        source=event_source(environment),
        data={"order": document},
        target_url=callback_target(current),
    )


def order_stage_changed(*, order: Order) -> None:
    order_event_create(order=order, event_type=stage_changed_type(order.stage))


def shipment_changed(*, order: Order, shipment: Shipment) -> None:
    order_event_create(order=order, event_type=shipment_type(shipment.status))


def downloads_complete(*, order: Order) -> None:
    order_event_create(order=order, event_type=downloads_complete_type())


def step_failed(*, order: Order, detail: str) -> None:
    """A processing step ended in Error (the order shows ``detail`` as Error)."""
    order_event_create(order=order, event_type=step_error_type(detail))
