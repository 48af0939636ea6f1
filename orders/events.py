"""The order changes merchants hear about, written to the callback outbox.

Call these inside the transaction that makes the change, so the event exists exactly when the
change does (a rolled-back change sends nothing).
"""

from orders.callbacks.envelope import downloads_complete_type, shipment_type, stage_changed_type
from orders.callbacks.outbox import callback_event_record
from orders.models import Order, Shipment


def order_stage_changed(*, order: Order) -> None:
    callback_event_record(order=order, event_type=stage_changed_type(order.stage))


def shipment_changed(*, order: Order, shipment: Shipment) -> None:
    callback_event_record(order=order, event_type=shipment_type(shipment.status))


def downloads_complete(*, order: Order) -> None:
    callback_event_record(order=order, event_type=downloads_complete_type())
