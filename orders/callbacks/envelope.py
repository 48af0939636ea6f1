"""CloudEvents 1.0 envelopes in structured mode, built once as the exact bytes to send.

The bytes are stored with the event and re-sent unchanged on every retry and replay, so a
receiver that deduplicates on ``id`` or checks the signature sees the same message each time.

Ordering: the extension attribute ``sequence`` carries the event's number within its order
(1, 2, 3, ...). CloudEvents extension values here are strings and the sequence extension asks
for a lexicographically orderable value, so it is zero-padded to ``SEQUENCE_WIDTH`` digits
(``"0000000007"``): sorting the strings and sorting ``int(sequence)`` give the same order.
"""

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from cloudevents.conversion import to_structured
from cloudevents.http import CloudEvent
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder

from common.ids import PREFIXES, format_id
from merchants.models import EnvironmentKind

CONTENT_TYPE = "application/cloudevents+json; charset=UTF-8"
DATA_CONTENT_TYPE = "application/json"
SEQUENCE_ATTRIBUTE = "sequence"
SEQUENCE_WIDTH = 10


def type_prefix() -> str:
    return str(getattr(settings, "CALLBACK_EVENT_TYPE_PREFIX", "com.service.order"))


def stage_changed_type(stage: str) -> str:
    return f"{type_prefix()}.status.stage.changed#{stage}"


def shipment_type(shipment_status: str) -> str:
    return f"{type_prefix()}.shipments.shipment#{shipment_status}"


def downloads_complete_type() -> str:
    return f"{type_prefix()}.status.details.downloadAssets#Complete"


def event_source(environment_kind: str) -> str:
    """The environment's orders address, ``{base_url}/v4.0/Orders/``."""
    base_url = (
        settings.LIVE_BASE_URL
        if environment_kind == EnvironmentKind.LIVE
        else settings.SANDBOX_BASE_URL
    )
    return f"{base_url.rstrip('/')}/v4.0/Orders/"


def rfc3339(moment: dt.datetime) -> str:
    """UTC with millisecond precision and a ``Z``: ``2026-11-21T19:04:42.123Z``."""
    if moment.tzinfo is None:
        raise ValueError("Event times must be timezone-aware.")
    utc = moment.astimezone(dt.UTC)
    return utc.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def format_sequence(sequence: int) -> str:
    if not 0 < sequence < 10**SEQUENCE_WIDTH:
        raise ValueError(f"Sequence {sequence} is out of range.")
    return str(sequence).zfill(SEQUENCE_WIDTH)


def event_public_id(event_id: int) -> str:
    return format_id(PREFIXES["event"], event_id)


def _plain_json(data: Any) -> Any:
    """Serializer output may hold Decimals, datetimes or UUIDs; reduce it to JSON types."""
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def envelope_bytes(
    *,
    event_id: int,
    event_type: str,
    environment_kind: str,
    order_public_id: str,
    order: Mapping[str, Any],
    sequence: int,
    time: dt.datetime,
) -> bytes:
    """The structured-mode CloudEvent body, ``{..., "data": {"order": order}}``, as bytes."""
    event = CloudEvent(
        {
            "specversion": "1.0",
            "id": event_public_id(event_id),
            "type": event_type,
            "source": event_source(environment_kind),
            "subject": order_public_id,
            "time": rfc3339(time),
            "datacontenttype": DATA_CONTENT_TYPE,
            SEQUENCE_ATTRIBUTE: format_sequence(sequence),
        },
        {"order": dict(order)},
    )
    _, body = to_structured(event, data_marshaller=_plain_json)
    return body
