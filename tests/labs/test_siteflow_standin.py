"""The Site Flow stand-in ``make run`` starts (``labs/siteflow_standin.py``), on loopback, through
the real Site Flow connector: it takes only requests signed with its credentials, answers every
call in the shapes the connector accepts, moves orders to shipped by itself, keeps them across
a restart; and ``setup_demo`` points the demo lab sf1 at it only when asked."""

import json
import stat
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from django.core.management import call_command
from pytest_httpserver import HTTPServer

from labs.allocation import BasketItem, plan_basket
from labs.connectors import LabOrder, LabOrderItem, connector_for
from labs.connectors.siteflow import SiteflowConnector, SiteflowSettings, sign
from labs.models import Lab, LabProduct
from labs.siteflow_standin import PREFIX, Site, server_make, standin_credentials

EVERY_CAPABILITY = frozenset({"cancel", "hold", "unhold", "updateAddress", "updateShippingMethod"})
PRINT_SECONDS = 30.0
SHIP_SECONDS = 60.0


class Clock:
    """The stand-in's time: now, moved on by the test (within the signature's date window)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return datetime.now(UTC).timestamp() + self.offset


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def standin(tmp_path: Path, clock: Clock, settings: Any) -> Iterator[tuple[Site, str]]:
    """The stand-in serving on a free loopback port: its site and base URL."""
    settings.ALLOW_PRIVATE_URLS = True
    site = Site(tmp_path, print_seconds=PRINT_SECONDS, ship_seconds=SHIP_SECONDS, clock=clock)
    server = server_make(site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site, f"http://127.0.0.1:{server.server_address[1]}{PREFIX}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def print_url(httpserver: HTTPServer) -> str:
    httpserver.expect_request("/print.jpg").respond_with_data(b"\xff\xd8print", status=200)
    httpserver.expect_request("/gone.jpg").respond_with_data(b"gone", status=404)
    return httpserver.url_for("/print.jpg")


def connector(base_url: str, site: Site, *, token: str = "", secret: str = "") -> SiteflowConnector:
    return SiteflowConnector(
        lab_code="sf1",
        capabilities=EVERY_CAPABILITY,
        site=SiteflowSettings(
            base_url=base_url,
            token=token or site.credentials.token,
            secret=secret or site.credentials.secret,
            destination=site.credentials.destination,
            carrier_aliases={"Standard": "royalmail-48", "Express": "dpd-next-day"},
            product_codes={"GLOBAL-PHO-8X10": "PHOTO-8X10"},
        ),
    )


def lab_order(shipment_id: str, file: str, *, reference: str = "") -> LabOrder:
    return LabOrder(
        shipment_id=shipment_id,
        order_id="ord_7",
        lab_code="sf1",
        shipping_method="Standard",
        recipient={
            "name": "Ada Lovelace",
            "email": "ada@example.com",
            "address": {
                "line1": "1 Analytical Row",
                "postalOrZipCode": "SW1A 1AA",
                "countryCode": "GB",
                "townOrCity": "London",
            },
        },
        items=(
            LabOrderItem(
                item_id="ori_1",
                sku="GLOBAL-PHO-8X10",
                copies=2,
                attributes={"finish": "lustre"},
                files={"default": file},
            ),
        ),
        reference=reference,
    )


def with_reference(order: LabOrder, reference: str) -> LabOrder:
    return LabOrder(**{**order.__dict__, "reference": reference})


def test_the_credentials_are_made_once_readable_by_the_owner_only(tmp_path: Path) -> None:
    made = standin_credentials(tmp_path / "site")
    again = standin_credentials(tmp_path / "site")

    assert again == made
    assert len(made.secret) >= 40 and made.token.startswith("standin-")
    mode = stat.S_IMODE((tmp_path / "site" / "credentials.json").stat().st_mode)
    assert mode == 0o600


def test_only_requests_signed_with_its_token_and_secret_are_taken(
    standin: tuple[Site, str], print_url: str
) -> None:
    site, base_url = standin
    order = lab_order("shp_1", print_url)

    wrong_secret = connector(base_url, site, secret="not-the-sites-secret").submit(order)
    wrong_token = connector(base_url, site, token="standin-other").submit(order)
    assert (wrong_secret.successful, wrong_secret.retryable) == (False, False)
    assert wrong_secret.message == "Invalid signature."
    assert wrong_token.message == "Unknown token."

    def sent(date: str, *, signed_path: str = f"{PREFIX}/order") -> requests.Response:
        signature = sign(secret=site.credentials.secret, method="GET", path=signed_path, date=date)
        return requests.get(
            f"{base_url}/order?sourceOrderId=shp_1",
            headers={
                "x-oneflow-date": date,
                "x-oneflow-algorithm": "SHA256",
                "x-oneflow-authorization": f"{site.credentials.token}:{signature}",
            },
            timeout=10,
        )

    now = datetime.now(UTC)
    assert sent(now.isoformat()).status_code == 200
    stale = sent(now.replace(year=now.year - 1).isoformat())
    assert stale.status_code == 401
    assert stale.json() == {"error": {"message": "x-oneflow-date is too far from the site's time."}}
    assert sent(now.isoformat(), signed_path=f"{PREFIX}/order/other").status_code == 401
    assert requests.get(f"{base_url}/order?sourceOrderId=shp_1", timeout=10).status_code == 401
    # Nothing refused was kept.
    assert site.orders == []


def test_the_connector_submits_finds_follows_and_changes_an_order_to_its_shipping(
    standin: tuple[Site, str], clock: Clock, print_url: str
) -> None:
    site, base_url = standin
    lab = connector(base_url, site)
    order = lab_order("shp_1", print_url)

    submitted = lab.submit(order)
    assert submitted.successful, submitted.message
    reference = submitted.reference
    assert reference.startswith("sfs")
    # A resubmission (its answer lost) and a look-up name the same order; none is made twice.
    assert lab.submit(order).reference == reference
    found = lab.find(order)
    assert found is not None and found.reference == reference
    assert lab.find(lab_order("shp_unknown", print_url)) is None
    assert len(site.orders) == 1
    assert site.orders[0]["orderData"]["items"][0]["sku"] == "PHOTO-8X10"

    at_lab = with_reference(order, reference)
    now = datetime.now(UTC)
    assert lab.progress(at_lab, submitted_at=now, now=now).extra == {"status": "printready"}
    clock.offset = PRINT_SECONDS
    assert lab.progress(at_lab, submitted_at=now, now=now).in_production_at == now

    # Held, it does not ship however long it waits; the operations are done and seen done.
    assert lab.hold(at_lab).successful
    assert lab.operation_done(at_lab, "hold", {}) is True
    clock.offset = SHIP_SECONDS + 100
    assert lab.progress(at_lab, submitted_at=now, now=now).extra == {"status": "inproduction"}
    assert lab.update_carrier(at_lab, "ups-standard").successful
    assert lab.operation_done(at_lab, "updateShippingMethod", {"carrierAlias": "ups-standard"})
    new_recipient = {"name": "Ada King", "address": {"line1": "2 Engine Lane", "countryCode": "GB"}}
    assert lab.update_address(at_lab, new_recipient).successful
    assert lab.operation_done(at_lab, "updateAddress", {"recipient": new_recipient}) is True
    assert lab.unhold(at_lab).successful
    assert lab.operation_done(at_lab, "unhold", {}) is True

    # Released, the time on hold does not count: it ships once production time is over.
    assert lab.progress(at_lab, submitted_at=now, now=now).extra == {"status": "inproduction"}
    clock.offset = SHIP_SECONDS + 100 + (SHIP_SECONDS - PRINT_SECONDS)
    shipped = lab.progress(at_lab, submitted_at=now, now=now)
    assert shipped.extra == {"status": "shipped"}
    assert (shipped.carrier_name, shipped.carrier_service) == ("UPS", "Standard")
    assert shipped.tracking_number == "SFS00000001"
    assert shipped.tracking_url.endswith("/SFS00000001")
    assert shipped.shipped_at is not None

    refused = lab.cancel(at_lab)
    assert not refused.successful
    assert refused.message == f"Order {reference} is shipped and cannot be changed."


def test_a_cancel_ends_the_order_and_a_file_it_cannot_fetch_refuses_one(
    standin: tuple[Site, str], print_url: str
) -> None:
    site, base_url = standin
    lab = connector(base_url, site)
    reference = lab.submit(lab_order("shp_2", print_url)).reference
    at_lab = lab_order("shp_2", print_url, reference=reference)

    assert lab.cancel(at_lab).successful
    now = datetime.now(UTC)
    assert lab.progress(at_lab, submitted_at=now, now=now).ended == "cancelled"
    assert not lab.hold(at_lab).successful

    gone = print_url.replace("/print.jpg", "/gone.jpg")
    refused = lab.submit(lab_order("shp_3", gone))
    assert (refused.successful, refused.retryable) == (False, False)
    assert refused.message == f"Could not fetch {gone} (HTTP 404)."
    assert [o["orderData"]["sourceOrderId"] for o in site.orders] == ["shp_2"]


def test_a_restarted_stand_in_keeps_its_orders(
    standin: tuple[Site, str], clock: Clock, print_url: str, tmp_path: Path
) -> None:
    site, base_url = standin
    reference = connector(base_url, site).submit(lab_order("shp_4", print_url)).reference

    again = Site(tmp_path, print_seconds=PRINT_SECONDS, ship_seconds=SHIP_SECONDS, clock=clock)

    assert [o["_id"] for o in again.orders] == [reference]
    status, listed = again.answer("GET", "/", {}, b"")
    assert status == 200
    assert listed["orders"][0]["sourceOrderId"] == "shp_4"
    assert json.loads((tmp_path / "orders.json").read_text())["next"] == 2


@pytest.mark.django_db
def test_setup_demo_points_the_demo_lab_at_the_stand_in_only_when_it_runs(
    settings: Any, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path
    settings.SITEFLOW_STANDIN = True
    settings.SITEFLOW_STANDIN_PORT = 8765
    call_command("setup_demo", stdout=open(tmp_path / "out.txt", "w"))  # noqa: SIM115

    credentials = standin_credentials(tmp_path / "siteflow-standin")
    lab = Lab.objects.get(code="sf1")
    assert (lab.is_active, lab.connector, lab.has_real_connector) == (True, "siteflow", True)
    assert lab.siteflow_base_url == "http://127.0.0.1:8765/api"
    assert (lab.siteflow_token, lab.siteflow_secret) == (credentials.token, credentials.secret)
    assert lab.siteflow_destination == credentials.destination
    assert lab.siteflow_carrier_aliases["Standard"] == "royalmail-48"
    photo = LabProduct.objects.get(lab=lab, product__sku="GLOBAL-PHO-8X10")
    assert photo.lab_sku == "PHOTO-8X10"
    assert photo.variant_codes == {
        "finish=gloss": "PHOTO-8X10-GLOSS",
        "finish=matte": "PHOTO-8X10-MATTE",
    }
    assert isinstance(connector_for(lab_code="sf1", sandbox=False), SiteflowConnector)
    assert "export SITEFLOW_STANDIN_URL=http://127.0.0.1:8765/api\n" in (
        (tmp_path / "demo.env").read_text()
    )
    # A Live photo print to the UK goes to it, also where only real labs make Live orders.
    basket = [BasketItem(key="1", sku="GLOBAL-PHO-8X10", attributes={}, copies=1)]
    for produces_live in (True, False):
        settings.SIMULATOR_PRODUCES_LIVE = produces_live
        plan = plan_basket(
            items=basket, country_code="GB", shipping_method="Standard", currency="GBP",
            sandbox=False,
        )  # fmt: skip
        assert [s.lab_code for s in plan.shipments] == ["sf1"]

    settings.SITEFLOW_STANDIN = False
    call_command("setup_demo", stdout=open(tmp_path / "out.txt", "w"))  # noqa: SIM115

    assert Lab.objects.get(code="sf1").is_active is False
    assert "SITEFLOW_STANDIN_URL" not in (tmp_path / "demo.env").read_text()
