"""CloudEvents 1.0 envelopes in structured mode, built once as the exact bytes to send.

The bytes are stored with the event and re-sent unchanged on every retry and replay, so a
receiver that deduplicates on ``id`` or checks the signature sees the same message each time.

Ordering: the extension attribute ``sequence`` carries the event's number within its subject
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
from django.core.serializers.json import DjangoJSONEncoder

from common.ids import PREFIXES, format_id

CONTENT_TYPE = "application/cloudevents+json; charset=UTF-8"
DATA_CONTENT_TYPE = "application/json"
SEQUENCE_ATTRIBUTE = "sequence"
SEQUENCE_WIDTH = 10


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
    source: str,
    subject: str,
    data: Mapping[str, Any],
    sequence: int,
    time: dt.datetime,
) -> bytes:
    """The structured-mode CloudEvent body, ``{..., "data": data}``, as bytes."""
    event = CloudEvent(
        {
            "specversion": "1.0",
            "id": event_public_id(event_id),
            "type": event_type,
            "source": source,
            "subject": subject,
            "time": rfc3339(time),
            "datacontenttype": DATA_CONTENT_TYPE,
            SEQUENCE_ATTRIBUTE: format_sequence(sequence),
        },
        dict(data),
    )
    _, body = to_structured(event, data_marshaller=_plain_json)
    return body
