"""Handing orders to the pipeline: only after the transaction that made them due commits."""

from django.db import transaction


def order_enqueue_on_commit(*, order_id: int) -> None:
    from orders.tasks import advance_order

    # robust: a broker outage after commit must not fail the request; the sweeper rings later.
    transaction.on_commit(lambda: advance_order.delay(order_id), robust=True)
