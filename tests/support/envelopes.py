"""A CloudEvent envelope with fixed inputs, for tests that change one of them."""

import datetime as dt
from decimal import Decimal

from webhooks.envelope import envelope_bytes

ORDER = {
    "id": "ord_42",
    "recipient": {"name": "Zoë Smith"},
    "charges": [{"totalCost": {"amount": Decimal("12.50"), "currency": "GBP"}}],
}
WHEN = dt.datetime(2026, 11, 21, 19, 4, 42, 123456, tzinfo=dt.UTC)


def build_envelope(**overrides: object) -> bytes:
    arguments: dict = {
        "event_id": 7001,
        "event_type": "com.service.order.status.stage.changed#Complete",
        "source": "https://sandbox.print.test/v4.0/Orders/",
        "subject": "ord_42",
        "data": {"order": ORDER},
        "sequence": 3,
        "time": WHEN,
    } | overrides
    return envelope_bytes(**arguments)
