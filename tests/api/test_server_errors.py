"""Requests gunicorn refuses before Django sees them are answered in the error envelope too.

Gunicorn is started as ``make run`` and ``deploy/`` start it: from the project folder, where it
reads ``gunicorn.conf.py``.
"""

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    gunicorn = Path(sys.executable).parent / "gunicorn"
    process = subprocess.Popen(
        [str(gunicorn), "config.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("gunicorn did not start") from None
                time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)


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
