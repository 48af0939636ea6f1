"""The heartbeat of a claim (``orders.pipeline.claims.order_claim_kept``, built on
``common.leases.Heartbeat``), in this process: it renews the lease while a step runs, leaves the
claim's token (and so the step's own conditional writes) alone, and finds a claim taken over."""

import time
from typing import Any

import pytest
from django.utils import timezone

from common.leases import ClaimLost, claim_token_new
from orders.models import Order, PipelineStep
from orders.pipeline.claims import order_claim, order_claim_check, order_claim_kept
from orders.pipeline.state_machine import order_move_on
from tests.orders.factories import OrderFactory

# The heartbeat's own connection must see the order: committed rows.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalogue")]


def test_a_heartbeat_renews_the_lease_while_the_step_runs_and_the_step_still_moves_on(
    settings: Any,
) -> None:
    settings.PIPELINE_CLAIM_SECONDS = 3  # renewed every second
    made = OrderFactory.create(pipeline_step=PipelineStep.ALLOCATE, due_at=timezone.now())
    order = order_claim(order_id=made.id, step=PipelineStep.ALLOCATE)
    assert order is not None and order.claimed_until is not None
    taken, token = order.claimed_until, order.claim_token

    with order_claim_kept(order):
        time.sleep(4.5)  # one and a half leases: without renewals the claim would have expired
        row = Order.objects.get(id=made.id)
        assert row.claim_token == token
        assert row.claimed_until is not None and row.claimed_until > timezone.now()
        assert row.claimed_until > taken
        order_claim_check(order)  # not lost
        order_move_on(order=order, step=PipelineStep.PREPARE, due_at=timezone.now())

    moved = Order.objects.get(id=made.id)
    assert (moved.pipeline_step, moved.claimed_until, moved.claim_token) == (
        PipelineStep.PREPARE, None, None,
    )  # fmt: skip


def test_a_heartbeat_that_finds_the_claim_taken_over_stops_the_step(settings: Any) -> None:
    settings.PIPELINE_CLAIM_SECONDS = 3
    made = OrderFactory.create(pipeline_step=PipelineStep.ALLOCATE, due_at=timezone.now())
    order = order_claim(order_id=made.id, step=PipelineStep.ALLOCATE)
    assert order is not None

    with order_claim_kept(order):
        # Another worker's claim (our lease presumed over).
        Order.objects.filter(id=made.id).update(claim_token=claim_token_new())
        time.sleep(1.6)  # a renewal has run by now
        with pytest.raises(ClaimLost):
            order_claim_check(order)
        with pytest.raises(ClaimLost):
            order_move_on(order=order, step=PipelineStep.PREPARE, due_at=timezone.now())

    assert Order.objects.get(id=made.id).pipeline_step == PipelineStep.ALLOCATE
