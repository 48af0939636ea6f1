"""A Site Flow compatible stand-in: a development tool, never part of a deployment.

``SITEFLOW_STANDIN=1 make run`` runs it (``scripts/run_all.py``) beside the service, and
``manage.py setup_demo`` points the demo Site Flow lab (``sf1``) at it, so the Site Flow
connector (``labs/connectors/siteflow.py``), the staff shipment operations and the Site Flow
bulk shipping update can be tried on one machine. On its own::

    python -m labs.siteflow_standin --port 8001 --folder var/siteflow-standin

It answers the calls the connector makes (decisions.md, "The Site Flow connector"), under
``/api``, in the shapes the connector accepts:

- every request must be signed with the site's token and secret (``x-oneflow-date`` within
  ``DATE_SKEW_SECONDS`` of now, ``x-oneflow-algorithm: SHA256``, ``x-oneflow-authorization:
  <token>:<hex HMAC-SHA256(secret, "<METHOD> <path> <date>")>``): otherwise 401;
- ``POST /api/order`` takes an order for its destination, fetches every component marked
  ``fetch`` (a file that does not answer 200 refuses the order, 400), and answers 201 with the
  order (``_id``); a ``sourceOrderId`` it already holds is a 409 naming the existing ``_id``;
- ``GET /api/order?sourceOrderId=...`` answers ``{"data": [...]}`` (empty when it holds none);
- ``GET /api/order/{id}`` answers the order: ``_id``, ``status``, ``held``, ``orderData`` and
  ``shipments[0]`` (``shipTo``, ``carrier`` with ``alias``, ``name`` and ``service``,
  ``trackingNumber``, ``trackingUrl``, ``shippedAt``);
- ``PUT /api/order/{id}/cancel``, ``/hold``, ``/unhold`` and ``/shipments/0`` (``{"shipTo"}``
  or ``{"carrier": {"alias"}}``) answer the order as the change left it; on a shipped or
  cancelled order they are refused, 400 ``{"error": {"message": ...}}``.

An order moves on by itself: ``printready`` when taken, ``inproduction`` after
``print_seconds``, ``shipped`` after ``ship_seconds`` (with a tracking number and the carrier
its alias names); time on hold does not count. Orders are kept in ``orders.json`` in its
folder (a restart keeps them). The site's token, secret and destination are in
``credentials.json`` there (made on first use, readable by the owner only), which
``setup_demo`` reads to configure the lab. ``GET /`` (unsigned) lists the orders for a person.

Standard library only: nothing beyond what ``make run`` installs, and nothing of Django.
"""

import argparse
import hashlib
import hmac
import json
import os
import secrets
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

PREFIX = "/api"
CREDENTIALS_FILE = "credentials.json"
ORDERS_FILE = "orders.json"
DEFAULT_DESTINATION = "standin"
DATE_SKEW_SECONDS = 300
MAX_BODY_BYTES = 1024 * 1024
FETCH_TIMEOUT_SECONDS = 30
PRINT_SECONDS = 30.0
SHIP_SECONDS = 120.0
TRACKING_URL = "https://tracking.example.com/siteflow-standin/{number}"
# What the carrier aliases the demo lab uses stand for; any other alias is read as
# ``<carrier>-<service>``, each word capitalised.
CARRIERS: Mapping[str, tuple[str, str]] = {
    "dhl-express": ("DHL", "Express"),
    "dpd-next-day": ("DPD", "Next Day"),
    "royalmail-24": ("Royal Mail", "Tracked 24"),
    "royalmail-48": ("Royal Mail", "Tracked 48"),
    "ups-standard": ("UPS", "Standard"),
}
ENDED = ("shipped", "cancelled", "error")
# What ``PUT /api/order/{id}/...`` may do.
OPERATIONS = ("cancel", "hold", "unhold", "shipments/0")


@dataclass(frozen=True)
class Credentials:
    token: str
    secret: str
    destination: str


def standin_credentials(folder: Path) -> Credentials:
    """The site's credentials kept in ``folder``: made (random token and secret) and written
    readable by the owner only when there are none yet, the same ones ever after."""
    path = folder / CREDENTIALS_FILE
    if path.exists():
        kept = json.loads(path.read_text())
        return Credentials(kept["token"], kept["secret"], kept["destination"])
    made = Credentials(
        token=f"standin-{secrets.token_hex(4)}",
        secret=secrets.token_urlsafe(32),
        destination=DEFAULT_DESTINATION,
    )
    folder.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        json.dump(made.__dict__, file)
    return made


def signature_of(*, secret: str, method: str, path: str, date: str) -> str:
    """The hex HMAC-SHA256 of ``"<METHOD> <path> <date>"`` under ``secret``."""
    text = f"{method.upper()} {path} {date}".encode()
    return hmac.new(secret.encode(), text, hashlib.sha256).hexdigest()


def carrier_named(alias: str) -> tuple[str, str]:
    """The carrier and service an alias stands for (``royalmail-48``: Royal Mail, Tracked 48)."""
    if alias in CARRIERS:
        return CARRIERS[alias]
    words = [word for word in alias.replace("_", "-").split("-") if word]
    if not words:
        return alias, ""
    return words[0].capitalize(), " ".join(word.capitalize() for word in words[1:])


def _iso(seconds: float) -> str:
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse_iso(value: str) -> float | None:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.timestamp()


def component_fetch(url: str) -> int:
    """The HTTP status a component's file answers (0: no answer); the body is read and
    discarded, as a site downloading it would."""
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_SECONDS) as response:
            while response.read(1024 * 1024):
                pass
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ValueError):
        return 0


class Refused(Exception):
    """A request the site refuses: its status and ``error.message``."""

    def __init__(self, status: int, message: str, **more: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.more = more

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message}, **self.more}


class Site:
    """The stand-in's orders and what it answers, apart from HTTP (``answer``)."""

    def __init__(
        self,
        folder: Path,
        *,
        print_seconds: float = PRINT_SECONDS,
        ship_seconds: float = SHIP_SECONDS,
        clock: Callable[[], float] = time.time,
        fetch: Callable[[str], int] = component_fetch,
    ) -> None:
        self.folder = folder
        self.credentials = standin_credentials(folder)
        self.print_seconds = print_seconds
        self.ship_seconds = max(ship_seconds, print_seconds)
        self.clock = clock
        self.fetch = fetch
        self._lock = threading.Lock()
        path = folder / ORDERS_FILE
        kept = json.loads(path.read_text()) if path.exists() else {}
        self.orders: list[dict[str, Any]] = kept.get("orders", [])
        self.next_number: int = kept.get("next", 1)

    # --- keeping ------------------------------------------------------------------------

    def _save(self) -> None:
        path = self.folder / ORDERS_FILE
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps({"next": self.next_number, "orders": self.orders}, indent=1))
        os.replace(partial, path)

    def _advanced(self, order: dict[str, Any], now: float) -> bool:
        """Move the order on by the time it has spent in production (not on hold); whether
        it changed."""
        if order["status"] in ENDED or order["held"]:
            return False
        elapsed = now - order["clockStart"]
        if elapsed >= self.ship_seconds:
            number = order["number"]
            shipment = order["shipments"][0]
            shipment["trackingNumber"] = f"SFS{number:08d}"
            shipment["trackingUrl"] = TRACKING_URL.format(number=shipment["trackingNumber"])
            shipment["shippedAt"] = _iso(order["clockStart"] + self.ship_seconds)
            order["status"] = "shipped"
            return True
        if elapsed >= self.print_seconds and order["status"] == "printready":
            order["status"] = "inproduction"
            return True
        return False

    def _all_advanced(self) -> None:
        now = self.clock()
        if any([self._advanced(order, now) for order in self.orders]):
            self._save()

    # --- the site's answers ----------------------------------------------------------------

    def signed(self, method: str, path: str, headers: Mapping[str, str]) -> str:
        """Why a request's signature is not taken ("" when it is)."""
        date = headers.get("x-oneflow-date", "")
        token, _, signature = headers.get("x-oneflow-authorization", "").partition(":")
        if headers.get("x-oneflow-algorithm", "") != "SHA256":
            return "x-oneflow-algorithm must be SHA256."
        sent_at = _parse_iso(date) if date else None
        if sent_at is None:
            return "x-oneflow-date must be an ISO 8601 time with its offset."
        if abs(self.clock() - sent_at) > DATE_SKEW_SECONDS:
            return "x-oneflow-date is too far from the site's time."
        expected = signature_of(secret=self.credentials.secret, method=method, path=path, date=date)
        if not hmac.compare_digest(token, self.credentials.token):
            return "Unknown token."
        if not hmac.compare_digest(signature, expected):
            return "Invalid signature."
        return ""

    def answer(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Any]:
        """The status and JSON answer of one request (``target``: path and query)."""
        split = urlsplit(target)
        path = split.path
        if method == "GET" and path in ("", "/"):
            with self._lock:
                self._all_advanced()
                return 200, {"site": "Site Flow stand-in", "orders": self.orders_listed()}
        if path != PREFIX and not path.startswith(PREFIX + "/"):
            return 404, Refused(404, "Not found.").body()
        why = self.signed(method, path, headers)
        if why:
            return 401, Refused(401, why).body()
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            return 400, Refused(400, "The body is not JSON.").body()
        parts = [unquote(part) for part in path.removeprefix(PREFIX).split("/") if part]
        try:
            if parts == ["order"] and method == "POST":
                return self._submit(parsed)
            if parts == ["order"] and method == "GET":
                source = parse_qs(split.query).get("sourceOrderId", [""])[0]
                with self._lock:
                    self._all_advanced()
                    found = [o for o in self.orders if o["orderData"]["sourceOrderId"] == source]
                    return 200, {"data": [self._shown(o) for o in found]}
            if len(parts) >= 2 and parts[0] == "order":
                return self._order_request(method, parts[1], parts[2:], parsed)
        except Refused as refused:
            return refused.status, refused.body()
        return 404, Refused(404, "Not found.").body()

    def orders_listed(self) -> list[dict[str, Any]]:
        return [
            {
                "_id": order["_id"],
                "sourceOrderId": order["orderData"]["sourceOrderId"],
                "status": order["status"],
                "held": order["held"],
                "carrierAlias": order["shipments"][0]["carrier"]["alias"],
                "trackingNumber": order["shipments"][0]["trackingNumber"],
            }
            for order in self.orders
        ]

    def _shown(self, order: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in order.items() if k not in ("number", "clockStart", "heldAt")}

    def _submit(self, body: Any) -> tuple[int, Any]:
        data = body.get("orderData") if isinstance(body, dict) else None
        if not isinstance(data, dict):
            raise Refused(400, "orderData is required.")
        destination = body.get("destination")
        name = destination.get("name") if isinstance(destination, dict) else None
        if name != self.credentials.destination:
            raise Refused(400, f"destination.name must be '{self.credentials.destination}'.")
        source = data.get("sourceOrderId")
        if not isinstance(source, str) or not source:
            raise Refused(400, "orderData.sourceOrderId is required.")
        items = data.get("items")
        if not isinstance(items, list) or not items:
            raise Refused(400, "orderData.items needs at least one item.")
        urls = []
        for index, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("sku"), str):
                raise Refused(400, f"orderData.items[{index}].sku is required.")
            quantity = item.get("quantity")
            if not isinstance(quantity, int) or isinstance(quantity, bool) or quantity < 1:
                raise Refused(400, f"orderData.items[{index}].quantity must be 1 or more.")
            components = item.get("components")
            if not isinstance(components, list) or not all(
                isinstance(c, dict) and isinstance(c.get("path"), str) for c in components
            ):
                raise Refused(400, f"orderData.items[{index}].components need their path.")
            urls += [c["path"] for c in components if c.get("fetch")]
        shipments = data.get("shipments")
        shipment = shipments[0] if isinstance(shipments, list) and shipments else None
        ship_to = shipment.get("shipTo") if isinstance(shipment, dict) else None
        carrier = shipment.get("carrier") if isinstance(shipment, dict) else None
        alias = carrier.get("alias") if isinstance(carrier, dict) else None
        if not isinstance(ship_to, dict) or not isinstance(alias, str) or not alias:
            raise Refused(400, "orderData.shipments[0] needs shipTo and carrier.alias.")
        with self._lock:
            existing = next(
                (o for o in self.orders if o["orderData"]["sourceOrderId"] == source), None
            )
        if existing is not None:
            raise Refused(409, f"Order {source} already exists.", _id=existing["_id"])
        for url in urls:  # outside the lock: a slow file holds no other request
            status = self.fetch(url)
            if status != 200:
                raise Refused(400, f"Could not fetch {url} (HTTP {status or 'no answer'}).")
        with self._lock:
            existing = next(
                (o for o in self.orders if o["orderData"]["sourceOrderId"] == source), None
            )
            if existing is not None:  # the same order arrived twice at once
                raise Refused(409, f"Order {source} already exists.", _id=existing["_id"])
            now = self.clock()
            number = self.next_number
            self.next_number += 1
            name, service = carrier_named(alias)
            order = {
                "_id": f"sfs{number:06d}{secrets.token_hex(4)}",
                "number": number,
                "status": "printready",
                "held": False,
                "createdAt": _iso(now),
                "clockStart": now,
                "destination": {"name": self.credentials.destination},
                "orderData": data,
                "shipments": [
                    {
                        "shipTo": ship_to,
                        "carrier": {"alias": alias, "name": name, "service": service},
                        "trackingNumber": None,
                        "trackingUrl": None,
                        "shippedAt": None,
                    }
                ],
            }
            self.orders.append(order)
            self._save()
            return 201, self._shown(order)

    def _order_request(
        self, method: str, order_id: str, rest: list[str], body: Any
    ) -> tuple[int, Any]:
        with self._lock:
            self._all_advanced()
            order = next((o for o in self.orders if o["_id"] == order_id), None)
            if order is None:
                raise Refused(404, f"Order {order_id} not found.")
            if method == "GET" and not rest:
                return 200, self._shown(order)
            if method != "PUT" or "/".join(rest) not in OPERATIONS:
                raise Refused(404, "Not found.")
            if order["status"] in ENDED:
                raise Refused(400, f"Order {order_id} is {order['status']} and cannot be changed.")
            now = self.clock()
            if rest == ["cancel"]:
                order["status"] = "cancelled"
            elif rest == ["hold"]:
                if not order["held"]:
                    order["held"], order["heldAt"] = True, now
            elif rest == ["unhold"]:
                if order["held"]:  # time on hold does not count towards shipping
                    order["clockStart"] += now - order.pop("heldAt", now)
                    order["held"] = False
            else:
                self._shipment_change(order, body)
            self._save()
            return 200, self._shown(order)

    def _shipment_change(self, order: dict[str, Any], body: Any) -> None:
        if not isinstance(body, dict) or not ({"shipTo", "carrier"} & body.keys()):
            raise Refused(400, "Send shipTo or carrier.")
        shipment = order["shipments"][0]
        if "shipTo" in body:
            if not isinstance(body["shipTo"], dict):
                raise Refused(400, "shipTo must be an object.")
            shipment["shipTo"] = body["shipTo"]
        if "carrier" in body:
            carrier = body["carrier"]
            alias = carrier.get("alias") if isinstance(carrier, dict) else None
            if not isinstance(alias, str) or not alias:
                raise Refused(400, "carrier.alias is required.")
            name, service = carrier_named(alias)
            shipment["carrier"] = {"alias": alias, "name": name, "service": service}


class _Handler(BaseHTTPRequestHandler):
    site: Site  # set on the class made by ``server_make``
    protocol_version = "HTTP/1.1"

    def _respond(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            status, answer = 413, Refused(413, "The body is too large.").body()
            self.close_connection = True
        else:
            body = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            status, answer = self.site.answer(self.command, self.path, headers, body)
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _respond

    def log_message(self, format: str, *args: Any) -> None:
        print(f"siteflow-standin: {format % args}", flush=True)


def server_make(site: Site, *, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server answering for ``site`` on ``host``:``port`` (0: a free one); the caller
    runs ``serve_forever``."""
    handler = type("Handler", (_Handler,), {"site": site})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    var_dir = Path(os.environ.get("VAR_DIR", "var"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--port", type=int, default=int(os.environ.get("SITEFLOW_STANDIN_PORT", 8001))
    )
    parser.add_argument("--folder", type=Path, default=var_dir / "siteflow-standin")
    parser.add_argument(
        "--print-seconds",
        type=float,
        default=float(os.environ.get("SITEFLOW_STANDIN_PRINT_SECONDS", PRINT_SECONDS)),
        help="seconds from submission to inproduction",
    )
    parser.add_argument(
        "--ship-seconds",
        type=float,
        default=float(os.environ.get("SITEFLOW_STANDIN_SHIP_SECONDS", SHIP_SECONDS)),
        help="seconds from submission to shipped (time on hold not counted)",
    )
    options = parser.parse_args(argv)
    site = Site(
        options.folder, print_seconds=options.print_seconds, ship_seconds=options.ship_seconds
    )
    server = server_make(site, host=options.host, port=options.port)
    url = f"http://{options.host}:{server.server_address[1]}{PREFIX}"
    print(
        f"Site Flow stand-in on {url} (destination "
        f"'{site.credentials.destination}', orders in {options.folder / ORDERS_FILE}; "
        f"inproduction after {site.print_seconds:g} s, shipped after {site.ship_seconds:g} s)",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
