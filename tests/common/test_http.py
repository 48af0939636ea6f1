"""The guarded outbound client against real local servers (pytest-httpserver)."""

import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from pytest_httpserver import HTTPServer
from requests_hardened import Config, HTTPSession
from werkzeug import Request, Response

from common.http import (
    DownloadedFile,
    OutboundError,
    OutboundRefused,
    Pace,
    TransferTooSlow,
    borrowed_session,
    download_to_file,
    guarded_session,
    post_json_bytes,
    unreachable_error,
)
from tests.support.servers import DripHost, untrusted_tls_server

PAYLOAD = bytes(range(256)) * 400  # 102400 bytes


@pytest.fixture
def private_urls_allowed(settings) -> None:
    settings.ALLOW_PRIVATE_URLS = True


class KeepAliveHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 with persistent connections (werkzeug's test server closes each one)."""

    protocol_version = "HTTP/1.1"
    client_ports: list[int] = []

    def _answer(self) -> None:
        self.client_ports.append(self.client_address[1])
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = PAYLOAD if self.path == "/a" else b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def keep_alive_server() -> Iterator[tuple[str, list[int]]]:
    ports: list[int] = []
    handler = type("Handler", (KeepAliveHandler,), {"client_ports": ports})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", ports
    server.shutdown()
    server.server_close()


@pytest.fixture
def second_server() -> Iterator[HTTPServer]:
    """Another server on all interfaces, so it is reachable on a private address as well."""
    server = HTTPServer(host="0.0.0.0", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


def outward_private_address() -> str:
    """This machine's non-loopback address (the one a packet to the internet leaves from)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.123", 9))
        address = str(probe.getsockname()[0])
    except OSError:
        pytest.skip("this machine has no non-loopback IPv4 address")
    finally:
        probe.close()
    if address.startswith("127."):
        pytest.skip("this machine has no non-loopback IPv4 address")
    return address


def loopback_only_session() -> HTTPSession:
    """requests-hardened's own filter, letting loopback through but no other private range."""
    session = HTTPSession(
        Config(
            ip_filter_enable=True,
            ip_filter_allow_loopback_ips=True,
            never_redirect=True,
            default_timeout=(5, 5),
        )
    )
    session.trust_env = False
    return session


# --- the address guard ----------------------------------------------------------------------

# A host that cannot be reached: whether its name does not resolve or resolves to an address
# never connected to, the same words.
UNREACHABLE = "the host cannot be reached from the service"


def test_a_name_that_does_not_resolve_is_answered_as_a_refused_address_is(
    settings, tmp_path: Path
) -> None:
    settings.ALLOW_PRIVATE_URLS = False
    answers = []
    for url in ("http://no-such-host.invalid/a.jpg", "http://localhost:8/a.jpg"):
        with pytest.raises(OutboundError) as failed:
            download_to_file(url, tmp_path / "a.jpg", max_bytes=10, deadline_seconds=5)
        answers.append((str(failed.value), failed.value.retryable))

    assert answers == [
        (
            "Could not reach 'no-such-host.invalid' for http://no-such-host.invalid/a.jpg: the "
            "host cannot be reached from the service (its name does not resolve to a public "
            "internet address).",
            True,
        ),
        (
            "Could not reach 'localhost' for http://localhost:8/a.jpg: the host cannot be "
            "reached from the service (its name does not resolve to a public internet "
            "address).",
            True,
        ),
    ]


@pytest.mark.parametrize(
    ("url", "described_as"),
    [
        ("http://127.0.0.1:{port}/a.jpg", "a loopback address (127.0.0.1)"),
        ("http://localhost:{port}/a.jpg", "a loopback address"),
        ("http://[::1]:{port}/a.jpg", "a loopback address (::1)"),
        ("http://10.1.2.3:{port}/a.jpg", "a private or internal address (10.1.2.3)"),
        ("http://192.168.0.10:{port}/a.jpg", "a private or internal address (192.168.0.10)"),
        ("http://169.254.169.254/latest/meta-data/", "a cloud metadata address (169.254.169.254)"),
        ("http://100.100.100.200/", "a cloud metadata address (100.100.100.200)"),
        ("http://224.0.0.1/", "a multicast address (224.0.0.1)"),
        ("http://0.0.0.0:{port}/", "a reserved address (0.0.0.0)"),
    ],
)
def test_download_refuses_internal_addresses_when_private_urls_are_off(
    settings, httpserver: HTTPServer, tmp_path: Path, url: str, described_as: str
) -> None:
    settings.ALLOW_PRIVATE_URLS = False
    httpserver.expect_request("/a.jpg").respond_with_data(PAYLOAD)
    destination = tmp_path / "a.jpg"

    with pytest.raises(OutboundError) as refused:
        download_to_file(
            url.format(port=httpserver.port),
            destination,
            max_bytes=10**6,
            deadline_seconds=5,
        )

    # Nothing about where the host points: the answer of a name that does not resolve.
    host = urlsplit(url).hostname or ""
    assert str(refused.value) == unreachable_error(url.format(port=httpserver.port), host).args[0]
    assert refused.value.retryable is True
    assert httpserver.log == []
    assert not destination.exists()


def test_download_reaches_loopback_when_private_urls_are_allowed(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/a.jpg").respond_with_data(PAYLOAD, content_type="image/jpeg")

    downloaded = download_to_file(
        httpserver.url_for("/a.jpg"), tmp_path / "a.jpg", max_bytes=10**6, deadline_seconds=5
    )

    assert downloaded == DownloadedFile(
        path=tmp_path / "a.jpg",
        size=len(PAYLOAD),
        md5=hashlib.md5(PAYLOAD).hexdigest(),
        content_type="image/jpeg",
    )
    assert (tmp_path / "a.jpg").read_bytes() == PAYLOAD


def test_guarded_session_keeps_the_setting_it_was_created_with(
    settings, httpserver: HTTPServer, tmp_path: Path
) -> None:
    settings.ALLOW_PRIVATE_URLS = False
    session = guarded_session()
    settings.ALLOW_PRIVATE_URLS = True
    httpserver.expect_request("/a.jpg").respond_with_data(PAYLOAD)

    with pytest.raises(OutboundError, match=UNREACHABLE):
        download_to_file(
            httpserver.url_for("/a.jpg"),
            tmp_path / "a.jpg",
            max_bytes=10**6,
            deadline_seconds=5,
            session=session,
        )
    assert httpserver.log == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file:///etc/passwd", "only http and https URLs can be fetched"),
        ("ftp://example.com/a.jpg", "only http and https URLs can be fetched"),
        ("gopher://127.0.0.1:70/", "only http and https URLs can be fetched"),
        ("http:///a.jpg", "the URL has no host"),
        ("http://user:secret@example.com/a.jpg", "URLs with credentials are not fetched"),
        ("http://example.com:99999/a.jpg", "is not a valid URL"),
        ("http://example.com:0/a.jpg", "port 0 cannot be connected to"),
    ],
)
def test_download_refuses_other_schemes_and_malformed_urls(
    private_urls_allowed: None, tmp_path: Path, url: str, message: str
) -> None:
    with pytest.raises(OutboundRefused) as refused:
        download_to_file(url, tmp_path / "a.jpg", max_bytes=10**6, deadline_seconds=5)

    assert message in str(refused.value)


# --- redirects ------------------------------------------------------------------------------


def test_download_follows_redirects_to_allowed_addresses(
    private_urls_allowed: None,
    httpserver: HTTPServer,
    second_server: HTTPServer,
    tmp_path: Path,
) -> None:
    target = f"http://127.0.0.1:{second_server.port}/stored/a.png"
    httpserver.expect_request("/a.png").respond_with_data(
        "", status=302, headers={"Location": target}
    )
    second_server.expect_request("/stored/a.png").respond_with_data(PAYLOAD)

    downloaded = download_to_file(
        httpserver.url_for("/a.png"), tmp_path / "a.png", max_bytes=10**6, deadline_seconds=5
    )

    assert downloaded.size == len(PAYLOAD)
    assert len(httpserver.log) == 1
    assert len(second_server.log) == 1


def test_download_follows_relative_redirects(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/old").respond_with_data(
        "", status=301, headers={"Location": "/new"}
    )
    httpserver.expect_request("/new").respond_with_data(PAYLOAD)

    downloaded = download_to_file(
        httpserver.url_for("/old"), tmp_path / "a", max_bytes=10**6, deadline_seconds=5
    )

    assert downloaded.md5 == hashlib.md5(PAYLOAD).hexdigest()
    assert [request.path for request, _ in httpserver.log] == ["/old", "/new"]


def test_redirect_to_a_refused_address_is_refused_and_never_fetched(
    httpserver: HTTPServer, second_server: HTTPServer, tmp_path: Path
) -> None:
    private_address = outward_private_address()
    target = f"http://{private_address}:{second_server.port}/internal/secret"
    httpserver.expect_request("/a.jpg").respond_with_data(
        "", status=302, headers={"Location": target}
    )
    second_server.expect_request("/internal/secret").respond_with_data(b"secret")

    with pytest.raises(OutboundError) as refused:
        download_to_file(
            f"http://127.0.0.1:{httpserver.port}/a.jpg",
            tmp_path / "a.jpg",
            max_bytes=10**6,
            deadline_seconds=5,
            session=loopback_only_session(),
        )

    assert UNREACHABLE in str(refused.value)
    assert len(httpserver.log) == 1
    assert second_server.log == []
    assert not (tmp_path / "a.jpg").exists()


def test_redirect_to_another_scheme_is_refused(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/a.jpg").respond_with_data(
        "", status=302, headers={"Location": "file:///etc/passwd"}
    )

    with pytest.raises(OutboundRefused, match="only http and https"):
        download_to_file(
            httpserver.url_for("/a.jpg"), tmp_path / "a.jpg", max_bytes=10**6, deadline_seconds=5
        )


def test_download_stops_after_max_redirects(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    for hop in range(5):
        httpserver.expect_request(f"/hop{hop}").respond_with_data(
            "", status=302, headers={"Location": f"/hop{hop + 1}"}
        )

    with pytest.raises(OutboundError) as failed:
        download_to_file(
            httpserver.url_for("/hop0"),
            tmp_path / "a",
            max_bytes=10**6,
            deadline_seconds=5,
            max_redirects=2,
        )

    assert str(failed.value) == "The download was redirected more than 2 times."
    assert failed.value.retryable is False
    assert [request.path for request, _ in httpserver.log] == ["/hop0", "/hop1", "/hop2"]


# --- statuses, size, deadline ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(404, False), (403, False), (410, False), (408, True), (429, True), (500, True), (503, True)],
)
def test_download_status_errors_name_the_status_and_classify_retries(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path, status: int, retryable: bool
) -> None:
    httpserver.expect_request("/a.jpg").respond_with_data("nope", status=status)

    with pytest.raises(OutboundError) as failed:
        download_to_file(
            httpserver.url_for("/a.jpg") + "?token=secret",
            tmp_path / "a.jpg",
            max_bytes=10**6,
            deadline_seconds=5,
        )

    assert str(failed.value).startswith(f"The server answered HTTP {status} ")
    assert f"for {httpserver.url_for('/a.jpg')}." in str(failed.value)
    assert "secret" not in str(failed.value)
    assert failed.value.status_code == status
    assert failed.value.retryable is retryable
    assert not (tmp_path / "a.jpg").exists()


def test_download_refuses_a_declared_length_over_the_cap_before_reading(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/big").respond_with_data(PAYLOAD)

    with pytest.raises(OutboundError) as failed:
        download_to_file(
            httpserver.url_for("/big"), tmp_path / "big", max_bytes=1000, deadline_seconds=5
        )

    assert str(failed.value) == (
        "The file is too large: the limit is 1000 bytes and the server declares 102400 bytes."
    )
    assert failed.value.retryable is False
    assert not (tmp_path / "big").exists()
    assert not (tmp_path / "big.part").exists()


def test_download_stops_an_undeclared_body_at_the_cap(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    def endless(_request: Request) -> Response:
        def body() -> Iterator[bytes]:
            for _ in range(1000):
                yield b"x" * 10_000

        return Response(body(), mimetype="image/jpeg")  # chunked: no Content-Length

    httpserver.expect_request("/big").respond_with_handler(endless)

    with pytest.raises(OutboundError) as failed:
        download_to_file(
            httpserver.url_for("/big"), tmp_path / "big", max_bytes=50_000, deadline_seconds=5
        )

    assert str(failed.value) == (
        "The file is too large: the limit is 50000 bytes and the body is longer."
    )
    assert not (tmp_path / "big").exists()
    assert not (tmp_path / "big.part").exists()


def test_download_accepts_a_body_exactly_at_the_cap(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/a").respond_with_data(PAYLOAD)

    downloaded = download_to_file(
        httpserver.url_for("/a"), tmp_path / "a", max_bytes=len(PAYLOAD), deadline_seconds=5
    )

    assert downloaded.size == len(PAYLOAD)


def test_download_enforces_a_total_deadline_against_a_dribbling_server(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    def dribble(_request: Request) -> Response:
        def body() -> Iterator[bytes]:
            for _ in range(40):
                yield b"x"
                time.sleep(0.1)  # every byte arrives well within any per-read timeout

        return Response(body(), mimetype="image/jpeg", headers={"Content-Length": "40"})

    httpserver.expect_request("/slow").respond_with_handler(dribble)
    started = time.monotonic()

    with pytest.raises(OutboundError) as failed:
        download_to_file(
            httpserver.url_for("/slow"), tmp_path / "slow", max_bytes=10**6, deadline_seconds=1.0
        )

    elapsed = time.monotonic() - started
    assert 0.9 < elapsed < 1.6
    assert str(failed.value).startswith(
        f"Reading {httpserver.url_for('/slow')} did not finish within 1 seconds ("
    )
    assert failed.value.retryable is True
    assert not (tmp_path / "slow").exists()


def test_download_enforces_the_deadline_when_the_server_stalls_after_headers(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    def stall(_request: Request) -> Response:
        def body() -> Iterator[bytes]:
            yield b"x"
            time.sleep(2)
            yield b"y"

        return Response(body(), headers={"Content-Length": "2"})

    httpserver.expect_request("/stall").respond_with_handler(stall)
    started = time.monotonic()

    with pytest.raises(OutboundError, match=r"did not finish within 0\.5 seconds"):
        download_to_file(
            httpserver.url_for("/stall"), tmp_path / "s", max_bytes=10**6, deadline_seconds=0.5
        )

    assert time.monotonic() - started < 1.0


def test_a_paced_download_that_falls_behind_stops_at_its_check_not_at_the_deadline(
    private_urls_allowed: None, tmp_path: Path
) -> None:
    with DripHost(interval=0.1) as host:  # ten bytes a second, headers at once
        url = host.url("/slow.jpg")
        started = time.monotonic()

        with pytest.raises(TransferTooSlow) as failed:
            download_to_file(
                url,
                tmp_path / "slow",
                max_bytes=10**6,
                deadline_seconds=30.0,
                pace=Pace(check_seconds=1.0, min_bytes_per_second=100),
            )

        elapsed = time.monotonic() - started
    assert 0.95 < elapsed < 3.0
    assert str(failed.value).startswith(f"Reading {url} was too slow: ")
    assert failed.value.retryable is True
    assert not (tmp_path / "slow").exists()


def test_a_paced_download_whose_answer_does_not_begin_stops_at_its_check(
    private_urls_allowed: None, tmp_path: Path
) -> None:
    with socket.socket() as listener:  # connections are taken, never answered
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/late.jpg"
        started = time.monotonic()

        with pytest.raises(TransferTooSlow, match=r"did not begin to answer within 1 seconds"):
            download_to_file(
                url,
                tmp_path / "late",
                max_bytes=10**6,
                deadline_seconds=30.0,
                pace=Pace(check_seconds=1.0, min_bytes_per_second=100),
            )

    assert time.monotonic() - started < 3.0


def test_a_paced_download_that_keeps_its_pace_is_checked_and_completes(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    def steady(_request: Request) -> Response:
        def body() -> Iterator[bytes]:
            for _ in range(25):
                yield PAYLOAD[:4096]
                time.sleep(0.1)  # 40 KB a second, past two checks

        return Response(body(), mimetype="image/jpeg", headers={"Content-Length": str(25 * 4096)})

    httpserver.expect_request("/steady").respond_with_handler(steady)

    downloaded = download_to_file(
        httpserver.url_for("/steady"),
        tmp_path / "steady",
        max_bytes=10**6,
        deadline_seconds=30.0,
        pace=Pace(check_seconds=1.0, min_bytes_per_second=1000),
    )

    assert downloaded.size == 25 * 4096
    assert (tmp_path / "steady").read_bytes() == PAYLOAD[:4096] * 25


def test_connection_refused_is_retryable(private_urls_allowed: None, tmp_path: Path) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]

    with pytest.raises(OutboundError) as failed:
        download_to_file(
            f"http://127.0.0.1:{port}/a.jpg", tmp_path / "a", max_bytes=10, deadline_seconds=5
        )

    assert str(failed.value).startswith(
        f"Could not connect to '127.0.0.1' for http://127.0.0.1:{port}/a.jpg:"
    )
    assert "Connection refused" in str(failed.value)
    assert failed.value.retryable is True


def test_an_untrusted_certificate_at_an_asset_host_is_a_retryable_tls_error(
    private_urls_allowed: None, tmp_path: Path
) -> None:
    with untrusted_tls_server() as server:
        server.expect_request("/a.jpg").respond_with_data(PAYLOAD)
        url = server.url_for("/a.jpg")

        with pytest.raises(OutboundError) as failed:
            download_to_file(url, tmp_path / "a", max_bytes=len(PAYLOAD), deadline_seconds=5)

        assert server.log == []
    assert type(failed.value) is OutboundError
    assert str(failed.value) == (
        f"The TLS connection to '127.0.0.1' for {url} failed: its certificate could not be "
        "verified (self-signed certificate)."
    )
    assert failed.value.retryable is True
    assert not (tmp_path / "a").exists()


def test_a_server_that_does_not_speak_tls_is_a_retryable_tls_error(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    url = httpserver.url_for("/a.jpg").replace("http://", "https://")

    with pytest.raises(OutboundError) as failed:
        download_to_file(url, tmp_path / "a", max_bytes=10, deadline_seconds=5)

    assert str(failed.value) == (
        f"The TLS connection to '{urlsplit(url).hostname}' for {url} failed: the TLS handshake "
        "failed (WRONG_VERSION_NUMBER)."
    )
    assert failed.value.retryable is True


def test_download_md5_is_computed_over_the_streamed_bytes(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    def chunked(_request: Request) -> Response:
        return Response(iter([PAYLOAD[:1000], PAYLOAD[1000:70_000], PAYLOAD[70_000:]]))

    httpserver.expect_request("/a").respond_with_handler(chunked)

    downloaded = download_to_file(
        httpserver.url_for("/a"), tmp_path / "nested" / "a", max_bytes=10**6, deadline_seconds=5
    )

    assert downloaded.md5 == hashlib.md5(PAYLOAD).hexdigest()
    assert downloaded.size == len(PAYLOAD)
    assert hashlib.md5(downloaded.path.read_bytes()).hexdigest() == downloaded.md5


def test_download_without_md5_saves_the_same_bytes_and_no_hash(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/a").respond_with_data(PAYLOAD, content_type="image/jpeg")

    downloaded = download_to_file(
        httpserver.url_for("/a"), tmp_path / "a", max_bytes=10**6, deadline_seconds=5, md5=False
    )

    assert downloaded == DownloadedFile(
        path=tmp_path / "a", size=len(PAYLOAD), md5=None, content_type="image/jpeg"
    )
    assert (tmp_path / "a").read_bytes() == PAYLOAD


# --- callbacks ------------------------------------------------------------------------------


def test_post_json_bytes_sends_the_exact_bytes_and_returns_any_status(
    private_urls_allowed: None, httpserver: HTTPServer
) -> None:
    body = json.dumps({"id": "evt_1", "data": {"é": 1}}, ensure_ascii=False).encode()
    httpserver.expect_request("/hook", method="POST").respond_with_data("gone", status=410)
    session = guarded_session()

    response = post_json_bytes(
        session,
        httpserver.url_for("/hook"),
        body,
        {"Content-Type": "application/cloudevents+json; charset=UTF-8", "webhook-id": "evt_1"},
        5.0,
    )

    assert response.status_code == 410
    assert response.content == b"gone"
    request, _ = httpserver.log[0]
    assert request.get_data() == body
    assert request.headers["Content-Type"] == "application/cloudevents+json; charset=UTF-8"
    assert request.headers["webhook-id"] == "evt_1"


def test_post_json_bytes_follows_no_redirect(
    private_urls_allowed: None, httpserver: HTTPServer, second_server: HTTPServer
) -> None:
    httpserver.expect_request("/hook", method="POST").respond_with_data(
        "", status=307, headers={"Location": second_server.url_for("/elsewhere")}
    )

    response = post_json_bytes(guarded_session(), httpserver.url_for("/hook"), b"{}", {}, 5.0)

    assert response.status_code == 307
    assert second_server.log == []


def test_post_json_bytes_refuses_private_addresses(settings, httpserver: HTTPServer) -> None:
    settings.ALLOW_PRIVATE_URLS = False

    with pytest.raises(OutboundError, match=UNREACHABLE):
        post_json_bytes(guarded_session(), httpserver.url_for("/hook"), b"{}", {}, 5.0)

    assert httpserver.log == []


def test_post_json_bytes_to_an_untrusted_certificate_is_a_retryable_tls_error(
    private_urls_allowed: None,
) -> None:
    with untrusted_tls_server() as server:
        url = server.url_for("/hook")

        with pytest.raises(OutboundError) as failed:
            post_json_bytes(guarded_session(), url, b"{}", {}, 5.0)

        assert server.log == []
    assert str(failed.value) == (
        f"The TLS connection to '127.0.0.1' for {url} failed: its certificate could not be "
        "verified (self-signed certificate)."
    )
    assert failed.value.retryable is True


def test_post_json_bytes_keeps_only_the_start_of_a_huge_answer(
    private_urls_allowed: None, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/hook", method="POST").respond_with_data(b"a" * 1_000_000)

    response = post_json_bytes(guarded_session(), httpserver.url_for("/hook"), b"{}", {}, 5.0)

    assert response.status_code == 200
    assert response.content == b"a" * 65_536


def test_post_json_bytes_times_out_as_a_retryable_error(
    private_urls_allowed: None, httpserver: HTTPServer
) -> None:
    def slow(_request: Request) -> Response:
        time.sleep(1.0)
        return Response("late")

    httpserver.expect_request("/hook", method="POST").respond_with_handler(slow)

    with pytest.raises(OutboundError) as failed:
        post_json_bytes(guarded_session(), httpserver.url_for("/hook"), b"{}", {}, 0.3)

    assert str(failed.value) == (
        f"Requesting {httpserver.url_for('/hook')} timed out (no answer from 'localhost')."
    )
    assert failed.value.retryable is True


def test_one_session_reuses_its_connection_for_callbacks_and_downloads(
    private_urls_allowed: None, keep_alive_server: tuple[str, list[int]], tmp_path: Path
) -> None:
    base_url, client_ports = keep_alive_server
    session = guarded_session()

    post_json_bytes(session, f"{base_url}/hook", b"{}", {}, 5.0)
    download_to_file(
        f"{base_url}/a", tmp_path / "a", max_bytes=10**6, deadline_seconds=5, session=session
    )
    post_json_bytes(session, f"{base_url}/hook", b"{}", {}, 5.0)

    assert len(client_ports) == 3
    assert len(set(client_ports)) == 1


def test_borrowed_sessions_reuse_the_connection_between_downloads(
    private_urls_allowed: None, keep_alive_server: tuple[str, list[int]], tmp_path: Path
) -> None:
    base_url, client_ports = keep_alive_server

    for name in ("first", "second"):
        with borrowed_session() as session:
            download_to_file(
                f"{base_url}/a", tmp_path / name, max_bytes=10**6, deadline_seconds=5,
                session=session,
            )  # fmt: skip

    assert (tmp_path / "second").read_bytes() == PAYLOAD
    assert len(client_ports) == 2
    assert len(set(client_ports)) == 1


def test_borrowed_sessions_never_send_a_cookie_back(
    private_urls_allowed: None, httpserver: HTTPServer, tmp_path: Path
) -> None:
    cookies: list[str | None] = []

    def handler(request: Request) -> Response:
        cookies.append(request.headers.get("Cookie"))
        response = Response(b"x", content_type="application/octet-stream")
        response.set_cookie("session", "merchant-a")
        return response

    httpserver.expect_request("/photo").respond_with_handler(handler)
    for name in ("first", "second"):
        with borrowed_session() as session:
            download_to_file(
                httpserver.url_for("/photo"), tmp_path / name, max_bytes=10, deadline_seconds=5,
                session=session,
            )  # fmt: skip
            assert not session.cookies

    assert cookies == [None, None]


def test_borrowers_at_once_have_sessions_of_their_own_and_the_last_returned_is_lent_next(
    private_urls_allowed: None,
) -> None:
    with borrowed_session() as first, borrowed_session() as second:
        assert first is not second
    # ``second`` went back before ``first``: the pool lends the last returned first.
    with borrowed_session() as again:
        assert again is first


def test_a_session_that_saw_an_error_is_not_lent_again(private_urls_allowed: None) -> None:
    with pytest.raises(RuntimeError), borrowed_session() as broken:
        raise RuntimeError("the download failed")

    with borrowed_session() as next_one:
        assert next_one is not broken


def test_a_borrowed_session_follows_the_private_urls_setting(
    settings, httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/photo").respond_with_data(b"x")
    url = httpserver.url_for("/photo")
    settings.ALLOW_PRIVATE_URLS = True
    with borrowed_session() as allowed:
        download_to_file(url, tmp_path / "a", max_bytes=10, deadline_seconds=5, session=allowed)

    settings.ALLOW_PRIVATE_URLS = False
    with borrowed_session() as guarded, pytest.raises(OutboundError, match=UNREACHABLE):
        download_to_file(url, tmp_path / "b", max_bytes=10, deadline_seconds=5, session=guarded)

    assert guarded is not allowed
    assert not (tmp_path / "b").exists()
