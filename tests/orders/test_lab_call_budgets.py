"""A web request's calls to a lab share one budget: a site that hangs makes the request answer
that the lab could not be reached, well inside the request's deadline, and nothing changes
afterwards; an answer that is not Site Flow's is no success (pending: the site is asked)."""

import time
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from labs.connectors import LabOrder, LabOrderItem
from labs.connectors.siteflow import SiteflowConnector, SiteflowSettings
from labs.models import Lab
from orders.models import Order, Shipment, ShipmentStatus
from tests.support.orders import order_at_labs
from tests.support.siteflow import SiteflowServer, site_running

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]

TOKEN = "token-budget"
SECRET = "s3cret-budget-value"


@pytest.fixture
def site(settings: Any) -> Iterator[SiteflowServer]:
    with site_running(settings, token=TOKEN, secret=SECRET) as server:
        yield server


@pytest.fixture
def tight(settings: Any) -> None:
    """The production numbers scaled down: a 4 s request deadline, 1.5 s for lab calls, a
    site whose every call may take 3 s."""
    settings.REQUEST_TIMEOUT_SECONDS = 4.0
    settings.LAB_CALLS_BUDGET_SECONDS = 1.5
    settings.SITEFLOW_TIMEOUT_SECONDS = 3.0


def at_site_flow(api: APIClient, site: SiteflowServer) -> Shipment:
    """A Live order at its lab, that lab a Site Flow site (``site``)."""
    order = order_at_labs(api)
    shipment = Shipment.objects.get(order=order)
    Lab.objects.filter(code=shipment.lab_code).update(
        connector="siteflow",
        siteflow_base_url=site.base_url,
        siteflow_token=TOKEN,
        siteflow_secret=SECRET,
        siteflow_destination="budget",
    )
    return shipment


def test_a_staff_operation_on_a_hanging_site_answers_unreachable_within_the_budget(
    site: SiteflowServer, tight: None, live_api: APIClient, staff_api: APIClient
) -> None:
    shipment = at_site_flow(live_api, site)
    site.delay_seconds = 3.0  # each answer: two of them would pass the request's deadline

    started = time.monotonic()
    response = staff_api.post(
        f"/v4.0/orders/{shipment.order.public_id}/shipments/{shipment.public_id}/hold"
    )
    took = time.monotonic() - started

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["success"] is False
    assert body["message"].startswith("The lab could not be reached: ")
    assert took < 3.0  # the 1.5 s budget, not one of the site's 3 s answers, nor the deadline
    time.sleep(3.5)  # whatever the site still answers, nothing follows from it
    assert site.operations() == []
    assert Shipment.objects.get(id=shipment.id).is_held is False
    assert Shipment.objects.get(id=shipment.id).lab_operation == ""


def test_a_merchant_cancel_at_a_hanging_site_fails_to_cancel_within_the_budget(
    site: SiteflowServer, tight: None, live_api: APIClient
) -> None:
    shipment = at_site_flow(live_api, site)
    site.delay_seconds = 3.0

    started = time.monotonic()
    response = live_api.post(f"/v4.0/orders/{shipment.order.public_id}/actions/cancel")
    took = time.monotonic() - started

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["outcome"] == "FailedToCancel"
    assert took < 3.0
    time.sleep(3.5)
    assert site.operations() == []
    shipment.refresh_from_db()
    assert shipment.status == ShipmentStatus.PROCESSING
    assert Order.objects.get(id=shipment.order_id).stage == "InProgress"


def test_an_answer_of_200_that_is_not_json_is_a_failed_operation(
    httpserver: HTTPServer, settings: Any
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    httpserver.expect_request("/api/order/sf9/hold", method="PUT").respond_with_data(
        "<html>Service Unavailable</html>", status=200, content_type="text/html"
    )
    lab = SiteflowConnector(
        lab_code="gb1",
        capabilities=frozenset({"hold"}),
        site=SiteflowSettings(
            base_url=httpserver.url_for("/api"),
            token=TOKEN,
            secret=SECRET,
            destination="budget",
            carrier_aliases={},
            product_codes={},
        ),
    )
    order = LabOrder(
        shipment_id="shp_9",
        order_id="ord_9",
        lab_code="gb1",
        shipping_method="Standard",
        recipient={"name": "Ada"},
        items=(
            LabOrderItem(item_id="ori_1", sku="GLOBAL-PHO-4X6", copies=1, attributes={}, files={}),
        ),
        reference="sf9",
    )

    result = lab.hold(order)

    assert (result.successful, result.unanswered) == (False, True)  # the site may have held it
    assert result.message == "Site Flow answered HTTP 200 with a body that is not JSON."
    assert len(httpserver.log) == 1
