"""Delivery attempts against real local receivers, and the retry schedule."""

import datetime as dt
import email.utils
import json
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from standardwebhooks.webhooks import Webhook
from werkzeug import Request, Response

from merchants.keys import generate_signing_secret
from tests.support.servers import untrusted_tls_server
from webhooks.delivery import (
    MAX_RETRY_AFTER,
    RESPONSE_EXCERPT_CHARS,
    RETRY_DELAYS,
    AttemptResult,
    Outcome,
    deliver,
    next_attempt_at,
    parse_retry_after,
    retry_due_at,
    signed_headers,
)

BODY = json.dumps({"specversion": "1.0", "id": "evt_99", "data": {"order": {"id": "ord_1"}}})
BODY_BYTES = BODY.encode()
NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def private_urls_allowed(settings: Any) -> None:
    settings.ALLOW_PRIVATE_URLS = True


@pytest.fixture
def second_server() -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    yield server
    server.clear()
    if server.is_running():
        server.stop()


def attempt(url: str, secret: str, *, timeout: float = 5.0) -> AttemptResult:
    headers = signed_headers(msg_id="evt_99", secret=secret, body=BODY_BYTES)
    return deliver(url, BODY_BYTES, headers, timeout)


def test_a_2xx_is_delivered_signed_with_the_cloudevents_content_type(
    httpserver: HTTPServer,
) -> None:
    secret = generate_signing_secret()
    httpserver.expect_oneshot_request("/hook", method="POST").respond_with_data(
        "thanks", status=204
    )

    result = attempt(httpserver.url_for("/hook"), secret)

    assert result.outcome is Outcome.DELIVERED
    assert result.status_code == 204
    assert result.error == ""
    (request, _), *others = httpserver.log
    assert others == []
    assert request.get_data() == BODY_BYTES
    assert request.headers["Content-Type"] == "application/cloudevents+json; charset=UTF-8"
    assert request.headers["webhook-id"] == "evt_99"
    assert Webhook(secret).verify(request.get_data(), dict(request.headers)) == json.loads(BODY)


def test_three_500s_then_a_200_give_four_attempts_of_one_message(httpserver: HTTPServer) -> None:
    secret = generate_signing_secret()
    for _ in range(3):
        httpserver.expect_ordered_request("/hook", method="POST").respond_with_data(
            "down", status=500
        )
    httpserver.expect_ordered_request("/hook", method="POST").respond_with_data("ok")

    results = [attempt(httpserver.url_for("/hook"), secret) for _ in range(4)]

    assert [r.outcome for r in results] == [Outcome.RETRY] * 3 + [Outcome.DELIVERED]
    assert [r.status_code for r in results] == [500, 500, 500, 200]
    assert [r.response_excerpt for r in results] == ["down", "down", "down", "ok"]
    assert results[0].error == "HTTP 500"
    requests_seen = [request for request, _ in httpserver.log]
    assert len(requests_seen) == 4
    assert {r.get_data() for r in requests_seen} == {BODY_BYTES}
    assert {r.headers["webhook-id"] for r in requests_seen} == {"evt_99"}
    for request in requests_seen:
        Webhook(secret).verify(request.get_data(), dict(request.headers))
    httpserver.check_assertions()


def test_410_is_gone(httpserver: HTTPServer) -> None:
    httpserver.expect_oneshot_request("/hook").respond_with_data("retired", status=410)

    result = attempt(httpserver.url_for("/hook"), generate_signing_secret())

    assert result == AttemptResult(Outcome.GONE, 410, result.duration_ms, "retired")
    assert retry_due_at(result, 1, NOW, random.Random(1)) is None


def test_a_302_is_a_failure_and_its_target_is_never_fetched(
    httpserver: HTTPServer, second_server: HTTPServer
) -> None:
    second_server.expect_request("/elsewhere").respond_with_data("should not be reached")
    httpserver.expect_oneshot_request("/hook").respond_with_data(
        "", status=302, headers={"Location": second_server.url_for("/elsewhere")}
    )

    result = attempt(httpserver.url_for("/hook"), generate_signing_secret())

    assert result.outcome is Outcome.RETRY
    assert result.status_code == 302
    assert result.error == "HTTP 302 (redirects are not followed)"
    assert len(httpserver.log) == 1
    assert second_server.log == []


def test_a_slow_receiver_times_out_and_is_retried(httpserver: HTTPServer) -> None:
    def slow(request: Request) -> Response:
        time.sleep(1.0)
        return Response("late")

    httpserver.expect_oneshot_request("/hook").respond_with_handler(slow)

    started = time.monotonic()
    result = attempt(httpserver.url_for("/hook"), generate_signing_secret(), timeout=0.3)
    elapsed = time.monotonic() - started

    assert result.outcome is Outcome.RETRY
    assert result.status_code is None
    assert "timed out" in result.error
    assert elapsed < 0.9
    assert 250 <= result.duration_ms < 900
    assert retry_due_at(result, 1, NOW, random.Random(1)) is not None


def test_a_closed_port_is_retried(second_server: HTTPServer) -> None:
    url = second_server.url_for("/hook")
    second_server.stop()

    result = attempt(url, generate_signing_secret())

    assert result.outcome is Outcome.RETRY
    assert result.status_code is None
    assert "Could not connect" in result.error


def test_a_receiver_whose_certificate_is_not_trusted_is_a_failed_attempt_retried() -> None:
    with untrusted_tls_server() as server:
        url = server.url_for("/hook")

        result = attempt(url, generate_signing_secret())

        assert server.log == []
    assert result.outcome is Outcome.RETRY
    assert result.status_code is None
    assert result.error == (
        f"The TLS connection to '127.0.0.1' for {url} failed: its certificate could not be "
        "verified (self-signed certificate)."
    )
    assert retry_due_at(result, 1, NOW, random.Random(1)) is not None


def test_429_with_retry_after_seconds_is_honoured(httpserver: HTTPServer) -> None:
    httpserver.expect_oneshot_request("/hook").respond_with_data(
        "slow down", status=429, headers={"Retry-After": "7200"}
    )

    result = attempt(httpserver.url_for("/hook"), generate_signing_secret())

    assert result.outcome is Outcome.RETRY_AFTER
    assert result.status_code == 429
    assert result.retry_after == dt.timedelta(hours=2)
    assert retry_due_at(result, 1, NOW, random.Random(1)) == NOW + dt.timedelta(hours=2)


def test_429_with_retry_after_as_an_http_date_is_honoured(httpserver: HTTPServer) -> None:
    later = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=30)
    httpserver.expect_oneshot_request("/hook").respond_with_data(
        "", status=429, headers={"Retry-After": email.utils.format_datetime(later, usegmt=True)}
    )

    result = attempt(httpserver.url_for("/hook"), generate_signing_secret())

    assert result.outcome is Outcome.RETRY_AFTER
    assert result.retry_after is not None
    assert dt.timedelta(minutes=29) < result.retry_after <= dt.timedelta(minutes=30)


def test_429_without_retry_after_follows_the_schedule(httpserver: HTTPServer) -> None:
    httpserver.expect_oneshot_request("/hook").respond_with_data("", status=429)

    result = attempt(httpserver.url_for("/hook"), generate_signing_secret())

    assert result.outcome is Outcome.RETRY
    assert result.retry_after is None


def test_a_short_retry_after_does_not_bring_the_schedule_forward() -> None:
    result = AttemptResult(Outcome.RETRY_AFTER, 429, 5, retry_after=dt.timedelta(seconds=1))

    due = retry_due_at(result, 3, NOW, random.Random(1))

    assert due == next_attempt_at(3, NOW, random.Random(1))
    assert due is not None and due - NOW >= dt.timedelta(minutes=9)


def test_the_retry_scale_shortens_every_delay_alike(settings: Any) -> None:
    settings.CALLBACK_RETRY_SCALE = 0.001
    rng, same = random.Random(7), random.Random(7)

    dues = [next_attempt_at(n, NOW, rng) for n in range(1, len(RETRY_DELAYS) + 2)]

    assert dues == [
        *(NOW + delay * (0.001 * same.uniform(0.9, 1.1)) for delay in RETRY_DELAYS),
        None,
    ]
    assert dues[0] is not None and dues[0] - NOW < dt.timedelta(seconds=0.04)


def test_a_private_address_is_not_sent_to_and_answered_as_an_unknown_host_is(
    httpserver: HTTPServer, settings: Any
) -> None:
    settings.ALLOW_PRIVATE_URLS = False

    result = attempt(httpserver.url_for("/hook"), generate_signing_secret())
    unknown = attempt("http://no-such-host.invalid/hook", generate_signing_secret())

    assert result.outcome is unknown.outcome is Outcome.RETRY
    assert result.status_code is None
    assert result.error == unknown.error.replace("no-such-host.invalid", "localhost").replace(
        "/hook", f":{httpserver.port}/hook"
    )
    assert "the host cannot be reached from the service" in result.error
    assert httpserver.log == []
    assert retry_due_at(result, 1, NOW, random.Random(1)) is not None


def test_the_response_excerpt_is_cut_at_2048_characters(httpserver: HTTPServer) -> None:
    # The dashboard's callback log shows the receiver's answer: its first 2 KB.
    assert RESPONSE_EXCERPT_CHARS == 2048
    httpserver.expect_oneshot_request("/hook").respond_with_data("é" * 3000, status=503)

    result = attempt(httpserver.url_for("/hook"), generate_signing_secret())

    assert result.outcome is Outcome.RETRY
    assert result.response_excerpt == "é" * RESPONSE_EXCERPT_CHARS


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ("soon", None),
        ("0", dt.timedelta(0)),
        ("120", dt.timedelta(seconds=120)),
        ("999999999", MAX_RETRY_AFTER),
        ("\u00b2", None),  # a superscript two: a digit to str.isdigit, no number
        ("\uff11\uff12", None),  # full-width digits
        ("Sat, 21 Nov 2026 12:10:00 GMT", dt.timedelta(minutes=10)),
        ("Sat, 21 Nov 2026 11:00:00 GMT", dt.timedelta(0)),
    ],
)
def test_parse_retry_after(header: str | None, expected: dt.timedelta | None) -> None:
    assert parse_retry_after(header, now=NOW) == expected


def test_the_schedule_lasts_about_three_days_with_jitter_then_gives_up() -> None:
    class Lowest(random.Random):
        def uniform(self, a: float, b: float) -> float:
            return a

    class Highest(random.Random):
        def uniform(self, a: float, b: float) -> float:
            return b

    def total(rng: random.Random) -> dt.timedelta:
        moment, number = NOW, 1
        while (due := next_attempt_at(number, moment, rng)) is not None:
            moment, number = due, number + 1
        assert number == len(RETRY_DELAYS) + 1 == 11
        return moment - NOW

    assert sum(RETRY_DELAYS, dt.timedelta()) == dt.timedelta(hours=70, minutes=42, seconds=30)
    assert total(Lowest()) == sum(RETRY_DELAYS, dt.timedelta()) * 0.9
    assert total(Highest()) == sum(RETRY_DELAYS, dt.timedelta()) * 1.1
    assert dt.timedelta(hours=63) < total(random.Random(7)) < dt.timedelta(hours=78)


def test_the_first_retry_comes_after_about_30_seconds_and_jitter_varies() -> None:
    rng = random.Random(42)
    firsts = {next_attempt_at(1, NOW, rng) for _ in range(20)}

    assert len(firsts) == 20
    for due in firsts:
        assert due is not None
        assert dt.timedelta(seconds=27) <= due - NOW <= dt.timedelta(seconds=33)
    assert next_attempt_at(11, NOW, rng) is None
    with pytest.raises(ValueError):
        next_attempt_at(0, NOW, rng)
