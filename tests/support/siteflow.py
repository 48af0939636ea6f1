"""A local Site Flow compatible server for tests: a real HTTP server on loopback.

It checks the HMAC signature of every request (401 otherwise), fetches every component file it
is sent (refusing the order unless each answers 200), keeps orders by ``sourceOrderId`` (a
second submission of one is a 409 naming the existing ``_id``), answers ``_id``, status and
shipments, and refuses operations on shipped or cancelled orders with a 400 ``{"error":
{"message": ...}}``. ``GET /order?sourceOrderId=...`` answers the orders of that source id (a
list, empty when there is none). Tests move an order on with ``advance`` and ``ship``, can make
the next submissions fail with a 5xx after the order was stored (``fail_next_submissions``),
make the site hang (``hang``: every request waits unanswered until ``release``), and hold the
answers of submissions and operations for a while after the site has done them
(``answer_delays``: a worker killed meanwhile, or a caller whose time ran out, never hears the
answer), or hold a kind of request before the site reads it (``pause`` until ``resume``: a test
interleaves another caller's work there). ``stand_in`` answers a kind of request with what
something in front of the site would (a 200 with an empty or unrelated body, a 302) without the
site seeing it; ``answer_instead`` lets the site do the work and then answers with such a body.
An order shows whether it is on hold (``held``). ``place`` puts an order at the site as if it
had been submitted. ``submissions`` counts the submissions of each ``sourceOrderId``.
"""

import collections
import copy
import hashlib
import hmac
import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import requests
from werkzeug import Request, Response
from werkzeug.serving import BaseWSGIServer, make_server


@dataclass
class SiteOrder:
    id: str
    submitted: dict[str, Any]  # the submission's JSON as received
    status: str = "printready"
    held: bool = False
    ship_to: dict[str, Any] = field(default_factory=dict)
    carrier: dict[str, Any] = field(default_factory=dict)
    tracking_number: str = ""
    tracking_url: str = ""
    shipped_at: str = ""
    message: str = ""  # the site's word on a cancelled or failed order
    created: float = field(default_factory=time.monotonic)

    def as_json(self, source_order_id: str = "") -> dict[str, Any]:
        shipment: dict[str, Any] = {
            "shipTo": self.ship_to,
            "carrier": self.carrier,
            "trackingNumber": self.tracking_number or None,
            "trackingUrl": self.tracking_url or None,
            "shippedAt": self.shipped_at or None,
        }
        answer: dict[str, Any] = {
            "_id": self.id,
            "status": self.status,
            "held": self.held,
            "shipments": [shipment],
        }
        if source_order_id:
            answer["orderData"] = {"sourceOrderId": source_order_id}
        if self.message:
            answer["message"] = self.message
        return answer


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    body: Any


class SiteflowServer:
    def __init__(self, *, token: str, secret: str, prefix: str = "/api") -> None:
        self.token = token
        self.secret = secret
        self.prefix = prefix
        self.orders: dict[str, SiteOrder] = {}  # by sourceOrderId
        self.received: list[Received] = []  # every request whose signature was right
        self.unauthorised = 0
        self.fetched: dict[str, int] = {}  # component URL -> the status it answered
        self.failures_left = 0
        self.failure_status = 503
        self.delay_seconds = 0.0  # a slow site: each answer waits this long
        # A site that hangs (``hang``): requests wait unanswered until ``release`` or ``stop``.
        self.hanging = False
        self.held = 0  # requests waiting unanswered now
        self.most_held = 0  # the most that waited at once
        self.arrived_hanging = 0  # requests that arrived while the site hung
        self._released = threading.Event()
        # Seconds an answer waits after the site has done the work, by kind of request
        # (``_kind``): "submit", "cancel", "hold", "unhold", "shipments" (a new address or
        # carrier).
        self.answer_delays: dict[str, float] = {}
        # Kinds of request answered by something in front of the site (``stand_in``).
        self.stand_ins: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        self.stood_in: collections.Counter[str] = collections.Counter()
        # Kinds of request the site does, answered with another body (``answer_instead``).
        self.instead: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        # Kinds of request held before the site reads them (``pause``), and how many wait.
        self._paused: dict[str, threading.Event] = {}
        self._holding: dict[str, threading.Event] = {}  # taken by the request that waits
        self.waiting: collections.Counter[str] = collections.Counter()
        self.submissions: collections.Counter[str] = collections.Counter()  # by sourceOrderId
        self.lookups = 0  # searches by sourceOrderId
        self.in_flight: collections.Counter[str] = collections.Counter()  # answers held now
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    # --- running ------------------------------------------------------------------------

    def start(self) -> None:
        self._server = make_server("127.0.0.1", 0, self._wsgi, threaded=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.release()
        for kind in {*self._paused, *self._holding}:
            self.resume(kind)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}{self.prefix}"

    # --- what tests do ------------------------------------------------------------------

    def fail_next_submissions(self, count: int, status: int = 503) -> None:
        """The next ``count`` submissions are answered ``status`` (a new order is stored
        first, as when a site fails after committing)."""
        self.failures_left = count
        self.failure_status = status

    def hang(self) -> None:
        """From now on every request waits unanswered (the caller's timeout ends it) until
        ``release`` or ``stop``, which answer the waiting ones 503."""
        self._released.clear()
        self.hanging = True

    def release(self) -> None:
        self.hanging = False
        self._released.set()

    def stand_in(
        self, kind: str, status: int, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> None:
        """From now on requests of ``kind`` (as ``answer_delays`` names them) are answered
        ``status`` with ``body`` (and ``headers``) by something in front of the site: the site
        never sees them, so nothing is done."""
        self.stand_ins[kind] = (status, body, dict(headers or {}))

    def answer_instead(
        self, kind: str, status: int, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> None:
        """From now on the site does requests of ``kind`` (the change is made) but they are
        answered ``status`` with ``body`` (and ``headers``) rather than with the order: a site
        that answers 204, or a proxy in front of it that drops or replaces the body."""
        self.instead[kind] = (status, body, dict(headers or {}))

    def pause(self, kind: str) -> None:
        """The next request of ``kind`` waits before the site reads it (``waiting`` counts it)
        until ``resume``; the others meanwhile are answered as usual. ``stop`` resumes it
        too."""
        self._paused[kind] = threading.Event()

    def resume(self, kind: str) -> None:
        with self._lock:
            waiting = [self._paused.pop(kind, None), self._holding.pop(kind, None)]
        for paused in waiting:
            if paused is not None:
                paused.set()

    def place(self, source_order_id: str, *, ship_to: dict[str, Any], carrier_alias: str) -> str:
        """An order at the site for ``source_order_id`` (a shipment's id), as a submission
        would have left it; its Site Flow id."""
        with self._lock:
            order = SiteOrder(
                id=f"sf{next(self._ids):06d}",
                submitted={},
                ship_to=dict(ship_to),
                carrier={"alias": carrier_alias},
            )
            self.orders[source_order_id] = order
        return order.id

    def order(self, source_order_id: str) -> SiteOrder:
        return self.orders[source_order_id]

    def advance(self, source_order_id: str, status: str, *, message: str = "") -> None:
        """Move the order to ``status``; ``cancelled`` and ``error`` are the site's own end of
        it, with its ``message`` when given."""
        self.orders[source_order_id].status = status
        self.orders[source_order_id].message = message

    def printready(self, *, older_than: float = 0.0) -> list[str]:
        """The source ids of the orders waiting to be made that the site has held at least
        ``older_than`` seconds."""
        now = time.monotonic()
        with self._lock:
            return [
                source_id
                for source_id, order in self.orders.items()
                if order.status == "printready" and now - order.created >= older_than
            ]

    def ship(
        self,
        source_order_id: str,
        *,
        tracking_number: str,
        tracking_url: str,
        carrier_name: str,
        carrier_service: str,
        shipped_at: str,
    ) -> None:
        with self._lock:
            self._shipped(
                source_order_id,
                tracking_number,
                tracking_url,
                carrier_name,
                carrier_service,
                shipped_at,
            )

    def _shipped(
        self,
        source_order_id: str,
        tracking_number: str,
        tracking_url: str,
        carrier_name: str,
        carrier_service: str,
        shipped_at: str,
    ) -> None:
        order = self.orders[source_order_id]
        order.status = "shipped"
        order.tracking_number = tracking_number
        order.tracking_url = tracking_url
        order.carrier = {**order.carrier, "name": carrier_name, "service": carrier_service}
        order.shipped_at = shipped_at

    def operations(self) -> list[tuple[str, str, Any]]:
        """Every signed PUT received: (method, path, body)."""
        return [(r.method, r.path, r.body) for r in self.received if r.method == "PUT"]

    # --- the HTTP side ------------------------------------------------------------------

    def _wsgi(self, environ: dict[str, Any], start_response: Any) -> Any:
        if self.hanging:
            with self._lock:
                self.held += 1
                self.most_held = max(self.most_held, self.held)
                self.arrived_hanging += 1
            self._released.wait()
            with self._lock:
                self.held -= 1
            return _error(503, "The site was hanging")(environ, start_response)
        if self.delay_seconds:
            time.sleep(self.delay_seconds)
        request = Request(environ)
        kind = _kind(request)
        with self._lock:
            paused = self._paused.pop(kind, None)
            if paused is not None:
                self._holding[kind] = paused
                self.waiting[kind] += 1
        if paused is not None:
            paused.wait()
            with self._lock:
                self.waiting[kind] -= 1
        if kind in self.stand_ins:
            status, body, headers = self.stand_ins[kind]
            with self._lock:
                self.stood_in[kind] += 1
            return Response(body, status=status, headers=headers)(environ, start_response)
        with self._lock:
            response = self._answer(request)
        held = self.answer_delays.get(kind, 0.0) if kind else 0.0
        if held:
            with self._lock:
                self.in_flight[kind] += 1
            try:
                time.sleep(held)
            finally:
                with self._lock:
                    self.in_flight[kind] -= 1
        if kind in self.instead and 200 <= response.status_code < 300:
            status, body, headers = self.instead[kind]
            response = Response(body, status=status, headers=headers)
        return response(environ, start_response)

    def _signed(self, request: Request) -> bool:
        date = request.headers.get("x-oneflow-date", "")
        token, _, signature = request.headers.get("x-oneflow-authorization", "").partition(":")
        text = f"{request.method} {request.path} {date}".encode()
        expected = hmac.new(self.secret.encode(), text, hashlib.sha256).hexdigest()
        return (
            bool(date)
            and request.headers.get("x-oneflow-algorithm") == "SHA256"
            and hmac.compare_digest(token, self.token)
            and hmac.compare_digest(signature, expected)
        )

    def _answer(self, request: Request) -> Response:
        if not self._signed(request):
            self.unauthorised += 1
            return _error(401, "Invalid signature")
        body = request.get_json(silent=True) if request.data else None
        self.received.append(Received(request.method, request.path, copy.deepcopy(body)))
        path = request.path.removeprefix(self.prefix)
        parts = [p for p in path.split("/") if p]
        if request.method == "POST" and parts == ["order"]:
            return self._submit(body)
        if request.method == "GET" and parts == ["order"]:
            self.lookups += 1
            source_id = request.args.get("sourceOrderId", "")
            found = self.orders.get(source_id)
            return _json(200, [] if found is None else [found.as_json(source_id)])
        if len(parts) < 2 or parts[0] != "order":
            return _error(404, "Not found")
        order = next((o for o in self.orders.values() if o.id == parts[1]), None)
        if order is None:
            return _error(404, f"Order {parts[1]} not found")
        if request.method == "GET" and len(parts) == 2:
            return _json(200, order.as_json())
        if request.method == "PUT":
            return self._operation(order, parts[2:], body)
        return _error(405, "Method not allowed")

    def _submit(self, body: Any) -> Response:
        if not isinstance(body, dict) or not isinstance(body.get("orderData"), dict):
            return _error(400, "orderData is required")
        data: dict[str, Any] = body["orderData"]
        source_id = data.get("sourceOrderId")
        if not source_id or not (body.get("destination") or {}).get("name"):
            return _error(400, "destination.name and orderData.sourceOrderId are required")
        self.submissions[source_id] += 1
        existing = self.orders.get(source_id)
        if existing is not None and self.failures_left:
            self.failures_left -= 1
            return _error(self.failure_status, "Temporarily unavailable")
        if existing is not None:
            return _json(
                409,
                {
                    "error": {"message": f"Order {source_id} already exists"},
                    "_id": existing.id,
                },
            )
        for item in data.get("items", []):
            for component in item.get("components", []):
                if component.get("fetch"):
                    url = component["path"]
                    try:
                        self.fetched[url] = requests.get(url, timeout=10).status_code
                    except requests.RequestException:
                        self.fetched[url] = 0
                    if self.fetched[url] != 200:
                        return _error(400, f"Could not fetch {url}")
        shipment = (data.get("shipments") or [{}])[0]
        order = SiteOrder(
            id=f"sf{next(self._ids):06d}",
            submitted=copy.deepcopy(body),
            ship_to=dict(shipment.get("shipTo") or {}),
            carrier=dict(shipment.get("carrier") or {}),
        )
        self.orders[source_id] = order
        if self.failures_left:
            self.failures_left -= 1
            return _error(self.failure_status, "Temporarily unavailable")
        return _json(201, {"_id": order.id, "status": order.status})

    def _operation(self, order: SiteOrder, parts: list[str], body: Any) -> Response:
        if order.status in ("shipped", "cancelled"):
            return _error(400, f"Order {order.id} is {order.status} and cannot be changed")
        if parts == ["cancel"]:
            order.status = "cancelled"
        elif parts == ["hold"]:
            order.held = True
        elif parts == ["unhold"]:
            order.held = False
        elif parts == ["shipments", "0"] and isinstance(body, dict):
            if "shipTo" in body:
                order.ship_to = dict(body["shipTo"])
            if "carrier" in body:
                order.carrier = dict(body["carrier"])
        else:
            return _error(404, "Not found")
        return _json(200, order.as_json())


def _kind(request: Request) -> str:
    """What a request does, for ``answer_delays``, ``stand_in``, ``answer_instead`` and
    ``pause``: "submit", "cancel", "hold", "unhold", "shipments", "read" (``GET`` of one order),
    or ""."""
    if request.method == "POST" and request.path.endswith("/order"):
        return "submit"
    if request.method == "GET" and "/order/" in request.path:
        return "read"
    if request.method == "PUT":
        for kind in ("cancel", "hold", "unhold"):
            if request.path.endswith(f"/{kind}"):
                return kind
        if request.path.endswith("/shipments/0"):
            return "shipments"
    return ""


def _json(status: int, body: Any) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")


def _error(status: int, message: str) -> Response:
    return _json(status, {"error": {"message": message}})


def lab_at_site(server: "SiteflowServer", code: str = "gb1") -> None:
    """Make lab ``code`` a Site Flow lab served by ``server`` (its Live shipments go there)."""
    from labs.models import Lab

    Lab.objects.filter(code=code).update(
        connector="siteflow",
        siteflow_base_url=server.base_url,
        siteflow_token=server.token,
        siteflow_secret=server.secret,
        siteflow_destination="acme",
    )


def siteflow_lab(server: "SiteflowServer", *, secret: str | None = None) -> None:
    """Lab gb1 a Site Flow lab at ``server``, as a configured one is: destination
    ``acme-print``, Standard sent by the site's carrier ``royalmail-48``, GLOBAL-PHO-4X6 made as
    the site's ``PHOTO-4X6-GLOSS``. ``secret``: the lab's when it is not the site's (a secret
    the site no longer takes)."""
    from labs.models import Lab, LabProduct

    lab_at_site(server)
    Lab.objects.filter(code="gb1").update(
        siteflow_secret=server.secret if secret is None else secret,
        siteflow_destination="acme-print",
        siteflow_carrier_aliases={"Standard": "royalmail-48"},
    )
    LabProduct.objects.filter(lab__code="gb1", product__sku="GLOBAL-PHO-4X6").update(
        lab_sku="PHOTO-4X6-GLOSS"
    )


@contextmanager
def site_running(settings: Any, *, token: str, secret: str) -> Iterator[SiteflowServer]:
    """A Site Flow site on loopback, which the service may reach while it runs."""
    settings.ALLOW_PRIVATE_URLS = True
    server = SiteflowServer(token=token, secret=secret)
    server.start()
    try:
        yield server
    finally:
        server.stop()
