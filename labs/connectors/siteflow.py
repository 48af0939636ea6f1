"""The Site Flow (HP OneFlow) connector: lab orders over a Site Flow compatible HTTP API.

Every request is signed with the lab's token and secret (``x-oneflow-authorization``, an
HMAC-SHA256 of ``"<METHOD> <path> <date>"``) and goes through the guarded outbound client.
Submission is keyed on the shipment id (``sourceOrderId``): a resubmission after a failure
whose outcome we never saw (a 5xx, a timeout) is answered with the order the site already has,
so a shipment never becomes two lab orders. Progress is polled (``GET /order/{id}``) with a
wait that doubles from ``SITEFLOW_POLL_BASE_SECONDS`` up to ``SITEFLOW_POLL_MAX_SECONDS``.
"""

import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit

from django.conf import settings

from common.http import OutboundError, OutboundRefused, guarded_session, send_json_bytes
from labs.capabilities import CAPABILITIES
from labs.connectors.base import (
    LAB_CANCELLED,
    LAB_ERROR,
    LabConnector,
    LabOrder,
    LabOrderItem,
    LabProgress,
    LabResult,
)
from labs.variant_codes import variant_code

# Everything Site Flow can do to an order after submission.
SITEFLOW_CAPABILITIES = CAPABILITIES
MAX_RESPONSE_BYTES = 1024 * 1024
# The item that carries the packing slip and branding files (its components), and the
# component code of the packing slip (branding files use their branding name).
INSERTS_SKU = "inserts"
PACKING_SLIP_CODE = "packingSlip"
SPINE_AREA = "spine"
# Statuses that say "try later" although they are 4xx.
_RETRYABLE_CLIENT_STATUSES = frozenset({408, 425, 429})


@dataclass(frozen=True)
class Carrier:
    """A carrier and its service, as a merchant sees them on a shipment."""

    name: str
    service: str


# Carrier aliases Site Flow sites commonly set up, and what each stands for.
CARRIER_ALIASES: Mapping[str, Carrier] = {
    "dhl-express": Carrier("DHL", "Express"),
    "dhl-parcel": Carrier("DHL", "Parcel"),
    "dpd-next-day": Carrier("DPD", "Next Day"),
    "fedex-ground": Carrier("FedEx", "Ground"),
    "fedex-international-priority": Carrier("FedEx", "International Priority"),
    "royalmail-24": Carrier("Royal Mail", "Tracked 24"),
    "royalmail-48": Carrier("Royal Mail", "Tracked 48"),
    "ups-express": Carrier("UPS", "Express"),
    "ups-standard": Carrier("UPS", "Standard"),
    "usps-ground-advantage": Carrier("USPS", "Ground Advantage"),
    "usps-priority": Carrier("USPS", "Priority Mail"),
}
# Carriers by the word an alias begins with, for aliases not listed above.
CARRIER_NAMES: Mapping[str, str] = {
    "dhl": "DHL",
    "dpd": "DPD",
    "evri": "Evri",
    "fedex": "FedEx",
    "gls": "GLS",
    "parcelforce": "Parcelforce",
    "postnl": "PostNL",
    "royalmail": "Royal Mail",
    "tnt": "TNT",
    "ups": "UPS",
    "usps": "USPS",
}


def carrier_alias_resolve(alias: str, *, shipping_method: str) -> Carrier:
    """The carrier and service a site's carrier ``alias`` stands for (``dhl-express``: DHL,
    Express). An alias not in ``CARRIER_ALIASES`` is read as ``<carrier>-<service>``: the
    carrier from ``CARRIER_NAMES`` (else the word capitalised), the service's words
    capitalised (``ups-next-day-air``: UPS, Next Day Air), or ``shipping_method`` when the
    alias names the carrier alone."""
    key = alias.strip().lower()
    if key in CARRIER_ALIASES:
        return CARRIER_ALIASES[key]
    words = key.replace("_", "-").replace(" ", "-").split("-")
    words = [word for word in words if word]
    if not words:
        return Carrier(alias.strip(), shipping_method)
    carrier, service = words[0], words[1:]
    return Carrier(
        CARRIER_NAMES.get(carrier) or carrier.capitalize(),
        " ".join(word.capitalize() for word in service) or shipping_method,
    )


@dataclass(frozen=True)
class SiteflowSettings:
    """One lab's Site Flow settings (``labs.Lab``'s ``siteflow_*`` fields)."""

    base_url: str
    token: str
    secret: str
    destination: str
    carrier_aliases: Mapping[str, str]
    product_codes: Mapping[str, str]  # product SKU → the lab's product code
    # Product SKU → the lab's codes per variant (``labs.variant_codes``).
    variant_codes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Answer:
    status: int
    body: Any
    garbled: bool = False  # a body came that is not JSON
    location: str = ""  # a redirect's Location, without its query

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def redirect(self) -> bool:
        return 300 <= self.status < 400

    def redirect_message(self) -> str:
        """A redirect is not followed (the guarded client never follows one): most likely the
        lab's base URL is not the site's API any more."""
        to = f" to {self.location}" if self.location else ""
        return (
            f"Site Flow answered HTTP {self.status}, a redirect{to}, which is not followed: "
            "check the lab's base URL."
        )

    def unexpected_message(self, what: str) -> str:
        """Why a 2xx answer is not taken as ``what`` done."""
        if self.garbled:
            return f"Site Flow answered HTTP {self.status} with a body that is not JSON."
        if self.body is None:
            return f"Site Flow answered HTTP {self.status} without a body: not taken as {what}."
        return (
            f"Site Flow answered HTTP {self.status} with an answer that is not the lab order "
            f"{what}: not taken as done."
        )

    def site_message(self) -> str:
        """The site's ``error.message``, or ""."""
        error = self.body.get("error") if isinstance(self.body, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        return message if isinstance(message, str) else ""

    def error_message(self) -> str:
        """The site's ``error.message``, else a sentence naming the status."""
        return self.site_message() or f"Site Flow answered HTTP {self.status}."


def sign(*, secret: str, method: str, path: str, date: str) -> str:
    """The hex HMAC-SHA256 of ``"<METHOD> <path> <date>"`` under the lab's secret."""
    text = f"{method.upper()} {path} {date}"
    return hmac.new(secret.encode(), text.encode(), hashlib.sha256).hexdigest()


def _iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _named_order(body: Any, reference: str) -> Mapping[str, Any] | None:
    """The Site Flow order in an answer (the body, or nested under ``order``) when its ``_id``
    is ``reference``; None for any other answer."""
    if not isinstance(body, dict) or not reference:
        return None
    for candidate in (body, body.get("order")):
        if isinstance(candidate, dict) and candidate.get("_id") == reference:
            return candidate
    return None


def _first_shipment(order: Mapping[str, Any]) -> Mapping[str, Any]:
    shipments = order.get("shipments")
    first = shipments[0] if isinstance(shipments, list) and shipments else None
    return first if isinstance(first, dict) else {}


def _held(order: Mapping[str, Any]) -> bool | None:
    """Whether the site shows the order on hold (``held``, or the status ``onhold``); None
    when it does not say."""
    if order.get("status") == "onhold" or order.get("held") is True:
        return True
    if order.get("held") is False:
        return False
    return None


def _carrier_alias_of(order: Mapping[str, Any]) -> object:
    carrier = _first_shipment(order).get("carrier")
    return carrier.get("alias") if isinstance(carrier, dict) else None


def _order_id(body: Any) -> str:
    """The Site Flow order id in an answer: ``_id``, or nested under ``order``."""
    if not isinstance(body, dict):
        return ""
    for candidate in (body, body.get("order")):
        if isinstance(candidate, dict) and isinstance(candidate.get("_id"), str):
            return str(candidate["_id"])
    return ""


def _status_message(body: Mapping[str, Any]) -> str:
    """The site's word on a cancelled or failed order: its ``error.message``, else its
    ``message`` (or "")."""
    error = body.get("error")
    nested = error.get("message") if isinstance(error, dict) else None
    for candidate in (nested, body.get("message")):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    return ""


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def component_attributes(item: LabOrderItem, area: str) -> dict[str, Any]:
    """A component's ``attributes``: the item's canonical attributes, and on a photobook's
    ``spine`` component the item's spine object as given (``attributes.spine``)."""
    attributes: dict[str, Any] = dict(item.attributes)
    if area == SPINE_AREA and item.spine is not None:
        attributes["spine"] = dict(item.spine)
    return attributes


def ship_to(recipient: Mapping[str, Any]) -> dict[str, Any]:
    """An order's recipient (as the API shows it) as Site Flow's ``shipTo``."""
    address = recipient.get("address") or {}

    def text(value: object) -> str | None:
        return str(value) if value else None

    return {
        "name": text(recipient.get("name")),
        "companyName": None,
        "address1": text(address.get("line1")),
        "address2": text(address.get("line2")),
        "town": text(address.get("townOrCity")),
        "postcode": text(address.get("postalOrZipCode")),
        "state": text(address.get("stateOrCounty")),
        "isoCountry": text(address.get("countryCode")),
        "phone": text(recipient.get("phoneNumber")),
        "email": text(recipient.get("email")),
    }


class SiteflowConnector(LabConnector):
    def __init__(
        self, *, lab_code: str, capabilities: frozenset[str], site: SiteflowSettings
    ) -> None:
        super().__init__(lab_code=lab_code, capabilities=capabilities)
        self.site = site

    # --- the wire -----------------------------------------------------------------------

    def _request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> _Answer:
        """Send one signed request; raises ``OutboundError``/``OutboundRefused`` when no answer
        came (network, timeout, a refused address)."""
        url = self.site.base_url.rstrip("/") + path
        date = _iso_now()
        signature = sign(secret=self.site.secret, method=method, path=urlsplit(url).path, date=date)
        headers = {
            "Accept": "application/json",
            "x-oneflow-date": date,
            "x-oneflow-algorithm": "SHA256",
            "x-oneflow-authorization": f"{self.site.token}:{signature}",
        }
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        session = guarded_session()
        try:
            response = send_json_bytes(
                session,
                method,
                url,
                data,
                headers,
                float(settings.SITEFLOW_TIMEOUT_SECONDS),
                max_response_bytes=MAX_RESPONSE_BYTES,
            )
        finally:
            session.close()
        location = urlsplit(response.headers.get("Location", ""))._replace(query="", fragment="")
        try:
            parsed = json.loads(response.content) if response.content else None
        except ValueError:
            return _Answer(response.status_code, None, garbled=True, location=location.geturl())
        return _Answer(response.status_code, parsed, location=location.geturl())

    def _operation(
        self,
        capability: str,
        order: LabOrder,
        suffix: str,
        body: Mapping[str, Any] | None,
        *,
        shows: Callable[[Mapping[str, Any]], bool],
        what: str,
        confirmed: Callable[[], bool] | None = None,
    ) -> LabResult:
        """An operation on a submitted lab order: never raises, a failure is a message. Only
        a 2xx whose answer is the lab order (its ``_id``) as the operation leaves it (``shows``)
        is the operation done; a redirect is not followed; no answer (a timeout, a connection
        lost after sending) is ``unanswered``: the site may have done it. So is a 2xx whose
        answer is not the lab order (no body, a 204, a body that is not JSON or names no
        ``_id`` of it): the site took the request and may well have made the change, so it is
        neither done nor refused, and what the site then holds settles it
        (``operation_done``), unless ``confirmed`` (asked at once) says it is done."""
        if not self.supports(capability):
            return self._unsupported(capability)
        if not order.reference:
            return LabResult(
                False, message=f"Shipment {order.shipment_id} is not at Site Flow yet."
            )
        path = f"/order/{quote(order.reference, safe='')}{suffix}"
        try:
            answer = self._request("PUT", path, body)
        except OutboundError as exc:
            message = f"The lab could not be reached: {exc}"
            return LabResult(False, reference=order.reference, message=message, unanswered=exc.sent)
        except OutboundRefused as exc:
            return LabResult(False, reference=order.reference, message=str(exc))
        if answer.redirect:
            return LabResult(False, reference=order.reference, message=answer.redirect_message())
        if answer.ok:
            found = _named_order(answer.body, order.reference)
            if found is not None and shows(found):
                return LabResult(True, reference=order.reference)
            message = answer.unexpected_message(f"{order.reference} {what}")
            if found is not None:  # the lab order as it stands, without the change
                return LabResult(False, reference=order.reference, message=message)
            if confirmed is not None and confirmed():
                return LabResult(True, reference=order.reference)
            return LabResult(False, reference=order.reference, message=message, unanswered=True)
        return LabResult(False, reference=order.reference, message=answer.error_message())

    # --- the interface ------------------------------------------------------------------

    def map_to_json(self, order: LabOrder, *, include_nulls: bool = True) -> dict[str, Any]:
        recipient = order.recipient
        data = {
            "destination": {"name": self.site.destination},
            "orderData": {
                "sourceOrderId": order.shipment_id,
                "customerName": recipient.get("name") or None,
                "email": recipient.get("email") or None,
                "items": [
                    {
                        "sourceItemId": item.item_id,
                        "sku": self._product_code(item),
                        "quantity": item.copies,
                        "components": [
                            {
                                "code": area,
                                "path": url,
                                "fetch": True,
                                "attributes": component_attributes(item, area),
                            }
                            for area, url in item.files.items()
                        ],
                    }
                    for item in order.items
                ]
                + self._inserts(order),
                "shipments": [
                    {
                        "shipTo": ship_to(recipient),
                        "carrier": {"alias": self._carrier_alias(order.shipping_method)},
                    }
                ],
            },
        }
        return data if include_nulls else _without_nulls(data)

    def _product_code(self, item: LabOrderItem) -> str:
        """The lab's code for the item's variant, else for its product, else the SKU."""
        codes = self.site.variant_codes.get(item.sku) or {}
        return (
            variant_code(codes, item.attributes)
            or self.site.product_codes.get(item.sku)
            or item.sku
        )

    def _inserts(self, order: LabOrder) -> list[dict[str, Any]]:
        """The packing slip and branding files as one more item whose components the site
        fetches and puts in the parcel (none without them)."""
        files = ([(PACKING_SLIP_CODE, order.packing_slip)] if order.packing_slip else []) + list(
            order.branding.items()
        )
        if not files:
            return []
        return [
            {
                "sourceItemId": f"{order.shipment_id}-inserts",
                "sku": self.site.product_codes.get(INSERTS_SKU) or INSERTS_SKU,
                "quantity": 1,
                "components": [
                    {"code": code, "path": url, "fetch": True, "attributes": {}}
                    for code, url in files
                ],
            }
        ]

    def _carrier_alias(self, shipping_method: str) -> str:
        return self.site.carrier_aliases.get(shipping_method) or shipping_method

    def submit(self, order: LabOrder) -> LabResult:
        """Create the lab order, once: a shipment with a reference is not sent again, and a
        resubmitted ``sourceOrderId`` answered with the existing order (409 or its ``_id``)
        is that order. Unreachable, 5xx: retryable; any other refusal: not."""
        if order.reference:
            return LabResult(True, reference=order.reference)
        try:
            answer = self._request("POST", "/order", self.map_to_json(order))
        except OutboundRefused as exc:
            return LabResult(False, message=str(exc), retryable=False)
        except OutboundError as exc:
            return LabResult(False, message=str(exc), retryable=True)
        if answer.redirect:  # shown to staff on the shipment's issue, and tried again
            return LabResult(False, message=answer.redirect_message(), retryable=True)
        reference = _order_id(answer.body)
        if answer.ok or answer.status == 409:
            if reference:
                return LabResult(True, reference=reference)
            if answer.ok:  # accepted, but unnamed: a resubmission will name it (409)
                return LabResult(
                    False, message="Site Flow accepted the order without its _id.", retryable=True
                )
        if answer.status >= 500 or answer.status in _RETRYABLE_CLIENT_STATUSES:
            detail = answer.site_message()
            message = f"Site Flow answered HTTP {answer.status}" + (
                f": {detail}" if detail else "."
            )
            return LabResult(False, message=message, retryable=True)
        return LabResult(False, message=answer.error_message(), retryable=False)

    def find(self, order: LabOrder) -> LabResult | None:
        """The site's order for the shipment, looked up by ``sourceOrderId``
        (``GET {base}/order?sourceOrderId=<shipment id>``, answered with the order, a list of
        orders, or ``{"data": [...]}``); None when the site has none (an empty answer, a 404)
        or cannot say (unreachable, another status, no such search)."""
        if order.reference:
            return LabResult(True, reference=order.reference)
        try:
            answer = self._request(
                "GET", f"/order?sourceOrderId={quote(order.shipment_id, safe='')}"
            )
        except (OutboundError, OutboundRefused):
            return None
        if not answer.ok:
            return None
        found = answer.body
        if isinstance(found, dict) and isinstance(found.get("data"), list):
            found = found["data"]
        candidates = found if isinstance(found, list) else [found]
        for candidate in candidates:
            data = candidate.get("orderData") if isinstance(candidate, dict) else None
            source = data.get("sourceOrderId") if isinstance(data, dict) else None
            reference = _order_id(candidate)
            if reference and source in (None, order.shipment_id):
                return LabResult(True, reference=reference)
        return None

    def poll_wait(self, *, submitted_at: datetime, now: datetime) -> timedelta:
        """The wait before the next check: the time since submission, between the base and
        the cap, so checks come at base, 2 x base, 4 x base ... after submission."""
        base = float(settings.SITEFLOW_POLL_BASE_SECONDS)
        cap = float(settings.SITEFLOW_POLL_MAX_SECONDS)
        elapsed = (now - submitted_at).total_seconds()
        return timedelta(seconds=min(max(elapsed, base), cap))

    def progress(self, order: LabOrder, *, submitted_at: datetime, now: datetime) -> LabProgress:
        """Where the lab order stands. A failed check is not an error: it is asked again later
        (``extra["error"]`` says why); ``extra["status"]`` is the site's status."""
        next_check_at = now + self.poll_wait(submitted_at=submitted_at, now=now)
        if not order.reference:
            message = f"Shipment {order.shipment_id} has no Site Flow order id."
            return LabProgress(next_check_at=next_check_at, extra={"error": message})
        try:
            answer = self._request("GET", f"/order/{quote(order.reference, safe='')}")
        except (OutboundError, OutboundRefused) as exc:
            return LabProgress(next_check_at=next_check_at, extra={"error": str(exc)})
        if not answer.ok:
            return LabProgress(next_check_at=next_check_at, extra={"error": answer.error_message()})
        found = _named_order(answer.body, order.reference)
        if found is None:
            error = answer.unexpected_message(order.reference)
            return LabProgress(next_check_at=next_check_at, extra={"error": error})
        status = str(found.get("status") or "")
        extra = {"status": status}
        if status in (LAB_CANCELLED, LAB_ERROR):  # ended on the site's side: not asked again
            return LabProgress(ended=status, message=_status_message(found), extra=extra)
        if status == "inproduction":
            return LabProgress(in_production_at=now, next_check_at=next_check_at, extra=extra)
        if status != "shipped":  # printready: nothing to record yet
            return LabProgress(next_check_at=next_check_at, extra=extra)
        shipment = _first_shipment(found)
        named = shipment.get("carrier")
        carrier: Mapping[str, Any] = named if isinstance(named, dict) else {}
        shipped_at = _parse_time(shipment.get("shippedAt")) or now
        return LabProgress(
            in_production_at=shipped_at,
            shipped_at=shipped_at,
            carrier_name=str(carrier.get("name") or ""),
            carrier_service=str(carrier.get("service") or ""),
            tracking_number=str(shipment.get("trackingNumber") or ""),
            tracking_url=str(shipment.get("trackingUrl") or ""),
            extra=extra,
        )

    def cancel(self, order: LabOrder) -> LabResult:
        """Cancel the lab order; one the site refuses because it is cancelled already (a
        cancel of ours that reached the site before a worker died, or the site's own) is a
        cancel done: the site is asked where the order stands before a refusal is believed,
        and when it answers a 2xx that is not the lab order (for the callers that do not
        settle an unanswered cancel later: a withdrawal, a resubmission's)."""
        result = self._operation(
            "cancel",
            order,
            "/cancel",
            None,
            shows=lambda found: found.get("status") == LAB_CANCELLED,
            what="cancelled",
            confirmed=lambda: self._cancelled(order),
        )
        if result.successful or result.unanswered or not self.supports("cancel"):
            return result
        if self._cancelled(order):
            return LabResult(True, reference=order.reference)
        return result

    def _order_read(self, order: LabOrder) -> Mapping[str, Any] | None:
        """The site's lab order (``GET /order/{id}``) when it answers with it, else None."""
        if not order.reference:
            return None
        try:
            answer = self._request("GET", f"/order/{quote(order.reference, safe='')}")
        except (OutboundError, OutboundRefused):
            return None
        return _named_order(answer.body, order.reference) if answer.ok else None

    def _cancelled(self, order: LabOrder) -> bool:
        found = self._order_read(order)
        return found is not None and found.get("status") == LAB_CANCELLED

    def hold(self, order: LabOrder) -> LabResult:
        return self._operation(
            "hold",
            order,
            "/hold",
            None,
            shows=lambda found: (
                _held(found) is not False and found.get("status") not in ("shipped", LAB_CANCELLED)
            ),
            what="on hold",
        )

    def unhold(self, order: LabOrder) -> LabResult:
        return self._operation(
            "unhold",
            order,
            "/unhold",
            None,
            shows=lambda found: _held(found) is not True,
            what="released",
        )

    def update_address(self, order: LabOrder, recipient: Mapping[str, Any]) -> LabResult:
        return self._operation(
            "updateAddress",
            order,
            "/shipments/0",
            {"shipTo": ship_to(recipient)},
            shows=lambda found: isinstance(_first_shipment(found).get("shipTo"), dict),
            what="with its new address",
        )

    def update_shipping_method(self, order: LabOrder, shipping_method: str) -> LabResult:
        alias = self._carrier_alias(shipping_method)
        return self.update_carrier(order, alias)

    def update_carrier(self, order: LabOrder, carrier_alias: str) -> LabResult:
        """Ship the lab order with the site's carrier ``carrier_alias`` (the bulk shipping
        update names the alias itself rather than a method the lab's settings map)."""
        return self._operation(
            "updateShippingMethod",
            order,
            "/shipments/0",
            {"carrier": {"alias": carrier_alias}},
            shows=lambda found: _carrier_alias_of(found) == carrier_alias,
            what=f"with the carrier {carrier_alias}",
        )

    def answer_window_seconds(self) -> float:
        return float(settings.SITEFLOW_TIMEOUT_SECONDS)

    def operation_done(
        self, order: LabOrder, operation: str, change: Mapping[str, Any]
    ) -> bool | None:
        """What the site's lab order (``GET /order/{id}``) shows of the operation: a cancel
        done is its status ``cancelled``; a hold, ``held: true`` (or the status ``onhold``); a
        release, ``held: false``; a new carrier, its first shipment's ``carrier.alias``; a new
        address, its first shipment's ``shipTo`` holding every field sent. None when the site
        cannot be asked, answers something else, or does not say whether it is held."""
        if not order.reference:
            return None
        found = self._order_read(order)
        if found is None:
            return None
        status = found.get("status")
        if operation == "cancel":
            return status == LAB_CANCELLED
        if status == LAB_CANCELLED:
            return False
        if operation == "hold":
            held = _held(found)
            return None if held is None and status != "shipped" else held is True
        if operation == "unhold":
            held = _held(found)
            return None if held is None else not held
        if operation == "updateShippingMethod":
            alias = change.get("carrierAlias") or self._carrier_alias(
                str(change.get("shippingMethod") or "")
            )
            return _carrier_alias_of(found) == alias
        if operation == "updateAddress":
            held_to = _first_shipment(found).get("shipTo")
            sent = ship_to(change.get("recipient") or {})
            return isinstance(held_to, dict) and all(
                held_to.get(key) == value for key, value in sent.items() if value is not None
            )
        return None
