"""A pipeline step and an order action meeting on one order: both lock the order's row first.

Transactional (the step and the action run in threads with their own sessions), so no worker
may run beside it: the order's on-commit task message would reach that worker, which would then
race this test's in-process steps for the order (``tests/orders/test_pipeline.py`` keeps one
worker for its whole module).
"""

import threading
from typing import Any

import pytest
from django.db import connection, transaction
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from orders.models import Order, OrderItem, PipelineStep, Shipment
from orders.pipeline.claims import order_claim
from orders.pipeline.state_machine import STEPS
from tests.support.database import sessions_waiting_for_a_lock_soon
from tests.support.orders import photo_order, pk
from tests.support.pipeline import advance_to

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("catalogue")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("step", [PipelineStep.ALLOCATE, PipelineStep.PRODUCTION])
def test_a_step_waits_for_an_action_holding_its_order_and_neither_deadlocks(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer, step: str
) -> None:
    """The allocation writes the order's items and shipments, production its shipments, then
    the order row; an action locks the order row, then writes those rows. Each step locks the
    order row first too (its claim renewed), so it waits for the action instead of holding
    rows the action then waits for (a deadlock, which PostgreSQL ends by failing one side)."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks are proven on PostgreSQL")
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SIMULATOR_SECONDS = 0
    order_id = photo_order(sandbox_api, httpserver, "locks")
    advance_to(order_id, step)
    # Claimed (committed), as a worker claims a step before it runs it.
    claimed = order_claim(order_id=pk(order_id), step=step)
    assert claimed is not None
    holding, release = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def action() -> None:  # as the actions do it: the order row, then its items and shipments
        try:
            with transaction.atomic():
                Order.objects.select_for_update().get(id=pk(order_id))
                holding.set()
                release.wait(10)
                OrderItem.objects.filter(order_id=pk(order_id)).update(merchant_reference="mine")
                Shipment.objects.filter(order_id=pk(order_id)).update(carrier_name="Mine")
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()

    def run_step() -> None:
        try:
            STEPS[step](claimed)
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()

    acting = threading.Thread(target=action)
    acting.start()
    assert holding.wait(10)
    stepping = threading.Thread(target=run_step)
    stepping.start()
    waited = sessions_waiting_for_a_lock_soon()
    release.set()
    acting.join(10)
    stepping.join(10)

    assert waited == 1 and failures == []
    order = Order.objects.get(id=pk(order_id))
    # The step ran to its end after the action: allocated, or shipped and complete.
    assert order.pipeline_step == (
        PipelineStep.PREPARE if step == PipelineStep.ALLOCATE else PipelineStep.DONE
    )
    assert order.items.get().merchant_reference == "mine"
