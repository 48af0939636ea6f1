"""Local peers over loopback: the merchant's asset host and callback receiver, and a TLS
server no client trusts.

They are handlers for pytest-httpserver's ``httpserver``; the fixtures that install them live
in the conftest files.
"""

import collections
import datetime as dt
import ipaddress
import json
import re
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.support.images import jpeg_bytes, pdf_bytes


@dataclass
class Receiver:
    """The merchant's callback endpoint: records every delivery and answers 204."""

    deliveries: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    arrived: list[float] = field(default_factory=list)  # each delivery's time.time()
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, request: Request) -> Response:
        with self.lock:
            self.deliveries.append((dict(request.headers), request.get_data()))
            self.arrived.append(time.time())
        return Response(status=204)

    def first_arrivals(self) -> dict[str, float]:
        """When each event (by id) first arrived."""
        with self.lock:
            found: dict[str, float] = {}
            for (_, body), at in zip(self.deliveries, self.arrived, strict=True):
                found.setdefault(json.loads(body)["id"], at)
            return found

    def events(self) -> list[dict[str, Any]]:
        with self.lock:
            return [json.loads(body) for _, body in self.deliveries]

    def types(self, order_id: str) -> list[str]:
        """The order's event types in the order they happened (deliveries may overtake)."""
        unique = {e["id"]: e for e in self.events() if e["subject"] == order_id}
        return [e["type"] for e in sorted(unique.values(), key=lambda e: e["sequence"])]


class AssetHost:
    """The merchant's asset host, whose answers a test changes as it goes: each image name under
    ``/images/`` answers a status (404 until told otherwise; 500, 403, ...) or, once
    ``upload`` is called, a JPEG; every request counted by name."""

    def __init__(self, httpserver: HTTPServer) -> None:
        self.httpserver = httpserver
        self.statuses: dict[str, int] = {}
        self.served: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()
        self.photo = jpeg_bytes()
        httpserver.expect_request(re.compile(r"^/images/")).respond_with_handler(self.handle)

    def url(self, name: str) -> str:
        return str(self.httpserver.url_for(f"/images/{name}"))

    def answer(self, name: str, status: int) -> None:
        with self.lock:
            self.statuses[name] = status

    def upload(self, name: str) -> None:
        self.answer(name, 200)

    def requests(self, name: str) -> int:
        with self.lock:
            return self.served[name]

    def handle(self, request: Request) -> Response:
        name = request.path.removeprefix("/images/")
        with self.lock:
            self.served[name] += 1
            status = self.statuses.get(name, 404)
        if status == 200:
            return Response(self.photo, content_type="image/jpeg")
        return Response(f"HTTP {status} for {name}", status=status)


class SlowAssets:
    """Serves JPEGs (and PDFs for ``.pdf`` paths) slowly, and tells how many requests are being
    answered right now."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.served: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()
        self.photo = jpeg_bytes(800, 600)
        self.book = pdf_bytes(30)

    def handle(self, request: Request) -> Response:
        with self.lock:
            self.in_flight += 1
            self.served[request.path] += 1
        try:
            time.sleep(0.4)
            if request.path.endswith(".pdf"):
                return Response(self.book, content_type="application/pdf")
            return Response(self.photo, content_type="image/jpeg")
        finally:
            with self.lock:
                self.in_flight -= 1


class _GetHost:
    """An asset host run by hand on a loopback port, on threads of its own: every GET goes to
    the subclass's ``answer``, which may take as long as it likes."""

    def __init__(self) -> None:
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                host.answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError


class DripHost(_GetHost):
    """A merchant's asset host that answers every GET with a 200 and then one byte a second
    (``interval``) of a body it never finishes, until ``stop``: each download it answers holds
    its downloader for the whole download deadline. Tells how many it is answering now, and
    the most at once."""

    def __init__(self, interval: float = 1.0, size: int = 1_000_000) -> None:
        self.interval, self.size = interval, size
        self.in_flight = self.most_in_flight = 0
        self.served: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        super().__init__()

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.served[request.path] += 1
        try:
            request.send_response(200)
            request.send_header("Content-Type", "image/jpeg")
            request.send_header("Content-Length", str(self.size))
            request.end_headers()
            while not self.stopped.wait(self.interval):
                request.wfile.write(b"\xff")
                request.wfile.flush()
        except OSError:
            pass  # the downloader gave up (its deadline)
        finally:
            with self.lock:
                self.in_flight -= 1

    def stop(self) -> None:
        """Stop dripping (every download answered so far ends short) and stop listening."""
        if self.stopped.is_set():
            return
        self.stopped.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "DripHost":
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def serve(httpserver: HTTPServer, path: str, data: bytes, content_type: str) -> str:
    """Serve ``data`` at ``path`` for every GET; the URL to give in an order."""
    httpserver.expect_request(path, method="GET").respond_with_data(data, content_type=content_type)
    return httpserver.url_for(path)


def requests_to(httpserver: HTTPServer, path: str) -> int:
    return sum(1 for request, _ in httpserver.log if request.path == path)


def closed_port() -> int:
    """A loopback port nothing listens on (it was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SlowHost(_GetHost):
    """A merchant's asset host that sends a whole JPEG to every GET, spread evenly over
    ``seconds``: one long download that succeeds. Counts the requests of each path."""

    def __init__(self, seconds: float, pieces: int = 40) -> None:
        self.seconds, self.pieces = seconds, pieces
        self.photo = jpeg_bytes(800, 600)
        self.served: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()
        super().__init__()

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        with self.lock:
            self.served[request.path] += 1
        size = -(-len(self.photo) // self.pieces)
        try:
            request.send_response(200)
            request.send_header("Content-Type", "image/jpeg")
            request.send_header("Content-Length", str(len(self.photo)))
            request.end_headers()
            for start in range(0, len(self.photo), size):
                time.sleep(self.seconds / self.pieces)
                request.wfile.write(self.photo[start : start + size])
                request.wfile.flush()
        except OSError:
            pass  # the downloader went away

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass(frozen=True)
class Arrival:
    """One delivery a ``PacedReceiver`` answered: which event (its ``attempt``-th delivery to
    this receiver), the status it answered and when the request came and was answered
    (``time.monotonic()``)."""

    event_id: str
    subject: str
    sequence: int
    attempt: int
    status: int
    started: float
    ended: float


class PacedReceiver:
    """A merchant's callback endpoint on threads of its own, on a loopback port: every POST is
    answered after ``seconds``, with 500 when ``failing(event, attempt)`` says so (``event``
    the CloudEvent, ``attempt`` 1 for its first delivery here), else 204. Records every
    delivery (``Arrival``) and the most deliveries of one subject it answered at once."""

    def __init__(self, seconds: float, failing: Callable[[dict[str, Any], int], bool]) -> None:
        self.seconds, self.failing = seconds, failing
        self.arrivals: list[Arrival] = []
        self.attempts: collections.Counter[str] = collections.Counter()
        self.in_flight: collections.Counter[str] = collections.Counter()
        self.most_in_flight: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                receiver.answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/callbacks") -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        started = time.monotonic()
        event = json.loads(request.rfile.read(int(request.headers["Content-Length"])))
        subject = event["subject"]
        with self.lock:
            self.attempts[event["id"]] += 1
            attempt = self.attempts[event["id"]]
            self.in_flight[subject] += 1
            self.most_in_flight[subject] = max(
                self.most_in_flight[subject], self.in_flight[subject]
            )
        status = 500 if self.failing(event, attempt) else 204
        time.sleep(self.seconds)
        with self.lock:
            self.in_flight[subject] -= 1
            self.arrivals.append(
                Arrival(
                    event["id"],
                    subject,
                    int(event["sequence"]),
                    attempt,
                    status,
                    started,
                    time.monotonic(),
                )
            )
        request.send_response(status)
        request.send_header("Content-Length", "0")
        request.end_headers()

    def delivered(self, subject: str) -> list[Arrival]:
        """The subject's deliveries answered 2xx, in the order they came."""
        with self.lock:
            found = [a for a in self.arrivals if a.subject == subject and a.status < 300]
        return sorted(found, key=lambda a: a.started)

    def of_event(self, event_id: str) -> list[Arrival]:
        with self.lock:
            return sorted(
                (a for a in self.arrivals if a.event_id == event_id), key=lambda a: a.started
            )

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def untrusted_tls_server() -> Iterator[HTTPServer]:
    """An HTTPS server on loopback whose certificate (self-signed, made for this run) no client
    trusts: every TLS handshake with it fails at certificate verification."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    with tempfile.TemporaryDirectory() as folder:
        certificate_path = Path(folder) / "certificate.pem"
        key_path = Path(folder) / "key.pem"
        certificate_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate_path, key_path)
    server = HTTPServer(host="127.0.0.1", port=0, ssl_context=context)
    server.start()
    try:
        yield server
    finally:
        server.clear()
        if server.is_running():
            server.stop()
