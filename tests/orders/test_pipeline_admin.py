"""Staff see orders and their pipeline state in the admin, and submit held orders from it."""

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from merchants.models import PauseMode
from merchants.services import CreatedMerchant
from orders.admin import pipeline_state
from orders.models import Order, PipelineStep
from tests.support.images import jpeg_bytes
from tests.support.orders import order_via_api
from tests.support.pipeline import run_in_process
from tests.support.servers import serve

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]


def hold_indefinitely(merchant: CreatedMerchant) -> None:
    merchant.merchant.environments.update(pause_mode=PauseMode.INDEFINITE)


def changelist(client: Client, **query: str) -> Any:
    response = client.get(reverse("admin:orders_order_changelist"), query)
    assert response.status_code == 200
    return response


def test_the_order_list_finds_orders_by_id_and_reference_and_filters_by_step(
    admin_client: Client, sandbox_api: APIClient
) -> None:
    first = order_via_api(sandbox_api, merchantReference="SHOP-1")
    second = order_via_api(sandbox_api, merchantReference="SHOP-2")

    by_id = changelist(admin_client, q=first.public_id)
    by_digits = changelist(admin_client, q=str(second.id))
    by_reference = changelist(admin_client, q="SHOP-2")
    by_step = changelist(admin_client, pipeline_step__exact=PipelineStep.DOWNLOAD)

    assert list(by_id.context["cl"].result_list) == [first]
    assert list(by_digits.context["cl"].result_list) == [second]
    assert list(by_reference.context["cl"].result_list) == [second]
    assert set(by_step.context["cl"].result_list) == {first, second}
    assert first.public_id in by_step.content.decode()


def test_the_order_page_shows_parts_and_pipeline_state_and_cannot_be_saved(
    admin_client: Client, sandbox_api: APIClient
) -> None:
    order = order_via_api(sandbox_api)
    url = reverse("admin:orders_order_change", args=[order.id])

    page = admin_client.get(url)
    posted = admin_client.post(url, {"stage": "Complete"})

    assert page.status_code == 200
    html = page.content.decode()
    item = order.items.get()
    asset = item.assets.get()
    assert item.public_id in html and asset.public_id in html and asset.url in html
    assert "Download: due now" in html
    assert 'name="_save"' not in html
    assert posted.status_code == 403  # the admin's own refusal page
    order.refresh_from_db()
    assert order.stage == "InProgress"


def test_submit_held_orders_now_releases_only_orders_on_hold(
    admin_client: Client, sandbox_api: APIClient, merchant: CreatedMerchant
) -> None:
    running = order_via_api(sandbox_api)
    hold_indefinitely(merchant)
    held = order_via_api(sandbox_api, outcome="OnHold")
    assert (held.pipeline_step, held.due_at) == (PipelineStep.HELD, None)

    response = admin_client.post(
        reverse("admin:orders_order_changelist"),
        {"action": "submit_held_orders_now", "_selected_action": [held.id, running.id]},
        follow=True,
    )

    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    assert shown == [
        "1 held order(s) submitted.",
        "1 order(s) were not on hold or already due; left as they are.",
    ]
    held.refresh_from_db()
    assert held.pipeline_step == PipelineStep.HELD  # the step releases the hold, not the admin
    assert held.due_at is not None and held.due_at <= timezone.now()
    running_due = running.due_at
    running.refresh_from_db()
    assert running.due_at == running_due


def test_pipeline_state_says_what_the_order_waits_for() -> None:
    now = timezone.now()
    order = Order(pipeline_step=PipelineStep.HELD, due_at=None)
    assert pipeline_state(order, now) == "Held: held until submitted by hand"
    order.pipeline_step, order.due_at = PipelineStep.DOWNLOAD, now + timedelta(seconds=30)
    assert pipeline_state(order, now) == "Download: due in 30 s"
    order.claimed_until = now + timedelta(seconds=120)
    assert pipeline_state(order, now) == "Download: being worked on (claim ends in 120 s)"
    order.pipeline_step, order.due_at, order.claimed_until = PipelineStep.PRODUCTION, None, None
    assert pipeline_state(order, now) == "Production: waiting for the lab"
    order.pipeline_step = PipelineStep.DONE
    assert pipeline_state(order, now) == "Done (finished)"


def test_a_completed_order_page_shows_its_shipments_charges_and_finished_state(
    admin_client: Client, sandbox_api: APIClient, httpserver: HTTPServer, settings: Any
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SIMULATOR_SECONDS = 0
    url = serve(httpserver, "/admin.jpg", jpeg_bytes(), "image/jpeg")
    order = order_via_api(
        sandbox_api,
        items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}],
    )
    done = run_in_process(order.public_id)

    page = admin_client.get(reverse("admin:orders_order_change", args=[order.id]))

    assert done.pipeline_step == PipelineStep.DONE
    html = page.content.decode()
    shipment = done.shipments.get()
    assert shipment.public_id in html and shipment.tracking_number in html
    assert all(charge.public_id in html for charge in done.charges.all())
    assert "Done (finished)" in html
