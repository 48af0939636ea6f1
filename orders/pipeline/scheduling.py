"""Handing orders to the pipeline: only after the transaction that made them due commits."""

from common.tasks import task_enqueue_on_commit

ADVANCE_TASK = "orders.tasks.order_advance_task"


def order_enqueue_on_commit(*, order_id: int) -> None:
    task_enqueue_on_commit(ADVANCE_TASK, order_id)
