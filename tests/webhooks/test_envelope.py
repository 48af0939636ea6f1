"""CloudEvents envelopes: the attributes of the specification, built once as bytes."""

import datetime as dt
import json

import pytest
from cloudevents.conversion import from_http
from cloudevents.http import CloudEvent

from tests.support.envelopes import build_envelope as build
from webhooks.envelope import CONTENT_TYPE


def test_the_body_is_a_structured_cloudevent_with_every_attribute() -> None:
    body = build()

    assert json.loads(body) == {
        "specversion": "1.0",
        "id": "evt_7001",
        "type": "com.service.order.status.stage.changed#Complete",
        "source": "https://sandbox.print.test/v4.0/Orders/",
        "subject": "ord_42",
        "time": "2026-11-21T19:04:42.123Z",
        "datacontenttype": "application/json",
        "sequence": "0000000003",
        "data": {
            "order": {
                "id": "ord_42",
                "recipient": {"name": "Zoë Smith"},
                "charges": [{"totalCost": {"amount": "12.50", "currency": "GBP"}}],
            }
        },
    }
    event = from_http(CloudEvent, {"content-type": CONTENT_TYPE}, body)
    assert event["id"] == "evt_7001"
    assert event["sequence"] == "0000000003"
    assert event.get_data() == json.loads(body)["data"]


def test_the_same_inputs_give_the_same_bytes() -> None:
    assert build() == build()


def test_a_time_in_another_zone_is_written_in_utc() -> None:
    paris = dt.timezone(dt.timedelta(hours=1))
    body = build(time=dt.datetime(2026, 11, 21, 20, 0, 0, tzinfo=paris))

    assert json.loads(body)["time"] == "2026-11-21T19:00:00.000Z"


def test_a_naive_time_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        build(time=dt.datetime(2026, 11, 21, 19, 0, 0))


def test_sequences_sort_the_same_as_text_and_as_numbers() -> None:
    sequences = [json.loads(build(sequence=n))["sequence"] for n in (1, 2, 9, 10, 11, 100)]

    assert sequences == sorted(sequences)
    assert [int(s) for s in sequences] == [1, 2, 9, 10, 11, 100]
