"""A Stripe compatible server on loopback, for the official ``stripe`` library pointed at it by
``STRIPE_API_BASE``.

It answers what the service calls (``POST /v1/checkout/sessions``, ``GET`` one or the list of
them, ``POST /v1/checkout/sessions/{id}/expire``, ``POST /v1/refunds``) as Stripe does:
form-encoded parameters, the secret key as a bearer token, idempotency keys, Stripe's error
bodies (expiring a session that is not open is refused). Each session has a payment page
(``/checkout/<session id>``) with a Pay button while it is open; paying sends the signed
``checkout.session.completed`` event to ``webhook_url`` and goes back to the session's
``success_url``, as Stripe Checkout does. Tests may also pay a session that was expired (the race
of a payment made as the service expires it) and pay by a delayed method, settled later with
``checkout.session.async_payment_succeeded`` or ``..._failed``; ``on_session_create`` lets a
test act while the service waits for a session to be created. Events are signed as
Stripe signs them: ``Stripe-Signature: t=<unix time>,v1=<hex HMAC-SHA256(secret,
"<t>.<payload>")>``.
"""

import hashlib
import hmac
import html
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import requests
from werkzeug import Request, Response
from werkzeug.serving import BaseWSGIServer, make_server

_KEY_PART = re.compile(r"[^\[\]]+")


def form_decoded(body: str) -> dict[str, Any]:
    """Stripe's form encoding (``line_items[0][price_data][currency]=gbp``) as nested JSON:
    objects whose keys are 0, 1, ... become lists."""
    tree: dict[str, Any] = {}
    for key, value in parse_qsl(body, keep_blank_values=True):
        parts = _KEY_PART.findall(key)
        node = tree
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return _listed(tree)


def _listed(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    converted = {k: _listed(v) for k, v in node.items()}
    if converted and all(k.isdigit() for k in converted):
        return [converted[k] for k in sorted(converted, key=int)]
    return converted


def stripe_signature(payload: bytes, secret: str, timestamp: int | None = None) -> str:
    """The ``Stripe-Signature`` header Stripe sends with ``payload``."""
    at = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{at}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={at},v1={mac}"


@dataclass
class Call:
    method: str
    path: str
    params: dict[str, Any]
    idempotency_key: str | None


@dataclass
class Refunded:
    id: str
    payment_intent: str
    amount: int
    key: str | None


@dataclass
class StripeServer:
    secret_key: str = "sk_test_loopback"
    webhook_secret: str = "whsec_loopback"
    webhook_url: str = ""  # where paying on a session's page sends the event
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    refunds: list[Refunded] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    deliveries: list[tuple[str, int]] = field(default_factory=list)  # (event id, status)
    failures_left: int = 0  # the next API calls answered 500
    # Called with each session created, before the answer leaves (what happens meanwhile).
    on_session_create: Callable[[dict[str, Any]], None] | None = None
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: BaseWSGIServer | None = None

    # --- running ------------------------------------------------------------------------

    def start(self) -> "StripeServer":
        self._server = make_server("127.0.0.1", 0, self._wsgi, threaded=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def configure(self, settings: Any) -> None:
        """Point the service at this server (pytest-django's ``settings`` fixture)."""
        settings.PAYMENT_PROVIDER = "stripe"
        settings.STRIPE_SECRET_KEY = self.secret_key
        settings.STRIPE_WEBHOOK_SECRET = self.webhook_secret
        settings.STRIPE_API_BASE = self.base_url

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}"

    # --- what tests do ------------------------------------------------------------------

    def session_paid(
        self, session_id: str, *, delayed: bool = False, after_expiry: bool = False
    ) -> dict[str, Any]:
        """The session paid (as when the payer pays on its page); the session. ``delayed``: by
        a method whose money comes later (the session completes ``unpaid``; settle it with
        ``session_settled``). ``after_expiry``: even though it was expired (the payer paid as
        the service expired it); else an expired session cannot be paid."""
        with self._lock:
            session = self.sessions[session_id]
            if session["status"] == "expired" and not after_expiry:
                raise ValueError(f"{session_id} is expired and cannot be paid.")
            if session["payment_intent"] is None:
                session.update(
                    status="complete",
                    payment_status="unpaid" if delayed else "paid",
                    payment_intent=f"pi_loopback_{next(self._ids)}",
                )
            return dict(session)

    def session_settled(self, session_id: str, *, succeeded: bool) -> dict[str, Any]:
        """A delayed payment's outcome: the session ``paid`` when it ``succeeded``; the session
        (send it as ``checkout.session.async_payment_succeeded`` or ``..._failed``)."""
        with self._lock:
            session = self.sessions[session_id]
            assert session["status"] == "complete" and session["payment_status"] == "unpaid"
            if succeeded:
                session["payment_status"] = "paid"
            return dict(session)

    def pay(self, session_id: str, **how: bool) -> int:
        """The session paid (``session_paid``) and its ``checkout.session.completed`` event
        delivered to ``webhook_url``; the webhook's status."""
        return self.deliver(self.event(self.session_paid(session_id, **how)))

    def event(self, session: dict[str, Any], *, type: str = "checkout.session.completed") -> bytes:
        """The JSON payload of an event about ``session``, as Stripe sends it."""
        body = {
            "id": f"evt_loopback_{next(self._ids)}",
            "object": "event",
            "api_version": "2025-01-27.acacia",
            "created": int(time.time()),
            "livemode": False,
            "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None},
            "type": type,
            "data": {"object": session},
        }
        return json.dumps(body, indent=2).encode()

    def signature(self, payload: bytes, *, secret: str | None = None) -> str:
        return stripe_signature(payload, secret or self.webhook_secret)

    def deliver(self, payload: bytes) -> int:
        """Post a signed event to ``webhook_url``, as Stripe does; the answer's status."""
        response = requests.post(
            self.webhook_url,
            data=payload,
            headers={
                "Content-Type": "application/json; charset=utf-8",
                "Stripe-Signature": self.signature(payload),
                "User-Agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
            },
            timeout=30,
        )
        self.deliveries.append((json.loads(payload)["id"], response.status_code))
        return response.status_code

    def refunded(self, payment_intent: str) -> int:
        return sum(r.amount for r in self.refunds if r.payment_intent == payment_intent)

    # --- the HTTP side ------------------------------------------------------------------

    def _wsgi(self, environ: dict[str, Any], start_response: Any) -> Any:
        return self._answer(Request(environ))(environ, start_response)

    def _answer(self, request: Request) -> Response:
        path = request.path
        if path.startswith("/checkout/"):
            return self._payment_page(request, path.removeprefix("/checkout/"))
        if request.headers.get("Authorization") != f"Bearer {self.secret_key}":
            return _error(401, "authentication_error", None, "Invalid API Key provided.")
        params = form_decoded(request.get_data(as_text=True))
        key = request.headers.get("Idempotency-Key")
        with self._lock:
            self.calls.append(Call(request.method, path, params, key))
            if self.failures_left > 0:
                self.failures_left -= 1
                return _error(500, "api_error", None, "An unknown error occurred.")
        if (request.method, path) == ("POST", "/v1/checkout/sessions"):
            return self._session_create(params)
        if (request.method, path) == ("GET", "/v1/checkout/sessions"):
            return self._sessions_list(request.args.get("client_reference_id"))
        if path.startswith("/v1/checkout/sessions/"):
            session_id, _, action = path.removeprefix("/v1/checkout/sessions/").partition("/")
            if (request.method, action) == ("GET", ""):
                return self._session_get(session_id)
            if (request.method, action) == ("POST", "expire"):
                return self._session_expire(session_id)
        if (request.method, path) == ("POST", "/v1/refunds"):
            return self._refund_create(params, key)
        return _error(404, "invalid_request_error", "resource_missing", f"No route {path}.")

    def _session_create(self, params: dict[str, Any]) -> Response:
        try:
            [line] = params["line_items"]
            price = line["price_data"]
            amount, currency = int(price["unit_amount"]), price["currency"]
            assert params["mode"] == "payment" and int(line["quantity"]) == 1
            assert price["product_data"]["name"]
            success_url, cancel_url = params["success_url"], params["cancel_url"]
        except (KeyError, ValueError, AssertionError, TypeError) as problem:
            return _error(400, "invalid_request_error", "parameter_missing", repr(problem))
        with self._lock:
            session_id = f"cs_test_loopback_{next(self._ids)}"
            session = {
                "id": session_id,
                "object": "checkout.session",
                "mode": "payment",
                "status": "open",
                "payment_status": "unpaid",
                "amount_total": amount * int(line["quantity"]),
                "currency": currency,
                "client_reference_id": params.get("client_reference_id"),
                "customer_email": params.get("customer_email"),
                "metadata": params.get("metadata", {}),
                "payment_intent": None,
                "success_url": success_url,
                "cancel_url": cancel_url,
                "url": f"{self.base_url}/checkout/{session_id}",
                "livemode": False,
            }
            self.sessions[session_id] = session
        if self.on_session_create is not None:
            self.on_session_create(dict(session))
        return _json(200, session)

    def _session_get(self, session_id: str) -> Response:
        with self._lock:
            session = self.sessions.get(session_id)
            if session is None:
                return _no_session(session_id)
            return _json(200, session)

    def _sessions_list(self, client_reference_id: str | None) -> Response:
        with self._lock:
            found = [
                s
                for s in reversed(self.sessions.values())
                if client_reference_id in (None, s["client_reference_id"])
            ]
            listed = {"object": "list", "url": "/v1/checkout/sessions", "has_more": False}
            return _json(200, {**listed, "data": found})

    def _session_expire(self, session_id: str) -> Response:
        with self._lock:
            session = self.sessions.get(session_id)
            if session is None:
                return _no_session(session_id)
            if session["status"] != "open":
                return _error(
                    400, "invalid_request_error", None,
                    'Only Checkout Sessions with a status in ["open"] can be expired.',
                )  # fmt: skip
            session["status"] = "expired"
            return _json(200, session)

    def _refund_create(self, params: dict[str, Any], key: str | None) -> Response:
        with self._lock:
            done = next((r for r in self.refunds if key and r.key == key), None)
            if done is None:
                intent = params.get("payment_intent", "")
                paid = next(
                    (s for s in self.sessions.values() if s["payment_intent"] == intent), None
                )
                if paid is None:
                    return _error(
                        400, "invalid_request_error", "resource_missing",
                        f"No such payment_intent: '{intent}'",
                    )  # fmt: skip
                left = paid["amount_total"] - self.refunded(intent)
                amount = int(params.get("amount") or left)
                if left <= 0:
                    return _error(
                        400, "invalid_request_error", "charge_already_refunded",
                        "Charge has already been refunded.",
                    )  # fmt: skip
                if amount > left:
                    return _error(
                        400, "invalid_request_error", "amount_too_large",
                        f"Refund amount ({amount}) is greater than unrefunded amount ({left}).",
                    )  # fmt: skip
                done = Refunded(f"re_loopback_{next(self._ids)}", intent, amount, key)
                self.refunds.append(done)
        return _json(
            200,
            {
                "id": done.id,
                "object": "refund",
                "amount": done.amount,
                "payment_intent": done.payment_intent,
                "status": "succeeded",
            },
        )

    def _payment_page(self, request: Request, session_id: str) -> Response:
        session = self.sessions.get(session_id)
        if session is None:
            return Response("No such session.", status=404)
        if session["status"] != "open":
            return Response(f"This Checkout Session is {session['status']}.", status=410)
        if request.method == "POST":
            paid = self.session_paid(session_id)
            self.deliver(self.event(paid))
            return Response(status=303, headers={"Location": paid["success_url"]})
        amount = f"{session['amount_total'] / 100:.2f} {session['currency'].upper()}"
        page = (
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            "<title>Loopback Checkout</title></head><body>"
            f"<h1>Pay {html.escape(amount)}</h1>"
            f"<p id='session'>{html.escape(session_id)}</p>"
            "<form method='post'><button type='submit'>Pay</button></form>"
            f"<p><a href='{html.escape(session['cancel_url'])}'>Back</a></p></body></html>"
        )
        return Response(page, content_type="text/html; charset=utf-8")


def _json(status: int, body: Any) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")


def _no_session(session_id: str) -> Response:
    message = f"No such checkout.session: '{session_id}'"
    return _error(404, "invalid_request_error", "resource_missing", message)


def _error(status: int, kind: str, code: str | None, message: str) -> Response:
    return _json(status, {"error": {"type": kind, "code": code, "message": message}})
