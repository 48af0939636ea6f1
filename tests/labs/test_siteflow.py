"""The Site Flow connector against a local Site Flow compatible server (tests/support/siteflow.py):
signed requests, the order shape, submission without duplicates, polling to dispatch, the
operations, refusals, and configuring a lab for it."""

import hashlib
import hmac
import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from PIL import Image
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from labs.connectors import LabOrder, LabOrderItem, LabProgress, LabResult, connector_for
from labs.connectors.registry import UnavailableConnector
from labs.connectors.siteflow import (
    Carrier,
    SiteflowConnector,
    SiteflowSettings,
    carrier_alias_resolve,
    sign,
)
from labs.models import Lab, LabProduct
from orders.lab_orders import lab_file_url
from orders.models import (
    Asset,
    Charge,
    ChargeType,
    Order,
    OrderFile,
    OrderIssue,
    PipelineStep,
    Shipment,
    Stage,
)
from orders.pipeline.retention import images_purge_expired
from orders.pipeline.state_machine import order_advance
from orders.resubmission import shipment_resubmit
from tests.labs.factories import LabFactory, LabProductFactory
from tests.support.orders import events_of
from tests.support.siteflow import SiteflowServer, lab_at_site, site_running, siteflow_lab

TOKEN = "token-gb1"
SECRET = "s3cret-siteflow-value"
SUBMITTED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
EVERY_CAPABILITY = frozenset({"cancel", "hold", "unhold", "updateAddress", "updateShippingMethod"})


@pytest.fixture
def print_url(httpserver: HTTPServer) -> str:
    """A print-ready file the site can fetch."""
    httpserver.expect_request("/print.jpg").respond_with_data(
        jpeg_bytes(), content_type="image/jpeg"
    )
    return httpserver.url_for("/print.jpg")


@pytest.fixture
def site(settings: Any) -> Iterator[SiteflowServer]:
    with site_running(settings, token=TOKEN, secret=SECRET) as server:
        yield server


def connector(
    site: SiteflowServer, *, secret: str = SECRET, capabilities: frozenset[str] = EVERY_CAPABILITY
) -> SiteflowConnector:
    return SiteflowConnector(
        lab_code="gb1",
        capabilities=capabilities,
        site=SiteflowSettings(
            base_url=site.base_url,
            token=TOKEN,
            secret=secret,
            destination="acme-print",
            carrier_aliases={"Standard": "royalmail-48", "Express": "dhl-express"},
            product_codes={"GLOBAL-FAP-16X24": "FAP-16x24-MATT"},
        ),
    )


def lab_order(
    shipment_id: str = "shp_1234", *, reference: str = "", file: str = "https://files.example/p.jpg"
) -> LabOrder:
    return LabOrder(
        shipment_id=shipment_id,
        order_id="ord_99",
        lab_code="gb1",
        shipping_method="Standard",
        recipient={
            "name": "Ada Lovelace",
            "email": "ada@example.com",
            "phoneNumber": "+44 7700 900123",
            "address": {
                "line1": "1 Analytical Row",
                "line2": "",
                "postalOrZipCode": "SW1A 1AA",
                "countryCode": "GB",
                "townOrCity": "London",
                "stateOrCounty": "",
            },
        },
        items=(
            LabOrderItem(
                item_id="ori_1",
                sku="GLOBAL-FAP-16X24",
                copies=2,
                attributes={"paperType": "Photo Rag"},
                files={"default": file},
            ),
        ),
        reference=reference,
    )


# --- the wire ------------------------------------------------------------------------------


def test_the_signature_is_a_hex_hmac_sha256_of_method_path_and_date() -> None:
    text = b"GET /api/order/1 2026-03-01T12:00:00Z"

    signature = sign(secret="key", method="get", path="/api/order/1", date="2026-03-01T12:00:00Z")

    assert signature == hmac.new(b"key", text, hashlib.sha256).hexdigest()


def test_submit_sends_site_flows_order_shape_and_answers_its_id(
    site: SiteflowServer, print_url: str
) -> None:
    result = connector(site).submit(lab_order(file=print_url))

    assert result == LabResult(True, reference="sf000001")
    assert site.unauthorised == 0
    assert site.fetched == {print_url: 200}
    assert site.order("shp_1234").submitted == {
        "destination": {"name": "acme-print"},
        "orderData": {
            "sourceOrderId": "shp_1234",
            "customerName": "Ada Lovelace",
            "email": "ada@example.com",
            "items": [
                {
                    "sourceItemId": "ori_1",
                    "sku": "FAP-16x24-MATT",
                    "quantity": 2,
                    "components": [
                        {
                            "code": "default",
                            "path": print_url,
                            "fetch": True,
                            "attributes": {"paperType": "Photo Rag"},
                        }
                    ],
                }
            ],
            "shipments": [
                {
                    "shipTo": {
                        "name": "Ada Lovelace",
                        "companyName": None,
                        "address1": "1 Analytical Row",
                        "address2": None,
                        "town": "London",
                        "postcode": "SW1A 1AA",
                        "state": None,
                        "isoCountry": "GB",
                        "phone": "+44 7700 900123",
                        "email": "ada@example.com",
                    },
                    "carrier": {"alias": "royalmail-48"},
                }
            ],
        },
    }


def test_map_to_json_is_what_submit_sends_and_can_drop_nulls(
    site: SiteflowServer, print_url: str
) -> None:
    lab = connector(site)
    lab.submit(lab_order(file=print_url))

    assert lab.map_to_json(lab_order(file=print_url)) == site.order("shp_1234").submitted
    without = lab.map_to_json(lab_order(file=print_url), include_nulls=False)
    assert without["orderData"]["shipments"][0]["shipTo"] == {
        "name": "Ada Lovelace",
        "address1": "1 Analytical Row",
        "town": "London",
        "postcode": "SW1A 1AA",
        "isoCountry": "GB",
        "phone": "+44 7700 900123",
        "email": "ada@example.com",
    }


def test_a_resubmission_names_the_existing_order_and_creates_no_second_one(
    site: SiteflowServer,
    print_url: str,
) -> None:
    first = connector(site).submit(lab_order(file=print_url))

    again = connector(site).submit(lab_order(file=print_url))

    assert first == again == LabResult(True, reference="sf000001")
    assert list(site.orders) == ["shp_1234"]
    posts = [r for r in site.received if r.method == "POST"]
    assert len(posts) == 2


def test_find_looks_the_order_up_by_its_source_id_and_answers_none_without_one(
    site: SiteflowServer, print_url: str
) -> None:
    assert connector(site).find(lab_order("shp_777", file=print_url)) is None
    connector(site).submit(lab_order("shp_777", file=print_url))
    connector(site).submit(lab_order("shp_778", file=print_url))

    found = connector(site).find(lab_order("shp_777", file=print_url))

    assert found == LabResult(True, reference="sf000001")
    assert connector(site).find(lab_order("shp_778")) == LabResult(True, reference="sf000002")
    assert site.submissions == {"shp_777": 1, "shp_778": 1}
    assert site.lookups == 3
    # A site that cannot be asked (no search, unreachable) answers None: the caller submits,
    # which the site takes as the same submission.
    site.stop()
    assert connector(site).find(lab_order("shp_777")) is None


def test_a_shipment_with_a_reference_is_not_sent_again(site: SiteflowServer) -> None:
    result = connector(site).submit(lab_order(reference="sf-earlier"))

    assert result == LabResult(True, reference="sf-earlier")
    assert site.received == []


def test_a_wrong_secret_is_refused_with_the_sites_message_and_not_retried(
    site: SiteflowServer,
) -> None:
    result = connector(site, secret="not-the-secret").submit(lab_order())

    assert result == LabResult(False, message="Invalid signature", retryable=False)
    assert site.unauthorised == 1
    assert site.orders == {}


def test_a_5xx_at_submission_is_retryable_and_the_retry_finds_the_stored_order(
    site: SiteflowServer,
    print_url: str,
) -> None:
    site.fail_next_submissions(1, status=503)

    failed = connector(site).submit(lab_order(file=print_url))
    retried = connector(site).submit(lab_order(file=print_url))

    assert failed == LabResult(
        False, message="Site Flow answered HTTP 503: Temporarily unavailable", retryable=True
    )
    assert retried == LabResult(True, reference="sf000001")
    assert list(site.orders) == ["shp_1234"]


def test_an_unreachable_site_is_a_retryable_submission_failure_and_no_exception(
    settings: Any,
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    server = SiteflowServer(token=TOKEN, secret=SECRET)
    server.start()
    server.stop()  # nothing listens on its port any more

    result = connector(server).submit(lab_order())
    refused = connector(server).hold(lab_order(reference="sf000001"))

    assert (result.successful, result.retryable) == (False, True)
    assert result.message.startswith("Could not connect to '127.0.0.1'")
    assert refused.successful is False
    assert refused.message.startswith("The lab could not be reached: Could not connect to '127.0")


def test_a_loopback_site_is_refused_by_the_address_guard_unless_allowed(
    site: SiteflowServer, settings: Any
) -> None:
    settings.ALLOW_PRIVATE_URLS = False

    result = connector(site).submit(lab_order())

    assert (result.successful, result.retryable) == (False, True)
    assert "the host cannot be reached from the service" in result.message
    assert site.received == []


# --- following production ------------------------------------------------------------------


def test_polling_waits_double_from_the_base_up_to_the_cap(
    site: SiteflowServer, print_url: str, settings: Any
) -> None:
    settings.SITEFLOW_POLL_BASE_SECONDS = 60
    settings.SITEFLOW_POLL_MAX_SECONDS = 900
    lab = connector(site)
    reference = lab.submit(lab_order(file=print_url)).reference
    order = lab_order(file=print_url, reference=reference)

    waits = [
        lab.progress(order, submitted_at=SUBMITTED, now=SUBMITTED + timedelta(seconds=s))
        for s in (0, 60, 120, 240, 480, 960, 86_400)
    ]

    assert [(p.next_check_at - SUBMITTED).total_seconds() for p in waits if p.next_check_at] == [
        60, 120, 240, 480, 960, 1860, 87_300,
    ]  # fmt: skip
    assert {p.extra["status"] for p in waits} == {"printready"}
    assert {(p.in_production_at, p.shipped_at) for p in waits} == {(None, None)}


def test_progress_maps_production_and_dispatch_with_the_sites_tracking(
    site: SiteflowServer,
    print_url: str,
) -> None:
    lab = connector(site)
    order = lab_order(file=print_url, reference=lab.submit(lab_order(file=print_url)).reference)
    now = SUBMITTED + timedelta(minutes=5)

    site.advance("shp_1234", "inproduction")
    producing = lab.progress(order, submitted_at=SUBMITTED, now=now)
    site.ship(
        "shp_1234",
        tracking_number="RM123456789GB",
        tracking_url="https://track.example/RM123456789GB",
        carrier_name="Royal Mail",
        carrier_service="Tracked 48",
        shipped_at="2026-03-02T09:30:00Z",
    )
    shipped = lab.progress(order, submitted_at=SUBMITTED, now=now)

    assert (producing.in_production_at, producing.shipped_at) == (now, None)
    assert producing.next_check_at == now + timedelta(seconds=300)
    shipped_at = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
    assert (shipped.shipped_at, shipped.in_production_at, shipped.next_check_at) == (
        shipped_at, shipped_at, None,
    )  # fmt: skip
    assert (shipped.carrier_name, shipped.carrier_service) == ("Royal Mail", "Tracked 48")
    assert (shipped.tracking_number, shipped.tracking_url) == (
        "RM123456789GB", "https://track.example/RM123456789GB",
    )  # fmt: skip


def test_a_failed_check_is_asked_again_later_not_raised(site: SiteflowServer) -> None:
    progress = connector(site).progress(
        lab_order(reference="sf-unknown"), submitted_at=SUBMITTED, now=SUBMITTED
    )

    assert (progress.shipped_at, progress.in_production_at) == (None, None)
    assert progress.next_check_at == SUBMITTED + timedelta(seconds=60)
    assert progress.extra == {"error": "Order sf-unknown not found"}


# --- operations ----------------------------------------------------------------------------


def test_every_operation_reaches_the_site(site: SiteflowServer, print_url: str) -> None:
    lab = connector(site)
    order = lab_order(file=print_url, reference=lab.submit(lab_order(file=print_url)).reference)
    moved = {
        "name": "Bea Lovelace",
        "email": "",
        "phoneNumber": "",
        "address": {
            "line1": "2 Engine Street",
            "line2": "Unit 4",
            "postalOrZipCode": "M1 1AA",
            "countryCode": "GB",
            "townOrCity": "Manchester",
            "stateOrCounty": "Lancashire",
        },
    }

    results = [
        lab.hold(order),
        lab.unhold(order),
        lab.update_address(order, moved),
        lab.update_shipping_method(order, "Express"),
        lab.cancel(order),
    ]

    assert results == [LabResult(True, reference="sf000001")] * 5
    ship_to = {
        "name": "Bea Lovelace",
        "companyName": None,
        "address1": "2 Engine Street",
        "address2": "Unit 4",
        "town": "Manchester",
        "postcode": "M1 1AA",
        "state": "Lancashire",
        "isoCountry": "GB",
        "phone": None,
        "email": None,
    }
    assert site.operations() == [
        ("PUT", "/api/order/sf000001/hold", None),
        ("PUT", "/api/order/sf000001/unhold", None),
        ("PUT", "/api/order/sf000001/shipments/0", {"shipTo": ship_to}),
        ("PUT", "/api/order/sf000001/shipments/0", {"carrier": {"alias": "dhl-express"}}),
        ("PUT", "/api/order/sf000001/cancel", None),
    ]
    stored = site.order("shp_1234")
    assert (stored.status, stored.held, stored.ship_to, stored.carrier) == (
        "cancelled", False, ship_to, {"alias": "dhl-express"},
    )  # fmt: skip


def test_a_refused_operation_is_unsuccessful_with_the_sites_message(
    site: SiteflowServer,
    print_url: str,
) -> None:
    lab = connector(site)
    order = lab_order(file=print_url, reference=lab.submit(lab_order(file=print_url)).reference)
    site.ship(
        "shp_1234",
        tracking_number="T1",
        tracking_url="https://track.example/T1",
        carrier_name="DHL",
        carrier_service="Express",
        shipped_at="2026-03-02T09:30:00Z",
    )

    refused = lab.cancel(order)
    held = lab.hold(order)

    message = "Order sf000001 is shipped and cannot be changed"
    assert refused == LabResult(False, reference="sf000001", message=message)
    assert held == LabResult(False, reference="sf000001", message=message)
    assert site.order("shp_1234").status == "shipped"


def test_an_operation_the_lab_lacks_or_before_submission_sends_nothing(
    site: SiteflowServer,
) -> None:
    without_hold = connector(site, capabilities=frozenset({"cancel"}))

    assert without_hold.hold(lab_order(reference="sf000001")) == LabResult(
        False, message="Lab gb1 does not support hold."
    )
    assert without_hold.cancel(lab_order()) == LabResult(
        False, message="Shipment shp_1234 is not at Site Flow yet."
    )
    assert site.received == []


# --- the registry and lab settings ---------------------------------------------------------


@pytest.mark.django_db
def test_a_live_site_flow_lab_gets_the_site_flow_connector_with_its_settings() -> None:
    LabFactory(
        code="gb9",
        connector="siteflow",
        capabilities=["cancel", "hold"],
        siteflow_base_url="https://lab.example/api",
        siteflow_token="tok",
        siteflow_secret="sec",
        siteflow_destination="acme",
        siteflow_carrier_aliases={"Express": "dhl"},
    )
    LabProductFactory(lab=Lab.objects.get(code="gb9"), lab_sku="LAB-CODE-1")
    sku = LabProduct.objects.get(lab__code="gb9").product.sku

    live = connector_for(lab_code="gb9", sandbox=False)
    sandbox = connector_for(lab_code="gb9", sandbox=True)

    assert isinstance(live, SiteflowConnector)
    assert live.capabilities == frozenset({"cancel", "hold"})
    assert live.site == SiteflowSettings(
        base_url="https://lab.example/api",
        token="tok",
        secret="sec",
        destination="acme",
        carrier_aliases={"Express": "dhl"},
        product_codes={sku: "LAB-CODE-1"},
    )
    assert not isinstance(sandbox, SiteflowConnector | UnavailableConnector)


@pytest.mark.django_db
def test_configure_lab_switches_a_lab_to_site_flow_and_never_prints_the_secret(
    capsys: pytest.CaptureFixture[str],
) -> None:
    LabFactory(code="gb8", capabilities=[])

    call_command(
        "configure_lab",
        "gb8",
        "--connector=siteflow",
        "--base-url=https://lab.example/api",
        "--token=tok-8",
        f"--secret={SECRET}",
        "--destination=acme-print",
    )

    out = capsys.readouterr().out
    assert out == (
        "Lab gb8: connector siteflow\n"
        "  base URL: https://lab.example/api\n"
        "  token: tok-8\n"
        "  secret: changed (not shown)\n"
        "  destination: acme-print\n"
        "  capabilities: cancel, hold, unhold, updateAddress, updateShippingMethod\n"
    )
    lab = Lab.objects.get(code="gb8")
    assert (lab.connector, lab.siteflow_base_url, lab.siteflow_token, lab.siteflow_secret) == (
        "siteflow", "https://lab.example/api", "tok-8", SECRET,
    )  # fmt: skip
    assert lab.siteflow_destination == "acme-print"
    assert lab.capabilities == ["cancel", "hold", "unhold", "updateAddress", "updateShippingMethod"]

    call_command("configure_lab", "gb8", "--connector=siteflow", "--token=tok-9")
    assert SECRET not in capsys.readouterr().out
    assert Lab.objects.get(code="gb8").siteflow_secret == SECRET

    call_command("configure_lab", "gb8", "--connector=simulator")
    assert capsys.readouterr().out == "Lab gb8: connector simulator\n"
    assert Lab.objects.get(code="gb8").connector == "simulator"


@pytest.mark.django_db
def test_configure_lab_refuses_an_unknown_lab_and_incomplete_site_flow_settings() -> None:
    LabFactory(code="gb8")

    with pytest.raises(CommandError) as unknown:
        call_command("configure_lab", "zz1", "--connector=simulator")
    with pytest.raises(CommandError) as missing:
        call_command(
            "configure_lab", "gb8", "--connector=siteflow", "--base-url=https://lab.example/api"
        )

    assert str(unknown.value) == "No lab has code 'zz1'."
    assert str(missing.value) == (
        "Lab gb8 was not changed: A Site Flow lab needs its token. "
        "A Site Flow lab needs its secret."
    )
    lab = Lab.objects.get(code="gb8")
    assert (lab.connector, lab.siteflow_base_url) == ("simulator", "")


@pytest.mark.django_db
def test_the_admin_keeps_the_secret_write_only(admin_client: Client) -> None:
    LabFactory(code="gb8", capabilities=[])
    lab = Lab.objects.get(code="gb8")
    url = reverse("admin:labs_lab_change", args=[lab.pk])
    form = {
        "code": "gb8",
        "name": "Site lab",
        "country_code": "GB",
        "currency": "GBP",
        "is_active": "on",
        "connector": "siteflow",
        "simulator_failure_share": "0",
        "simulator_cancel_share": "0",
        "simulator_error_share": "0",
        "siteflow_base_url": "https://lab.example/api",
        "siteflow_token": "tok-8",
        "siteflow_secret": SECRET,
        "siteflow_destination": "acme-print",
        "siteflow_carrier_aliases": '{"Express": "dhl-express"}',
        "products-TOTAL_FORMS": "0",
        "products-INITIAL_FORMS": "0",
        "shipping_rates-TOTAL_FORMS": "0",
        "shipping_rates-INITIAL_FORMS": "0",
    }

    saved = admin_client.post(url, form)
    kept = admin_client.post(url, {**form, "siteflow_secret": "", "siteflow_token": "tok-9"})
    page = admin_client.get(url)

    assert (saved.status_code, kept.status_code) == (302, 302)
    lab.refresh_from_db()
    assert (lab.siteflow_secret, lab.siteflow_token) == (SECRET, "tok-9")
    assert lab.siteflow_carrier_aliases == {"Express": "dhl-express"}
    assert set(lab.capabilities) == EVERY_CAPABILITY
    assert page.status_code == 200
    assert SECRET not in page.content.decode()
    assert "A secret is saved; it is never shown." in page.content.decode()


# --- the pipeline --------------------------------------------------------------------------


def jpeg_bytes() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (600, 400), (200, 80, 40)).save(out, "JPEG", quality=90)
    return out.getvalue()


def live_photo_order(api: APIClient, httpserver: HTTPServer, name: str, **extra: Any) -> int:
    httpserver.expect_request(f"/{name}.jpg").respond_with_data(
        jpeg_bytes(), content_type="image/jpeg"
    )
    body = {
        **extra,
        "merchantReference": f"MR-{name}",
        "shippingMethod": "Standard",
        "recipient": lab_order().recipient,
        "items": [
            {
                "sku": "GLOBAL-PHO-4X6",
                "copies": 1,
                "assets": [{"url": httpserver.url_for(f"/{name}.jpg")}],
            }
        ],
    }
    response = api.post("/v4.0/orders", body, format="json")
    assert response.status_code == 200, response.content
    return int(response.json()["order"]["id"].split("_", 1)[1])


def advance_until(order_pk: int, *steps: str, limit: int = 20) -> Order:
    """Run the order's steps in-process, each made due at once, until it reaches ``steps``."""
    for _ in range(limit):
        order = Order.objects.get(id=order_pk)
        if order.pipeline_step in steps:
            return order
        Order.objects.filter(id=order_pk, due_at__isnull=False).update(due_at=timezone.now())
        order_advance(order_id=order_pk)
    pytest.fail(f"order {order_pk} never reached {steps}")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_a_live_order_at_a_site_flow_lab_is_submitted_polled_to_shipped_and_completed(
    site: SiteflowServer, settings: Any, live_api: APIClient, httpserver: HTTPServer,
    live_server: Any,
) -> None:  # fmt: skip
    settings.LIVE_BASE_URL = live_server.url
    settings.SITEFLOW_POLL_BASE_SECONDS = 60
    siteflow_lab(site)
    order_pk = live_photo_order(live_api, httpserver, "siteflow-photo")

    advance_until(order_pk, PipelineStep.PRODUCTION)

    shipment = Shipment.objects.get(order_id=order_pk)
    item = shipment.items.get()
    asset = item.assets.get()
    print_url = lab_file_url(asset.print_file, live_server.url)
    assert print_url is not None and print_url.startswith(live_server.url + "/")
    assert (shipment.lab_code, shipment.lab_order_reference) == ("gb1", "sf000001")
    submitted = site.order(shipment.public_id).submitted
    assert submitted["destination"] == {"name": "acme-print"}
    assert submitted["orderData"]["sourceOrderId"] == shipment.public_id
    assert submitted["orderData"]["items"] == [
        {
            "sourceItemId": item.public_id,
            "sku": "PHOTO-4X6-GLOSS",
            "quantity": 1,
            "components": [
                {
                    "code": "default",
                    "path": print_url,
                    "fetch": True,
                    "attributes": {"finish": "lustre"},
                }
            ],
        }
    ]
    assert submitted["orderData"]["shipments"][0]["carrier"] == {"alias": "royalmail-48"}
    assert submitted["orderData"]["shipments"][0]["shipTo"]["postcode"] == "SW1A 1AA"
    assert site.fetched == {print_url: 200}

    # First check: still print-ready, so the next check waits the base interval.
    before = timezone.now()
    order_advance(order_id=order_pk)
    waiting = Order.objects.get(id=order_pk)
    assert waiting.pipeline_step == PipelineStep.PRODUCTION
    assert waiting.due_at is not None
    assert 59 <= (waiting.due_at - before).total_seconds() <= 61
    assert order_advance(order_id=order_pk) is None  # not due yet: nothing asked
    gets = [r for r in site.received if r.method == "GET"]
    assert len(gets) == 1

    site.ship(
        shipment.public_id,
        tracking_number="RM123456789GB",
        tracking_url="https://track.example/RM123456789GB",
        carrier_name="Royal Mail",
        carrier_service="Tracked 48",
        shipped_at="2026-03-02T09:30:00Z",
    )
    done = advance_until(order_pk, PipelineStep.DONE)

    assert done.stage == Stage.COMPLETE
    shown = live_api.get(f"/v4.0/orders/ord_{order_pk}").json()["order"]
    assert shown["status"]["stage"] == "Complete"
    assert shown["status"]["issues"] == []
    [shown_shipment] = shown["shipments"]
    assert shown_shipment["status"] == "Shipped"
    assert shown_shipment["carrier"] == {"name": "Royal Mail", "service": "Tracked 48"}
    assert shown_shipment["tracking"] == {
        "number": "RM123456789GB",
        "url": "https://track.example/RM123456789GB",
    }
    assert shown_shipment["dispatchDate"] == "2026-03-02T09:30:00.000Z"
    assert site.unauthorised == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_a_5xx_at_submission_is_retried_by_looking_the_stored_order_up_one_order_one_post(
    site: SiteflowServer, settings: Any, live_api: APIClient, httpserver: HTTPServer,
    live_server: Any,
) -> None:  # fmt: skip
    settings.LIVE_BASE_URL = live_server.url
    siteflow_lab(site)
    site.fail_next_submissions(2, status=502)
    order_pk = live_photo_order(live_api, httpserver, "siteflow-retry")

    advance_until(order_pk, PipelineStep.SUBMIT)
    order_advance(order_id=order_pk)
    retrying = Order.objects.get(id=order_pk)
    [issue] = OrderIssue.objects.filter(order_id=order_pk)
    shipment = Shipment.objects.get(order_id=order_pk)
    assert retrying.pipeline_step == PipelineStep.SUBMIT
    assert issue.description == (
        f"Lab gb1 refused shipment {shipment.public_id} (attempt 1 of 5): "
        "Site Flow answered HTTP 502: Temporarily unavailable"
    )

    advance_until(order_pk, PipelineStep.PRODUCTION)

    shipment.refresh_from_db()
    assert list(site.orders) == [shipment.public_id]
    assert shipment.lab_order_reference == "sf000001"
    assert shipment.submit_attempts == 1
    assert (shipment.lab_operation, shipment.lab_operation_since) == ("", None)
    # The site stored the order before failing: the retry finds it by its source id and
    # adopts it rather than sending it again.
    assert [r.method for r in site.received] == ["POST", "GET"]
    assert site.submissions == {shipment.public_id: 1}
    assert site.lookups == 1
    assert OrderIssue.objects.filter(order_id=order_pk).count() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_a_wrong_secret_is_reported_on_the_order_as_an_issue_not_raised(
    site: SiteflowServer, settings: Any, live_api: APIClient, httpserver: HTTPServer,
    live_server: Any,
) -> None:  # fmt: skip
    settings.LIVE_BASE_URL = live_server.url
    siteflow_lab(site, secret="an-old-secret")
    order_pk = live_photo_order(live_api, httpserver, "siteflow-wrong-secret")

    failed = advance_until(order_pk, PipelineStep.FAILED)

    shipment = Shipment.objects.get(order_id=order_pk)
    shown = live_api.get(f"/v4.0/orders/ord_{order_pk}").json()["order"]
    assert shown["status"]["details"]["inProduction"] == "Error"
    assert shown["status"]["issues"] == [
        {
            "objectId": shipment.public_id,
            "errorCode": "order.shipments.SubmissionFailed",
            "description": f"Lab gb1 refused shipment {shipment.public_id} after 1 attempt(s): "
            "Invalid signature",
        }
    ]
    assert (failed.due_at, shipment.lab_order_reference, site.orders) == (None, "", {})
    assert site.unauthorised == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_staff_operations_on_a_site_flow_shipment_go_to_the_site(
    site: SiteflowServer, settings: Any, live_api: APIClient, staff_api: APIClient,
    httpserver: HTTPServer, live_server: Any,
) -> None:  # fmt: skip
    settings.LIVE_BASE_URL = live_server.url
    siteflow_lab(site)
    order_pk = live_photo_order(live_api, httpserver, "siteflow-staff")
    advance_until(order_pk, PipelineStep.PRODUCTION)
    shipment = Shipment.objects.get(order_id=order_pk)
    base = f"/v4.0/orders/ord_{order_pk}/shipments/{shipment.public_id}"

    mapped = staff_api.get(f"{base}/maptojson")
    held = staff_api.post(f"{base}/hold")
    released = staff_api.post(f"{base}/unhold")
    moved = staff_api.post(
        f"{base}/updateAddress",
        {"address": {"line1": "2 Loom Lane", "postalOrZipCode": "M1 1AA",
                     "countryCode": "GB", "townOrCity": "Manchester"}},
        format="json",
    )  # fmt: skip
    site.advance(shipment.public_id, "cancelled")  # cancelled at the site by its own staff
    refused = staff_api.post(f"{base}/hold")

    assert mapped.status_code == 200
    assert mapped.json() == site.order(shipment.public_id).submitted
    assert [(r.status_code, r.json()["success"]) for r in (held, released, moved)] == [
        (200, True),
        (200, True),
        (200, True),
    ]
    assert [(method, path) for method, path, _ in site.operations()] == [
        ("PUT", "/api/order/sf000001/hold"),
        ("PUT", "/api/order/sf000001/unhold"),
        ("PUT", "/api/order/sf000001/shipments/0"),
        ("PUT", "/api/order/sf000001/hold"),
    ]
    assert site.operations()[2][2]["shipTo"]["address1"] == "2 Loom Lane"
    assert refused.status_code == 200
    assert refused.json()["success"] is False
    assert "Order sf000001 is cancelled and cannot be changed" in refused.json()["message"]


ADA_SHIP_TO = {
    "name": "Ada Lovelace",
    "companyName": None,
    "address1": "1 Analytical Row",
    "address2": None,
    "town": "London",
    "postcode": "SW1A 1AA",
    "state": None,
    "isoCountry": "GB",
    "phone": "+44 7700 900123",
    "email": "ada@example.com",
}
GRACE = {
    "name": "Grace Hopper",
    "email": "grace@example.com",
    "phoneNumber": "+44 7700 900999",
    "address": {
        "line1": "2 Compiler Close",
        "postalOrZipCode": "M1 1AA",
        "countryCode": "GB",
        "townOrCity": "Manchester",
    },
}
GRACE_SHIP_TO = {
    **ADA_SHIP_TO,
    "name": "Grace Hopper",
    "address1": "2 Compiler Close",
    "town": "Manchester",
    "postcode": "M1 1AA",
    "phone": "+44 7700 900999",
    "email": "grace@example.com",
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_a_lab_order_the_site_refused_a_new_recipient_keeps_the_old_one_whole_at_every_call(
    site: SiteflowServer, settings: Any, live_api: APIClient, staff_api: APIClient,
    httpserver: HTTPServer, live_server: Any,
) -> None:  # fmt: skip
    """A print at gb1 and a frame at gb2, both Site Flow labs; the site refuses to change the
    frame's lab order (it cancelled it), so it keeps Ada while the order moves on to Grace:
    ``maptojson``, its resubmission and a later address change all carry Ada whole."""
    settings.LIVE_BASE_URL = live_server.url
    siteflow_lab(site)
    lab_at_site(site, "gb2")
    Lab.objects.exclude(code__in=["gb1", "gb2"]).update(is_active=False)  # one lab each
    for name in ("print", "frame"):
        httpserver.expect_request(f"/{name}.jpg").respond_with_data(
            jpeg_bytes(), content_type="image/jpeg"
        )
    created = live_api.post(
        "/v4.0/orders",
        {
            "shippingMethod": "Standard",
            "recipient": lab_order().recipient,
            "items": [
                {
                    "sku": "GLOBAL-PHO-4X6",
                    "copies": 1,
                    "assets": [{"url": httpserver.url_for("/print.jpg")}],
                },
                {
                    "sku": "GLOBAL-CFPM-12X16",
                    "copies": 1,
                    "attributes": {"color": "black"},
                    "assets": [{"url": httpserver.url_for("/frame.jpg")}],
                },
            ],
        },
        format="json",
    )
    assert created.status_code == 200, created.content
    order_pk = int(created.json()["order"]["id"].split("_", 1)[1])
    advance_until(order_pk, PipelineStep.PRODUCTION)
    photo, framed = Shipment.objects.filter(order_id=order_pk).order_by("lab_code")
    assert (photo.lab_code, framed.lab_code) == ("gb1", "gb2")
    site.advance(framed.public_id, "cancelled", message="Frame out of stock")
    base = f"/v4.0/orders/ord_{order_pk}/shipments"

    body = live_api.post(
        f"/v4.0/orders/ord_{order_pk}/actions/updateRecipient", GRACE, format="json"
    ).json()

    assert body["outcome"] == "PartiallyUpdated"
    results = {r["shipmentId"]: r for r in body["shipmentUpdateResults"]}
    assert results[photo.public_id]["successful"] is True
    assert results[framed.public_id]["successful"] is False
    assert "is cancelled and cannot be changed" in results[framed.public_id]["description"]
    assert body["order"]["recipient"]["name"] == "Grace Hopper"  # the merchant's: the order's
    # What the site holds for each lab order, and maptojson shows exactly that.
    assert site.order(photo.public_id).ship_to == GRACE_SHIP_TO
    assert site.order(framed.public_id).ship_to == ADA_SHIP_TO
    for shipment, name, email in [
        (photo, "Grace Hopper", "grace@example.com"),
        (framed, "Ada Lovelace", "ada@example.com"),
    ]:
        mapped = staff_api.get(f"{base}/{shipment.public_id}/maptojson").json()["orderData"]
        assert (mapped["customerName"], mapped["email"]) == (name, email)
        assert mapped["shipments"][0]["shipTo"] == site.order(shipment.public_id).ship_to

    # Resubmitted, the frame goes to Ada whole.
    outcome = shipment_resubmit(shipment_id=framed.id, labs=["gb2"])

    assert outcome.successful and outcome.new_shipment_id is not None, outcome.message
    new = Shipment.objects.get(id=outcome.new_shipment_id)
    sent = site.order(new.public_id).submitted
    assert (sent["orderData"]["customerName"], sent["orderData"]["email"]) == (
        "Ada Lovelace",
        "ada@example.com",
    )
    assert sent["orderData"]["shipments"][0]["shipTo"] == ADA_SHIP_TO
    assert staff_api.get(f"{base}/{new.public_id}/maptojson").json() == sent

    # Staff move the new lab order: Ada keeps her name, email and phone there.
    moved = staff_api.post(
        f"{base}/{new.public_id}/updateAddress",
        {"address": {"line1": "3 Loom Lane", "postalOrZipCode": "LS1 1AA",
                     "countryCode": "GB", "townOrCity": "Leeds"}},
        format="json",
    ).json()  # fmt: skip

    assert moved["success"] is True, moved
    reference = site.order(new.public_id).id
    assert site.operations()[-1] == (
        "PUT",
        f"/api/order/{reference}/shipments/0",
        {"shipTo": {**ADA_SHIP_TO, "address1": "3 Loom Lane", "town": "Leeds",
                    "postcode": "LS1 1AA"}},
    )  # fmt: skip
    mapped = staff_api.get(f"{base}/{new.public_id}/maptojson").json()["orderData"]
    assert mapped["shipments"][0]["shipTo"] == site.order(new.public_id).ship_to
    shown = live_api.get(f"/v4.0/orders/ord_{order_pk}").json()["order"]["recipient"]
    assert (shown["name"], shown["address"]["townOrCity"]) == ("Grace Hopper", "Manchester")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_the_packing_slip_and_branding_reach_the_site_as_components_of_their_own_item(
    site: SiteflowServer, settings: Any, live_api: APIClient, staff_api: APIClient,
    httpserver: HTTPServer, live_server: Any,
) -> None:  # fmt: skip
    settings.LIVE_BASE_URL = live_server.url
    siteflow_lab(site)
    httpserver.expect_request("/slip.pdf").respond_with_data(
        b"%PDF-1.4 slip", content_type="application/pdf"
    )
    httpserver.expect_request("/postcard.jpg").respond_with_data(
        jpeg_bytes(), content_type="image/jpeg"
    )
    order_pk = live_photo_order(
        live_api, httpserver, "siteflow-inserts",
        packingSlip={"url": httpserver.url_for("/slip.pdf")},
        branding={"postcard": {"url": httpserver.url_for("/postcard.jpg")}},
    )  # fmt: skip

    advance_until(order_pk, PipelineStep.PRODUCTION)

    shipment = Shipment.objects.get(order_id=order_pk)
    slip, postcard = (
        lab_file_url(f.source_file, live_server.url)
        for f in OrderFile.objects.filter(order_id=order_pk).order_by("kind").reverse()
    )
    assert slip is not None and slip.startswith(live_server.url + "/")
    assert urlsplit(slip).path.endswith(".pdf")
    assert postcard is not None
    submitted = site.order(shipment.public_id).submitted
    assert submitted["orderData"]["items"][1] == {
        "sourceItemId": f"{shipment.public_id}-inserts",
        "sku": "inserts",
        "quantity": 1,
        "components": [
            {"code": "packingSlip", "path": slip, "fetch": True, "attributes": {}},
            {"code": "postcard", "path": postcard, "fetch": True, "attributes": {}},
        ],
    }
    assert site.fetched[slip] == 200 and site.fetched[postcard] == 200
    mapped = staff_api.get(f"/v4.0/orders/ord_{order_pk}/shipments/{shipment.public_id}/maptojson")
    assert mapped.json() == submitted
    shown = live_api.get(f"/v4.0/orders/ord_{order_pk}").json()["order"]
    assert shown["packingSlip"]["status"] == "Complete"
    assert shown["branding"]["postcard"]["status"] == "Complete"


# --- a new shipping method after submission ------------------------------------------------


def shipping_charges(order_pk: int) -> list[list[tuple[str, str, str]]]:
    """Each Shipping charge's lines as (shipment id, cost, tax)."""
    return [
        [(f"shp_{line.shipment_id}", f"{line.cost}", f"{line.tax}") for line in charge.items.all()]
        for charge in Charge.objects.filter(order_id=order_pk, charge_type=ChargeType.SHIPPING)
    ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_a_new_method_after_submission_goes_to_the_site_with_its_carrier_and_price(
    site: SiteflowServer, settings: Any, live_api: APIClient, httpserver: HTTPServer,
    live_server: Any,
) -> None:  # fmt: skip
    settings.LIVE_BASE_URL = live_server.url
    siteflow_lab(site)
    Lab.objects.filter(code="gb1").update(
        siteflow_carrier_aliases={"Standard": "royalmail-48", "Express": "dpd-next-day"}
    )
    order_pk = live_photo_order(live_api, httpserver, "siteflow-express")
    advance_until(order_pk, PipelineStep.PRODUCTION)
    shipment = Shipment.objects.get(order_id=order_pk)

    response = live_api.post(
        f"/v4.0/orders/ord_{order_pk}/actions/updateShippingMethod",
        {"shippingMethod": "express"},
        format="json",
    )

    body = response.json()
    assert response.status_code == 200
    assert body["outcome"] == "Updated"
    assert body["shipmentUpdateResults"] == [
        {"shipmentId": shipment.public_id, "successful": True, "errorCode": None,
         "description": None},
    ]  # fmt: skip
    assert site.operations() == [
        ("PUT", "/api/order/sf000001/shipments/0", {"carrier": {"alias": "dpd-next-day"}})
    ]
    assert site.order(shipment.public_id).carrier == {"alias": "dpd-next-day"}
    shown = body["order"]
    assert shown["shippingMethod"] == "Express"
    assert shown["shipments"][0]["carrier"] == {"name": "DPD", "service": "Next Day"}
    # gb1 to GB: Standard 3.95 + 20% VAT, Express 7.95 + 20% VAT; the difference is charged.
    assert shipping_charges(order_pk) == [
        [(shipment.public_id, "3.95", "0.79")],
        [(shipment.public_id, "4.00", "0.80")],
    ]
    assert [
        c["totalCost"]["amount"] for c in shown["charges"] if c["chargeType"] == "Shipping"
    ] == [
        "3.95",
        "4.00",
    ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_a_new_method_the_site_refuses_changes_nothing_and_says_why(
    site: SiteflowServer, settings: Any, live_api: APIClient, httpserver: HTTPServer,
    live_server: Any,
) -> None:  # fmt: skip
    settings.LIVE_BASE_URL = live_server.url
    siteflow_lab(site)
    order_pk = live_photo_order(live_api, httpserver, "siteflow-refused")
    advance_until(order_pk, PipelineStep.PRODUCTION)
    shipment = Shipment.objects.get(order_id=order_pk)
    site.advance(shipment.public_id, "cancelled")  # cancelled at the site by its own staff

    body = live_api.post(
        f"/v4.0/orders/ord_{order_pk}/actions/updateShippingMethod",
        {"shippingMethod": "Express"},
        format="json",
    ).json()

    assert body["outcome"] == "FailedToUpdate"
    assert body["shipmentUpdateResults"] == [
        {
            "shipmentId": shipment.public_id,
            "successful": False,
            "errorCode": "order.shipments.updateFailed",
            "description": "Order sf000001 is cancelled and cannot be changed",
        }
    ]
    assert body["order"]["shippingMethod"] == "Standard"
    assert body["order"]["shipments"][0]["carrier"] == {
        "name": "Royal Mail",
        "service": "Tracked 48",
    }
    assert shipping_charges(order_pk) == [[(shipment.public_id, "3.95", "0.79")]]
    assert Shipment.objects.get(id=shipment.id).shipping_method == "Standard"


def test_a_cancel_the_site_already_made_is_a_cancel_done(
    site: SiteflowServer, print_url: str
) -> None:
    lab = connector(site)
    order = lab_order(file=print_url, reference=lab.submit(lab_order(file=print_url)).reference)
    site.advance("shp_1234", "cancelled")  # our earlier cancel reached it; its answer was lost

    again = lab.cancel(order)
    site.advance("shp_1234", "shipped")
    too_late = lab.cancel(order)

    assert again == LabResult(True, reference="sf000001")
    assert too_late == LabResult(
        False, reference="sf000001", message="Order sf000001 is shipped and cannot be changed"
    )


def test_a_2xx_without_the_lab_order_is_unanswered_and_a_cancel_is_checked_at_once(
    site: SiteflowServer, print_url: str
) -> None:
    """A 2xx that is not the lab order is neither done nor refused (the site may have made it);
    a cancel asks the site straight away, so a made one is done."""
    lab = connector(site)
    order = lab_order(file=print_url, reference=lab.submit(lab_order(file=print_url)).reference)
    site.answer_instead("hold", 204)
    site.stand_in("unhold", 200, b'{"ok": true}')

    held = lab.hold(order)
    not_released = lab.unhold(order)
    site.answer_instead("cancel", 200, b"{}")
    cancelled = lab.cancel(order)

    assert held == LabResult(
        False,
        reference="sf000001",
        message="Site Flow answered HTTP 204 without a body: not taken as sf000001 on hold.",
        unanswered=True,
    )
    assert not_released == LabResult(
        False,
        reference="sf000001",
        message="Site Flow answered HTTP 200 with an answer that is not the lab order "
        "sf000001 released: not taken as done.",
        unanswered=True,
    )
    assert site.order("shp_1234").held is True
    assert cancelled == LabResult(True, reference="sf000001")


# --- the site's own cancel and error (decisions.md, "Lab-side cancellation and failure") -------


def test_progress_reports_the_sites_cancel_and_error_with_its_message_and_no_next_check(
    site: SiteflowServer, print_url: str
) -> None:
    lab = connector(site)
    for shipment_id, status in (("shp_71", "cancelled"), ("shp_72", "error")):
        reference = lab.submit(lab_order(shipment_id, file=print_url)).reference
        site.advance(shipment_id, status, message=f"Site says {status}")

        progress = lab.progress(
            lab_order(shipment_id, reference=reference), submitted_at=SUBMITTED, now=SUBMITTED
        )

        assert progress == LabProgress(
            ended=status, message=f"Site says {status}", extra={"status": status}
        )
    site.advance("shp_71", "cancelled")  # no message: none is made up
    assert lab.progress(
        lab_order("shp_71", reference="sf000001"), submitted_at=SUBMITTED, now=SUBMITTED
    ) == LabProgress(ended="cancelled", extra={"status": "cancelled"})


def _gets(site: SiteflowServer) -> int:
    return sum(1 for r in site.received if r.method == "GET")


def _run_due(order_pk: int, times: int) -> None:
    """Make the order due and run its step ``times`` times (a lab order ended at its lab is
    not asked about again, however often the step runs)."""
    for _ in range(times):
        Order.objects.filter(id=order_pk, due_at__isnull=False).update(due_at=timezone.now())
        order_advance(order_id=order_pk)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
@pytest.mark.parametrize(
    ("status", "message", "code", "description", "event", "shipment_status", "in_production"),
    [
        ("cancelled", "Out of paper stock", "order.shipments.LabCancelled",
         "Out of paper stock", "shipments.shipment#Cancelled", "Cancelled", "InProgress"),
        ("cancelled", "", "order.shipments.LabCancelled",
         "The lab cancelled this lab order.", "shipments.shipment#Cancelled", "Cancelled",
         "InProgress"),
        ("error", "Printer jam on line 4", "order.shipments.LabError",
         "Printer jam on line 4", "status.details.inProduction#Error", "Processing", "Error"),
    ],
)  # fmt: skip
def test_a_site_that_ends_its_lab_order_is_recorded_once_and_no_longer_polled(
    site: SiteflowServer, settings: Any, live_api: APIClient, httpserver: HTTPServer,
    live_server: Any, status: str, message: str, code: str, description: str, event: str,
    shipment_status: str, in_production: str, admin_client: Client,
) -> None:  # fmt: skip
    settings.LIVE_BASE_URL = live_server.url
    siteflow_lab(site)
    order_pk = live_photo_order(live_api, httpserver, f"siteflow-{status}-{bool(message)}")
    advance_until(order_pk, PipelineStep.PRODUCTION)
    shipment = Shipment.objects.get(order_id=order_pk)
    order_advance(order_id=order_pk)  # still print-ready: polled again later
    assert _gets(site) == 1

    site.advance(shipment.public_id, status, message=message)
    _run_due(order_pk, 3)

    assert _gets(site) == 2  # the check that saw it; none after
    order = Order.objects.get(id=order_pk)
    assert (order.pipeline_step, order.due_at, order.stage) == (
        PipelineStep.FAILED,
        None,
        "InProgress",
    )
    shown = live_api.get(f"/v4.0/orders/ord_{order_pk}").json()["order"]
    assert shown["status"]["stage"] == "InProgress"
    assert shown["status"]["details"]["inProduction"] == in_production
    assert shown["status"]["issues"] == [
        {"objectId": shipment.public_id, "errorCode": code, "description": description}
    ]
    assert [s["status"] for s in shown["shipments"]] == [shipment_status]
    types = [e["type"] for e in events_of(f"ord_{order_pk}")]
    assert types.count(f"com.service.order.{event}") == 1
    assert types[-1] == f"com.service.order.{event}"
    assert "com.service.order.status.stage.changed#Complete" not in types
    assert site.unauthorised == 0
    attention = admin_client.get("/admin/orders/order/?attention=lab").content.decode()
    assert f"ord_{order_pk}" in attention


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_a_resubmission_after_the_site_cancelled_clears_the_issue_and_is_followed_to_complete(
    site: SiteflowServer, settings: Any, live_api: APIClient, httpserver: HTTPServer,
    live_server: Any,
) -> None:  # fmt: skip
    settings.LIVE_BASE_URL = live_server.url
    siteflow_lab(site)
    order_pk = live_photo_order(live_api, httpserver, "siteflow-cancel-resubmit")
    advance_until(order_pk, PipelineStep.PRODUCTION)
    original = Shipment.objects.get(order_id=order_pk)
    site.advance(original.public_id, "cancelled", message="Stock withdrawn")
    advance_until(order_pk, PipelineStep.FAILED)

    outcome = shipment_resubmit(shipment_id=original.id, labs=["gb1"])

    assert outcome.successful and outcome.new_shipment_id is not None, outcome.message
    new = Shipment.objects.get(id=outcome.new_shipment_id)
    shown = live_api.get(f"/v4.0/orders/ord_{order_pk}").json()["order"]
    assert shown["status"]["issues"] == []
    assert Order.objects.get(id=order_pk).pipeline_step == PipelineStep.PRODUCTION
    site.ship(
        new.public_id,
        tracking_number="RM1GB",
        tracking_url="https://track.example/RM1GB",
        carrier_name="Royal Mail",
        carrier_service="Tracked 48",
        shipped_at="2026-03-02T09:30:00Z",
    )
    done = advance_until(order_pk, PipelineStep.DONE)
    assert done.stage == Stage.COMPLETE


# --- what a lab receives: the variant's code and the item's attributes ---------------------


def test_the_sku_sent_is_the_labs_code_for_the_items_variant_else_its_product_code() -> None:
    site = SiteflowSettings(
        base_url="https://lab.example/api",
        token=TOKEN,
        secret=SECRET,
        destination="acme-print",
        carrier_aliases={},
        product_codes={"GLOBAL-CAN-10X10": "CAN-10X10", "GLOBAL-PHO-4X6": "PHO-4X6"},
        variant_codes={
            "GLOBAL-CAN-10X10": {
                "wrap=ImageWrap": "CAN-10X10-IW",
                "wrap=black": "CAN-10X10-BK",
                "wrap=Black,size=Large": "CAN-10X10-BK-L",
            }
        },
    )
    lab = SiteflowConnector(lab_code="gb1", capabilities=EVERY_CAPABILITY, site=site)

    def sent(sku: str, **attributes: str) -> tuple[str, list[dict[str, Any]]]:
        item = LabOrderItem(
            item_id="ori_1", sku=sku, copies=1, attributes=attributes, files={"default": "u"}
        )
        mapped = lab.map_to_json(LabOrder(**{**lab_order().__dict__, "items": (item,)}))
        [first] = mapped["orderData"]["items"]
        return first["sku"], first["components"]

    assert sent("GLOBAL-CAN-10X10", wrap="ImageWrap") == (
        "CAN-10X10-IW",
        [{"code": "default", "path": "u", "fetch": True, "attributes": {"wrap": "ImageWrap"}}],
    )
    assert sent("GLOBAL-CAN-10X10", wrap="Black")[0] == "CAN-10X10-BK"
    assert sent("GLOBAL-CAN-10X10", wrap="Black", size="Large")[0] == "CAN-10X10-BK-L"
    assert sent("GLOBAL-CAN-10X10", wrap="White")[0] == "CAN-10X10"  # no mapping: product code
    assert sent("GLOBAL-PHO-4X6", finish="gloss")[0] == "PHO-4X6"
    assert sent("GLOBAL-FAP-8X10")[0] == "GLOBAL-FAP-8X10"  # no code at all: the SKU


@pytest.mark.django_db
def test_variant_codes_are_checked_when_a_lab_product_is_saved() -> None:
    LabProductFactory(variant_codes={"wrap": "X"})
    lab_product = LabProduct.objects.get()
    with pytest.raises(ValidationError, match="'wrap' is not name=value"):
        lab_product.full_clean()
    lab_product.variant_codes = {"wrap=Black": ""}
    with pytest.raises(ValidationError, match="needs the lab's code"):
        lab_product.full_clean()
    lab_product.variant_codes = {"wrap=Black, color=white": "C-1", "wrap=ImageWrap": "C-2"}
    lab_product.full_clean()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_a_canvas_reaches_the_site_with_its_variants_code_and_attributes_and_maptojson_agrees(
    site: SiteflowServer, settings: Any, live_api: APIClient, staff_api: APIClient,
    httpserver: HTTPServer, live_server: Any, admin_client: Client,
) -> None:  # fmt: skip
    settings.LIVE_BASE_URL = live_server.url
    siteflow_lab(site)
    canvas = LabProduct.objects.get(lab__code="gb1", product__sku="GLOBAL-CAN-10X10")
    # Edited in the admin, as staff would.
    url = reverse("admin:labs_labproduct_change", args=[canvas.pk])
    page = admin_client.get(url)
    assert page.status_code == 200 and "variant_codes" in page.content.decode()
    LabProduct.objects.filter(lab__code__in=["gb2", "gb3"], product=canvas.product).delete()
    form = {
        "lab": canvas.lab_id,
        "product": canvas.product_id,
        "unit_cost": str(canvas.unit_cost),
        "extra_page_cost": "0",
        "in_stock": "on",
        "lab_sku": "CANVAS-10X10",
        "variant_codes": (
            '{"wrap=ImageWrap": "CANVAS-10X10-IMAGEWRAP", "wrap=Black": "CANVAS-10X10-BLACK"}'
        ),
    }
    assert admin_client.post(url, form).status_code == 302
    httpserver.expect_request("/canvas.jpg").respond_with_data(
        jpeg_bytes(), content_type="image/jpeg"
    )
    body = {
        "shippingMethod": "Standard",
        "recipient": lab_order().recipient,
        "items": [
            {
                "sku": "global-can-10x10",
                "copies": 1,
                "attributes": {"WRAP": "imagewrap"},
                "assets": [{"url": httpserver.url_for("/canvas.jpg")}],
            }
        ],
    }
    created = live_api.post("/v4.0/orders", body, format="json")
    assert created.status_code == 200, created.content
    order_pk = int(created.json()["order"]["id"].split("_", 1)[1])

    advance_until(order_pk, PipelineStep.PRODUCTION)

    shipment = Shipment.objects.get(order_id=order_pk)
    assert shipment.lab_code == "gb1"
    submitted = site.order(shipment.public_id).submitted
    [item] = submitted["orderData"]["items"]
    assert item["sku"] == "CANVAS-10X10-IMAGEWRAP"
    assert [c["attributes"] for c in item["components"]] == [{"wrap": "ImageWrap"}]
    mapped = staff_api.get(f"/v4.0/orders/ord_{order_pk}/shipments/{shipment.public_id}/maptojson")
    assert mapped.json() == submitted


def test_a_photobooks_spine_component_carries_the_spine_object_as_given(
    site: SiteflowServer,
) -> None:
    spine = {"text": "Our Summer", "backgroundColourHexCode": "#1E3A8A", "textSizePx": 40}
    item = LabOrderItem(
        item_id="ori_2",
        sku="BOOK-A4-L-HARD-M",
        copies=1,
        attributes={},
        files={"default": "https://files.example/book.pdf", "spine": "https://files.example/s.jpg"},
        spine=spine,
    )

    mapped = connector(site).map_to_json(LabOrder(**{**lab_order().__dict__, "items": (item,)}))

    assert mapped["orderData"]["items"][0]["components"] == [
        {"code": "default", "path": "https://files.example/book.pdf", "fetch": True,
         "attributes": {}},
        {"code": "spine", "path": "https://files.example/s.jpg", "fetch": True,
         "attributes": {"spine": spine}},
    ]  # fmt: skip


# --- a late resubmission renders again (retention deleted the print files) -------------------


def _cancelled_and_purged(site: SiteflowServer, live_api: APIClient, httpserver: HTTPServer,
                          name: str) -> tuple[int, Shipment]:  # fmt: skip
    """A Live order whose lab order the site cancelled, its files deleted by retention."""
    siteflow_lab(site)
    order_pk = live_photo_order(live_api, httpserver, name)
    advance_until(order_pk, PipelineStep.PRODUCTION)
    original = Shipment.objects.get(order_id=order_pk)
    site.advance(original.public_id, "cancelled", message="Stock withdrawn")
    advance_until(order_pk, PipelineStep.FAILED)
    Order.objects.filter(id=order_pk).update(submitted_at=timezone.now() - timedelta(days=31))
    assert images_purge_expired() == 1
    asset = Asset.objects.get(item__order_id=order_pk)
    assert (asset.source_file, asset.print_file) == ("", "")
    return order_pk, original


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_a_resubmission_after_retention_downloads_and_renders_again_and_sends_no_original(
    site: SiteflowServer, settings: Any, live_api: APIClient, httpserver: HTTPServer,
    live_server: Any,
) -> None:  # fmt: skip
    settings.LIVE_BASE_URL = live_server.url
    order_pk, original = _cancelled_and_purged(site, live_api, httpserver, "late-resubmit")
    source_url = Asset.objects.get(item__order_id=order_pk).url

    outcome = shipment_resubmit(shipment_id=original.id, labs=["gb1"])

    assert outcome.successful and outcome.new_shipment_id is not None, outcome.message
    asset = Asset.objects.get(item__order_id=order_pk)
    assert asset.print_file and default_storage.exists(asset.print_file)
    assert asset.source_file and default_storage.exists(asset.source_file)
    new = Shipment.objects.get(id=outcome.new_shipment_id)
    [item] = site.order(new.public_id).submitted["orderData"]["items"]
    [component] = item["components"]
    assert component["path"] == lab_file_url(asset.print_file, live_server.url)
    assert component["path"] != source_url
    assert site.fetched[component["path"]] == 200
    assert Order.objects.get(id=order_pk).files_deleted_at is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_a_resubmission_after_retention_fails_saying_so_when_the_originals_are_gone(
    site: SiteflowServer, settings: Any, live_api: APIClient, httpserver: HTTPServer,
    live_server: Any,
) -> None:  # fmt: skip
    settings.LIVE_BASE_URL = live_server.url
    order_pk, original = _cancelled_and_purged(site, live_api, httpserver, "late-gone")
    httpserver.clear_all_handlers()
    httpserver.expect_request("/late-gone.jpg").respond_with_data("gone", status=404)
    asset = Asset.objects.get(item__order_id=order_pk)

    outcome = shipment_resubmit(shipment_id=original.id, labs=["gb1"])

    assert not outcome.successful
    assert outcome.message.startswith(
        f"The print files of asset {asset.public_id} were deleted (30 days after submission) "
        f"and its original could not be downloaded again from {asset.url}: "
    )
    assert "404" in outcome.message
    assert list(site.orders) == [original.public_id]  # nothing new sent to the site
    assert Asset.objects.get(id=asset.id).print_file == ""


@pytest.mark.parametrize(
    ("alias", "carrier"),
    [
        ("dhl-express", Carrier("DHL", "Express")),
        ("DHL-Express", Carrier("DHL", "Express")),
        ("royalmail-48", Carrier("Royal Mail", "Tracked 48")),
        # Not in the table: the carrier by its first word, the rest its service.
        ("ups-next-day-air", Carrier("UPS", "Next Day Air")),
        ("royalmail_special_delivery", Carrier("Royal Mail", "Special Delivery")),
        ("acme-overnight", Carrier("Acme", "Overnight")),
        # The carrier alone: the service is the shipping method asked for.
        ("DHL", Carrier("DHL", "Express")),
        ("acme", Carrier("Acme", "Express")),
    ],
)
def test_a_carrier_alias_stands_for_a_carrier_and_service(alias: str, carrier: Carrier) -> None:
    assert carrier_alias_resolve(alias, shipping_method="Express") == carrier
