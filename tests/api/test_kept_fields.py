"""Request bodies validated by serializers whose fields are kept per thread
(``api.serializers.KeptFieldsSerializer``): each body gets its own answer, one after another
and in threads at once."""

import threading
from typing import Any

from quotes.api.serializers import QuoteRequestSerializer


def _body(sku: str, copies: int) -> dict[str, Any]:
    return {
        "destinationCountryCode": "gb",
        "items": [{"sku": sku, "copies": copies, "assets": [{"printArea": "default"}]}],
    }


def _answer(body: dict[str, Any]) -> Any:
    serializer = QuoteRequestSerializer(data=body)
    if serializer.is_valid():
        return serializer.validated_data
    return serializer.errors


def _expected(sku: str, copies: int) -> Any:
    if copies < 1:
        return {"items": {0: {"copies": ["Ensure this value is greater than or equal to 1."]}}}
    item = {"sku": sku, "copies": copies, "attributes": {}, "assets": [{"printArea": "default"}]}
    return {"destinationCountryCode": "GB", "items": [item]}


def test_bodies_one_after_another_each_get_their_own_answer() -> None:
    for sku, copies in [("A", 1), ("B", 0), ("C", 2), ("D", -1), ("E", 3)]:
        assert _answer(_body(sku, copies)) == _expected(sku, copies)
    assert _answer({**_body("F", 1), "flat": 1}) == {"flat": ["Unknown field."]}


def test_bodies_in_threads_at_once_each_get_their_own_answer() -> None:
    wrong: list[Any] = []
    start = threading.Barrier(6)

    def validate(thread: int) -> None:
        start.wait()
        for n in range(60):
            sku, copies = f"T{thread}-{n}", (n % 3) - (thread % 2)
            answer = _answer(_body(sku, copies))
            if answer != _expected(sku, copies):
                wrong.append((sku, copies, answer))

    threads = [threading.Thread(target=validate, args=(t,)) for t in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert wrong == []
