"""The API's JSON renderer writes the bytes of the framework's own (``JSONRenderer``: compact,
UTF-8, U+2028 and U+2029 escaped), by orjson, and sends stored documents as they are."""

from decimal import Decimal
from typing import Any

import orjson
import pytest
from rest_framework.renderers import JSONRenderer

from api.renderers import ApiJsonRenderer

TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
CASES: list[Any] = [
    {"name": "plain ascii", "n": 1, "ok": True, "none": None},
    {"name": "Zoë Ångström \u2013 \u2018quoted\u2019 €"},
    {"name": "line\u2028separator and\u2029paragraph", "list": ["\u2028"]},
    {"nested": [{"a": "\u2029"}, {"b": "é\u2028"}]},
    {"amount": Decimal("12.50")},  # a type orjson refuses: the framework's encoder writes it
]


@pytest.mark.parametrize("data", CASES)
def test_the_bytes_are_the_frameworks(data: Any) -> None:
    data = {**data, "traceParent": TRACE}
    assert ApiJsonRenderer().render(data) == JSONRenderer().render(data)


def test_a_stored_document_is_sent_as_stored_with_its_separators_escaped() -> None:
    stored = orjson.dumps({"note": "a\u2028b", "city": "Zürich"}).decode()
    rendered = ApiJsonRenderer().render({"order": orjson.Fragment(stored), "traceParent": TRACE})
    assert rendered == (
        b'{"order":{"note":"a\\u2028b","city":"Z\xc3\xbcrich"},"traceParent":"%s"}' % TRACE.encode()
    )
