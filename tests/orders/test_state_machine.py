"""The state machine is the one writer of an order's step, stage, due time and claim, and
every move it makes is in its transition table.

The walk: every move of ``TRANSITIONS`` made by the worker's writer (claim, then move on) and
by the row-locked writer (the order locked, then moved), each watched by
``tests.support.state_writes``; every pair of steps not in the table refused by both, with
nothing written. The whole suite runs under the same watch (``tests/conftest.py``), so a write
of the order's state from any other module fails the test that made it.
"""

import ast
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from orders.models import Order, PipelineStep, Stage
from orders.pipeline.claims import ACTIVE_STEPS, order_claim
from orders.pipeline.state_machine import (
    CREATED,
    TRANSITIONS,
    MoveRefused,
    order_move_on,
    order_transition,
)
from tests.orders.factories import OrderFactory
from tests.support.documents import document_rewritten
from tests.support.state_writes import ROOT, WRITERS, state_columns_set, state_writes_watched

# The stage an order shows at each step (InProgress elsewhere).
STAGE_AT: dict[str, str] = {
    PipelineStep.HELD: Stage.ON_HOLD,
    PipelineStep.AWAITING_PAYMENT: Stage.AWAITING_PAYMENT,
    PipelineStep.DONE: Stage.COMPLETE,
    PipelineStep.CANCELLED: Stage.CANCELLED,
}
MOVES = [move for move in TRANSITIONS if move.source != CREATED]
PAIRS = {(move.source, move.target) for move in TRANSITIONS}
NOT_MOVES = [
    (source, target)
    for source in PipelineStep.values
    for target in PipelineStep.values
    if (source, target) not in PAIRS
]


def _order_at(step: str) -> Order:
    past = timezone.now() - timedelta(seconds=5)
    return OrderFactory.create(
        pipeline_step=step, stage=STAGE_AT.get(step, Stage.IN_PROGRESS), due_at=past
    )


def _moved_fields(target: str) -> dict[str, Any]:
    stage = STAGE_AT.get(target)
    return {"stage": stage} if stage else {}


def test_the_table_has_each_move_once_and_every_active_step_may_wait_on_itself() -> None:
    pairs = [(move.source, move.target) for move in TRANSITIONS]
    assert len(pairs) == len(set(pairs))
    assert all((step, step) in PAIRS for step in ACTIVE_STEPS)
    # Every step is reached, and only the finished ones lead nowhere but where staff send them.
    assert {move.target for move in TRANSITIONS} == set(PipelineStep.values)
    assert {move.source for move in MOVES} == set(PipelineStep.values) - {PipelineStep.CANCELLED}
    assert (PipelineStep.FAILED, PipelineStep.PRODUCTION) in PAIRS  # reopened by a resubmission
    assert (PipelineStep.DONE, PipelineStep.PRODUCTION) in PAIRS


@pytest.mark.django_db
@pytest.mark.parametrize("move", MOVES, ids=lambda m: f"{m.source}->{m.target}")
def test_every_move_of_the_table_is_written_by_the_state_machine_alone(move: Any) -> None:
    due = timezone.now() + timedelta(minutes=3)
    if move.source in ACTIVE_STEPS:
        # A worker's move: the order claimed for its step, then moved on under the claim.
        order = _order_at(move.source)
        claimed = order_claim(order_id=order.id, step=move.source)
        assert claimed is not None and claimed.claimed_until is not None
        with state_writes_watched() as watch:
            order_move_on(order=claimed, step=move.target, due_at=due, **_moved_fields(move.target))
        row = Order.objects.get(id=order.id)
        assert (row.pipeline_step, row.due_at, row.claimed_until) == (move.target, due, None)
        assert {writer for writer, _ in watch.seen} == {"orders/pipeline/state_machine.py"}

    # A row-locked transition: the order locked by the caller's transaction, then moved (a
    # worker's claim on it dropped).
    order = _order_at(move.source)
    Order.objects.filter(id=order.id).update(
        claimed_until=timezone.now() + timedelta(minutes=5), claim_token=7
    )
    with state_writes_watched() as watch, transaction.atomic():
        locked = Order.objects.select_for_update().get(id=order.id)
        order_transition(order=locked, step=move.target, due_at=due, **_moved_fields(move.target))
    row = Order.objects.get(id=order.id)
    assert (row.pipeline_step, row.due_at, row.claimed_until, row.claim_token) == (
        move.target, due, None, None,
    )  # fmt: skip
    assert row.stage == STAGE_AT.get(move.target, order.stage)
    assert [writer for writer, _ in watch.seen] == ["orders/pipeline/state_machine.py"]
    assert watch.refused == []


@pytest.mark.django_db
@pytest.mark.parametrize(("source", "target"), NOT_MOVES, ids=lambda step: str(step))
def test_a_move_not_in_the_table_is_refused_by_both_writers_and_writes_nothing(
    source: str, target: str
) -> None:
    order = _order_at(source)
    before = Order.objects.values().get(id=order.id)
    if source in ACTIVE_STEPS:
        claimed = order_claim(order_id=order.id, step=source)
        assert claimed is not None
        before = Order.objects.values().get(id=order.id)
        with pytest.raises(MoveRefused):
            order_move_on(order=claimed, step=target, due_at=None)
        assert Order.objects.values().get(id=order.id) == before
    with transaction.atomic():
        locked = Order.objects.select_for_update().get(id=order.id)
        with pytest.raises(MoveRefused):
            order_transition(order=locked, step=target, due_at=None)
    assert Order.objects.values().get(id=order.id) == before


@pytest.mark.django_db(transaction=True)
def test_a_row_locked_transition_outside_a_transaction_is_refused() -> None:
    order = _order_at(PipelineStep.HELD)
    with pytest.raises(RuntimeError):
        order_transition(order=order, step=PipelineStep.CANCELLED, due_at=None)
    assert Order.objects.get(id=order.id).pipeline_step == PipelineStep.HELD


@pytest.mark.django_db
@pytest.mark.order_state_written_elsewhere
def test_a_write_of_the_orders_state_from_another_module_is_caught() -> None:
    """Code of ``orders/actions.py`` (compiled under that name here) writing the step itself
    is refused by the watch; the same statement from the state machine is not."""
    order = _order_at(PipelineStep.FAILED)
    source = (
        "def reopen(Order, order_id):\n"
        "    Order.objects.filter(id=order_id).update(pipeline_step='Production')\n"
    )
    scope: dict[str, Any] = {}
    exec(compile(source, str(ROOT / "orders" / "actions.py"), "exec"), scope)

    with state_writes_watched() as watch:
        scope["reopen"](Order, order.id)
        Order.objects.filter(id=order.id).update(last_updated=timezone.now())  # not the state
    document_rewritten(order)

    assert [(writer, set(columns)) for writer, columns, _ in watch.refused] == [
        ("orders/actions.py", {"pipeline_step"})
    ]


def test_the_watch_reads_the_columns_an_update_assigns_not_those_it_compares() -> None:
    assert (
        state_columns_set(
            'UPDATE "orders_order" SET "swept_at" = %s WHERE "orders_order"."pipeline_step" = %s'
        )
        == set()
    )
    assert state_columns_set(
        'UPDATE "orders_order" SET "stage" = %s, "last_updated" = %s WHERE "id" = %s'
    ) == {"stage"}
    claim = (
        'WITH c AS (UPDATE "orders_order" SET claimed_until = %(until)s, download_assets = '
        "CASE WHEN pipeline_step = 'Download' THEN 'InProgress' ELSE download_assets END "
        "WHERE id = %(order)s RETURNING *) SELECT * FROM c"
    )
    assert state_columns_set(claim) == {"claimed_until"}
    assert state_columns_set('UPDATE "orders_orderitem" SET "stage" = %s') == set()


_STATE_ATTRIBUTES = {"pipeline_step", "stage"}


def _state_assignments(path: Path) -> list[str]:
    """Where a module assigns an order's step or stage itself: ``x.pipeline_step = ...`` or
    ``.update(pipeline_step=...)``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.stmt | ast.expr):
            continue
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr in _STATE_ATTRIBUTES:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "update"
            and any(k.arg in _STATE_ATTRIBUTES for k in node.keywords)
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_module_but_the_state_machine_assigns_an_orders_step_or_stage() -> None:
    modules = [
        path
        for path in ROOT.rglob("*.py")
        if path.relative_to(ROOT).parts[0] not in (".venv", "var", "tests", "bench")
        and "migrations" not in path.parts
        and path.relative_to(ROOT).as_posix() not in WRITERS
    ]
    assert len(modules) > 100
    assert [spot for path in modules for spot in _state_assignments(path)] == []
