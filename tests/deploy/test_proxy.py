"""The production topology (deploy/): nginx from the project's config in front of gunicorn.

Gunicorn's sync workers serve one connection each from its first byte to its last, so a few
clients that send their headers slowly take every worker. nginx reads each request whole
before gunicorn sees it, so behind it the same clients cost gunicorn nothing.
"""

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support.proxy import needs_nginx, nginx_serving, slow_clients
from tests.support.web import Web, gunicorn_serving

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
TRACE = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")
SLOW_CLIENTS = 10
PROBE = "/v4.0/nothing"


@pytest.fixture(scope="module")
def web(django_db_setup: None) -> Iterator[Web]:
    """Two sync workers (gunicorn's default class, as deploy/programs/web.conf runs it)."""
    with gunicorn_serving(workers=2) as served:
        yield served


@pytest.fixture
def proxy(web: Web, tmp_path: Path) -> Iterator[int]:
    with nginx_serving(web.port, tmp_path / "nginx") as port:
        yield port


def healthz(port: int, timeout: float) -> requests.Response:
    return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=timeout)


@needs_nginx
@pytest.mark.parametrize("part", ["header", "body"])
def test_healthz_answers_through_nginx_while_ten_slow_clients_hold_connections(
    proxy: int, part: str
) -> None:
    assert healthz(proxy, timeout=10).status_code == 200

    with slow_clients(proxy, SLOW_CLIENTS, part=part):
        answers = []
        for _ in range(5):
            started = time.monotonic()
            response = healthz(proxy, timeout=5)
            answers.append((response.status_code, time.monotonic() - started))
            time.sleep(0.5)

    assert [status for status, _ in answers] == [200] * 5
    assert max(seconds for _, seconds in answers) < 2


@pytest.mark.parametrize("part", ["header", "body"])
def test_ten_slow_clients_starve_bare_gunicorn(web: Web, part: str) -> None:
    assert healthz(web.port, timeout=10).status_code == 200

    with (
        slow_clients(web.port, SLOW_CLIENTS, part=part),
        pytest.raises(requests.exceptions.Timeout),
    ):
        healthz(web.port, timeout=3)

    # Once they leave, gunicorn answers again.
    assert healthz(web.port, timeout=10).status_code == 200


def exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``raw`` and read one response (its head, then Content-Length bytes of body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(raw)
        received = b""
        while b"\r\n\r\n" not in received:
            received += client.recv(65536) or b"\r\n\r\n"
        head, _, body = received.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in header_lines)}
        while len(body) < int(headers.get("content-length", 0)):
            body += client.recv(65536) or b" "
    return int(status_line.split()[1]), headers, body


@needs_nginx
@pytest.mark.parametrize(
    ("raw", "status", "outcome", "data"),
    [
        (b"GET /" + b"x" * 9000 + b" HTTP/1.1\r\nHost: a\r\n\r\n", 414, "UriTooLong", {}),
        (
            b"GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: " + b"y" * 9000 + b"\r\n\r\n",
            431,
            "RequestHeaderFieldsTooLarge",
            {},
        ),
        (b"NOT HTTP AT ALL\r\n\r\n", 400, "ValidationFailed", {}),
        (
            b"POST /v4.0/orders HTTP/1.1\r\nHost: a\r\nContent-Length: 30000000\r\n\r\n",
            413,
            "PayloadTooLarge",
            {"maxBytes": 2_621_440},
        ),
        (
            b"POST /admin/ HTTP/1.1\r\nHost: a\r\nContent-Length: 30000000\r\n\r\n",
            413,
            "PayloadTooLarge",
            {"maxBytes": 20_971_520},
        ),
        (
            b"GET /_errors/not_found HTTP/1.1\r\nHost: a\r\n\r\n",
            404,
            "EndpointDoesNotExist",
            {},
        ),
    ],
    ids=["request-line", "header", "malformed", "api-body", "body", "nginx-path"],
)
def test_what_nginx_refuses_itself_is_answered_in_the_error_envelope(
    proxy: int, raw: bytes, status: int, outcome: str, data: dict[str, int]
) -> None:
    answered, headers, body = exchange(proxy, raw)

    assert answered == status
    assert headers["content-type"] == "application/json"
    envelope = json.loads(body)
    assert set(envelope) == {"outcome", "statusCode", "statusText", "data", "traceParent"}
    assert (envelope["outcome"], envelope["statusCode"], envelope["data"]) == (
        outcome,
        status,
        data,
    )
    assert TRACE.match(envelope["traceParent"])
    assert headers["traceparent"] == envelope["traceParent"]


@needs_nginx
def test_with_gunicorn_down_nginx_answers_503_in_the_envelope(tmp_path: Path) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        nothing_there = unused.getsockname()[1]
    with nginx_serving(nothing_there, tmp_path / "nginx") as port:
        response = healthz(port, timeout=10)

    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"
    body = response.json()
    assert (body["outcome"], body["statusCode"]) == ("ServiceUnavailable", 503)
    assert response.headers["traceParent"] == body["traceParent"]


@needs_nginx
def test_the_services_own_answers_pass_through_unchanged(proxy: int) -> None:
    response = requests.get(f"http://127.0.0.1:{proxy}{PROBE}", timeout=10)

    assert response.status_code == 404
    body = response.json()
    assert body["outcome"] == "EndpointDoesNotExist"
    assert body["statusText"] == "The endpoint does not exist."
    assert body["data"] == {"path": PROBE}


# The service refuses an API body over Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MiB) with 413;
# nginx takes bodies up to 20 MB for the back-office. Sizes from just over the first to just
# under the second, several tries each: to an endpoint that reads its body without a key and to
# one that asks for a key first, in both spellings of the path, chunked too.
OVERSIZED = [2_621_441, 2_700_000, 5_000_000, 10_000_000, 19_000_000]
PATHS = ["/v4.0/registration/complete", "/V4.0/Orders", "/v4.0/Registration/Complete"]
TRIES = 6


@needs_nginx
@pytest.mark.parametrize("size", OVERSIZED)
def test_every_api_body_over_the_limit_is_answered_413_in_the_envelope(
    proxy: int, size: int
) -> None:
    body = b"{" + b" " * (size - 2) + b"}"
    answers = []
    for attempt in range(TRIES):
        path = PATHS[attempt % len(PATHS)]
        chunked = attempt % 4 == 3
        response = requests.post(
            f"http://127.0.0.1:{proxy}{path}",
            data=iter([body[: size // 2], body[size // 2 :]]) if chunked else body,
            headers={"Content-Type": "application/json"},
            timeout=30,
        )
        envelope = response.json()
        answers.append(
            (response.status_code, envelope["outcome"], envelope["statusCode"], envelope["data"])
        )

    limit = {"maxBytes": 2_621_440}
    assert answers == [(413, "PayloadTooLarge", 413, limit)] * TRIES


@needs_nginx
def test_an_api_body_at_the_limit_reaches_the_service(proxy: int) -> None:
    body = b"{" + b" " * (2_621_440 - 2) + b"}"

    response = requests.post(
        f"http://127.0.0.1:{proxy}/v4.0/orders",
        data=body,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )

    assert (response.status_code, response.json()["outcome"]) == (401, "Unauthorized")
