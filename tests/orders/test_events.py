"""What an order's callback events are called and where they say they come from."""

import json
from typing import Any

from merchants.models import Environment, EnvironmentKind
from orders.events import downloads_complete_type, event_source, shipment_type, stage_changed_type
from tests.support.envelopes import build_envelope


def test_live_events_name_the_live_base_url(settings: Any) -> None:
    settings.SANDBOX_BASE_URL = "https://sandbox.print.test"
    settings.LIVE_BASE_URL = "https://api.print.test"

    live = Environment(kind=EnvironmentKind.LIVE)
    sandbox = Environment(kind=EnvironmentKind.SANDBOX)

    assert json.loads(build_envelope(source=event_source(live)))["source"] == (
        "https://api.print.test/v4.0/Orders/"
    )
    assert event_source(sandbox) == "https://sandbox.print.test/v4.0/Orders/"


def test_event_types_follow_the_prefix_setting(settings: Any) -> None:
    assert stage_changed_type("Cancelled") == "com.service.order.status.stage.changed#Cancelled"
    assert shipment_type("Shipped") == "com.service.order.shipments.shipment#Shipped"
    assert downloads_complete_type() == "com.service.order.status.details.downloadAssets#Complete"

    settings.CALLBACK_EVENT_TYPE_PREFIX = "com.example.print"

    assert stage_changed_type("Complete") == "com.example.print.status.stage.changed#Complete"
    assert json.loads(build_envelope(event_type=shipment_type("Shipped")))["type"] == (
        "com.example.print.shipments.shipment#Shipped"
    )
