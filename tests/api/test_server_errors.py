"""Requests gunicorn refuses before Django sees them are answered in the error envelope too.

Gunicorn is started as ``make run`` and ``deploy/`` start it: from the project folder, where it
reads ``gunicorn.conf.py``.
"""

import json
import socket
from collections.abc import Iterator

import pytest

from tests.support.web import gunicorn_serving


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    with gunicorn_serving() as web:
        yield web.port


def exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(raw)
        received = b""
        while chunk := client.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in header_lines)}
    return int(status_line.split()[1]), headers, body


def assert_envelope(status: int, headers: dict[str, str], body: bytes, outcome: str) -> None:
    assert headers["content-type"] == "application/json"
    envelope = json.loads(body)
    assert (envelope["outcome"], envelope["statusCode"]) == (outcome, status)
    assert set(envelope) == {"outcome", "statusCode", "statusText", "data", "traceParent"}
    assert headers["traceparent"] == envelope["traceParent"]


def test_a_request_line_over_the_limit_is_414_in_the_envelope(server: int) -> None:
    raw = b"GET /v4.0/orders?merchantReference=" + b"x" * 9000 + b" HTTP/1.1\r\nHost: a\r\n\r\n"

    status, headers, body = exchange(server, raw)

    assert status == 414
    assert_envelope(status, headers, body, "UriTooLong")


def test_a_header_over_the_limit_is_431_in_the_envelope(server: int) -> None:
    raw = b"GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: " + b"y" * 9000 + b"\r\n\r\n"

    status, headers, body = exchange(server, raw)

    assert status == 431
    assert_envelope(status, headers, body, "RequestHeaderFieldsTooLarge")


def test_a_malformed_request_is_400_in_the_envelope(server: int) -> None:
    status, headers, body = exchange(server, b"GET /healthz HTTP/9.9\r\nHost: a\r\n\r\n")

    assert status == 400
    assert_envelope(status, headers, body, "ValidationFailed")
    assert json.loads(body)["data"]["failures"]["request"][0]["code"] == "ValidationFailed"
