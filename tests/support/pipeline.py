"""Running the pipeline in the test's own process, and reading where an order stands in it.

In-process runs call the state machine directly (no worker; no task message is sent), so a
test can stop an order at a step and change the world before the next one.
"""

import time
from collections.abc import Callable

import pytest
from django.utils import timezone

from orders.models import Order, PipelineStep
from orders.pipeline.state_machine import order_advance
from tests.support.orders import pk


def run_in_process(order_id: str) -> Order:
    """Advance the order step by step, as the worker's tasks would, until it stops being due."""
    for _ in range(20):
        due = order_advance(order_id=pk(order_id))
        if due is None:
            break
        time.sleep(max(0.0, (due - timezone.now()).total_seconds()))
    return Order.objects.get(id=pk(order_id))


def advance_to(order_id: str, step: str) -> Order:
    """Run steps in-process until the order's next step is ``step``."""
    for _ in range(10):
        order = Order.objects.get(id=pk(order_id))
        if order.pipeline_step == step:
            return order
        order_advance(order_id=order.id)
    pytest.fail(f"{order_id} never reached {step}")


def make_due(order_id: str) -> None:
    """Make the order due now, as if its wait were over."""
    Order.objects.filter(id=pk(order_id)).update(due_at=timezone.now())


def order_failed(order_id: str) -> Callable[[], bool]:
    """A check for ``wait_for``: the order stopped at the Failed step."""
    return lambda: Order.objects.filter(id=pk(order_id), pipeline_step=PipelineStep.FAILED).exists()
