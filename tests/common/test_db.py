"""Statements sent together (``common.db.rows_together``) and prepared statements on
PostgreSQL: the same rows whichever way they travel, one query as Django counts them. The
conditional update built once (``common.db.rows_update``): what the ORM's would change. A row
inserted once per key (``common.db.row_insert_or_count``), concurrent inserts counted on it.
Whether the database answers (``common.db.database_reachable``)."""

import threading
from collections.abc import Iterator
from contextlib import nullcontext
from datetime import timedelta
from typing import Any

import pytest
from django.db import OperationalError, connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from common import db
from common.db import (
    database_reachable,
    row_insert_or_count,
    rows_together,
    rows_update,
    server_side_binding,
)
from labs.models import SimulatedLabOrder
from merchants.models import Merchant
from orders.models import DetailState, Order, PipelineStep
from tests.orders.factories import OrderFactory

pytestmark = pytest.mark.django_db

needs_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's prepared statements"
)


@pytest.fixture
def client_side_binding() -> Iterator[None]:
    """The connection as ``DATABASE_PREPARED_STATEMENTS=0`` makes it: values written into the
    statements by the driver, nothing prepared."""
    options = connection.settings_dict["OPTIONS"]
    saved = dict(options)
    options.pop("server_side_binding", None)
    options.pop("prepare_threshold", None)
    connection.close()
    try:
        yield
    finally:
        connection.close()
        options.clear()
        options.update(saved)


def _renamed_then_read(merchant_id: int) -> list[list[tuple[object, ...]]]:
    """An UPDATE returning nothing, then two SELECTs that see it."""
    table = Merchant._meta.db_table
    with transaction.atomic():
        return rows_together([
            (f"UPDATE {table} SET name = %s WHERE id = %s", ["Renamed", merchant_id]),
            (f"SELECT name FROM {table} WHERE id = %s", [merchant_id]),
            (f"SELECT id, name FROM {table} WHERE id IN (%s, %s) ORDER BY id", [merchant_id, 0]),
        ])  # fmt: skip


def _check(merchant_id: int) -> None:
    with CaptureQueriesContext(connection) as captured:
        results = _renamed_then_read(merchant_id)
    assert results == [[], [("Renamed",)], [(merchant_id, "Renamed")]]
    expected = 1 if connection.vendor == "postgresql" else 3
    transaction_control = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE SAVEPOINT")
    statements = [
        q for q in captured.captured_queries if not q["sql"].startswith(transaction_control)
    ]
    assert len(statements) == expected


def test_statements_together_answer_each_in_turn(merchant) -> None:
    _check(merchant.merchant.id)


@needs_postgresql
@pytest.mark.django_db(transaction=True)  # the connection is opened again without them
def test_without_prepared_statements_they_go_as_one_query(merchant, client_side_binding) -> None:
    assert not server_side_binding()
    _check(merchant.merchant.id)


@needs_postgresql
def test_a_statement_run_again_is_prepared_on_the_server(merchant) -> None:
    assert server_side_binding()
    table = Merchant._meta.db_table

    def prepared() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_prepared_statements")
            return int(cursor.fetchone()[0])

    before = prepared()
    for _ in range(3):
        Merchant.objects.filter(id=merchant.merchant.id).values_list("name", flat=True).get()
        rows_together([
            (f"SELECT name FROM {table} WHERE id = %s", [merchant.merchant.id]),
            (f"SELECT id FROM {table} WHERE id = %s", [merchant.merchant.id]),
        ])  # fmt: skip
    # The ORM's read and both statements sent together, each prepared once.
    assert prepared() >= before + 3


@needs_postgresql
def test_an_error_inside_statements_together_is_djangos_error(merchant) -> None:
    from django.db import DatabaseError

    with pytest.raises(DatabaseError), transaction.atomic():
        rows_together([("SELECT 1", []), ("SELECT * FROM no_such_table", [])])
    assert rows_together([("SELECT 1", []), ("SELECT 2", [])]) == [[(1,)], [(2,)]]


# ``rows_update``: the ORM's conditional update, its SQL built once per process.


def _rows(order_ids: list[int]) -> list[tuple[object, ...]]:
    return list(
        Order.objects.filter(id__in=order_ids)
        .order_by("id")
        .values_list("pipeline_step", "claimed_until", "due_at", "download_assets")
    )


def test_an_update_changes_the_rows_the_orm_would_and_counts_them() -> None:
    now = timezone.now()
    claim = now + timedelta(minutes=10)
    ours = OrderFactory.create(claimed_until=claim)
    theirs = OrderFactory.create(claimed_until=claim + timedelta(seconds=1))  # another claim
    unclaimed = OrderFactory.create(claimed_until=None)
    moved = {
        "pipeline_step": PipelineStep.ALLOCATE,
        "due_at": now,
        "claimed_until": None,
        "download_assets": DetailState.COMPLETE,
    }
    for order in (ours, theirs):
        condition = {"id": order.id, "pipeline_step": PipelineStep.DOWNLOAD, "claimed_until": claim}
        assert rows_update(Order, condition, moved) == (1 if order is ours else 0)
    # None is IS NULL, as in filter(); the attname of a key works as its name does.
    unclaimed_condition = {
        "id": unclaimed.id,
        "claimed_until": None,
        "environment_id": unclaimed.environment_id,
    }
    assert rows_update(Order, unclaimed_condition, {"due_at": None}) == 1
    assert _rows([ours.id, theirs.id, unclaimed.id]) == [
        (PipelineStep.ALLOCATE, None, now, DetailState.COMPLETE),
        (PipelineStep.DOWNLOAD, theirs.claimed_until, theirs.due_at, theirs.download_assets),
        (PipelineStep.DOWNLOAD, None, None, unclaimed.download_assets),
    ]


def test_an_update_writes_what_the_orms_update_writes() -> None:
    """Twin orders, one updated by the ORM and one by ``rows_update``, with the same conditions
    and values in turn: choices, aware and naive datetimes, a nullable field set and cleared, a
    foreign key by its attname, conditions on None and on a value (each its own shape)."""
    now = timezone.now()
    claim = now + timedelta(minutes=5)
    steps: list[tuple[dict[str, object], dict[str, object], int]] = [
        (
            {"claimed_until": None, "pipeline_step": PipelineStep.DOWNLOAD},
            {"pipeline_step": PipelineStep.SUBMIT, "due_at": now, "claimed_until": None},
            1,
        ),
        (
            {"claimed_until": None},
            {"download_assets": DetailState.ERROR, "merchant_reference": "twin", "due_at": None},
            1,
        ),
        (  # a naive datetime is taken as UTC, with Django's warning
            {"claimed_until": None, "pipeline_step": PipelineStep.SUBMIT},
            {"claimed_until": claim.replace(tzinfo=None), "last_updated": now},
            1,
        ),
        ({"claimed_until": claim}, {"merchant_reference": "claimed"}, 1),
        ({"claimed_until": None}, {"due_at": now}, 0),  # claimed now: no row
    ]
    by_orm, by_rows = OrderFactory.create(), OrderFactory.create()
    for condition, change, expected in steps:
        for order, update in ((by_orm, None), (by_rows, rows_update)):
            where = {"id": order.id, "environment_id": order.environment_id, **condition}
            naive = "last_updated" in change
            with pytest.warns(RuntimeWarning) if naive else nullcontext():
                if update is None:
                    changed = Order.objects.filter(**where).update(**change)
                else:
                    changed = update(Order, where, change)
            assert changed == expected
    fields = ("pipeline_step", "due_at", "claimed_until", "download_assets", "merchant_reference")
    orm_row, rows_row = (
        Order.objects.filter(id=order.id).values_list(*fields).get() for order in (by_orm, by_rows)
    )
    assert rows_row == orm_row == (PipelineStep.SUBMIT, None, claim, DetailState.ERROR, "claimed")


def test_an_update_is_built_once_for_its_shape_and_sent_as_one_statement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    builds: list[object] = []
    build = db._update_built

    def counted(*args: Any) -> Any:
        builds.append(args)
        return build(*args)

    monkeypatch.setattr(db, "_UPDATES", {})
    monkeypatch.setattr(db, "_update_built", counted)
    order = OrderFactory.create()
    with CaptureQueriesContext(connection) as captured:
        for name in ("first", "second"):
            db.rows_update(Order, {"id": order.id}, {"merchant_reference": name})
        db.rows_update(Order, {"id": order.id, "claimed_until": None}, {"merchant_reference": "x"})
    statements = [query["sql"] for query in captured.captured_queries]
    assert statements[0].startswith('UPDATE "orders_order" SET "merchant_reference" = ')
    assert statements[1] == statements[0].replace("first", "second")
    assert len(statements) == 3 and len(builds) == 2  # a None in the condition: another shape
    assert Order.objects.get(id=order.id).merchant_reference == "x"


@needs_postgresql
def test_an_update_that_fails_inside_a_transaction_marks_it_for_rollback() -> None:
    from django.db import DataError

    order = OrderFactory.create()
    with transaction.atomic():
        with pytest.raises(DataError):  # longer than the column's 200 characters
            rows_update(Order, {"id": order.id}, {"merchant_reference": "x" * 300})
        assert transaction.get_rollback()  # rolled back to its savepoint as the block ends


def test_an_update_refuses_what_it_would_not_do_as_the_orm_does() -> None:
    from django.db.models import F

    refused: list[tuple[dict[str, Any], dict[str, Any], str]] = [
        ({"items": 1}, {"due_at": None}, r"Order\.items is not a column"),
        ({"metadata": None}, {"due_at": None}, r"Order\.metadata: JSON fields"),
        ({"id": 1}, {}, "values to set and a condition"),
        ({}, {"due_at": None}, "values to set and a condition"),
        ({"id": 1}, {"merchant_reference": F("merchant_reference")}, "plain values"),
    ]
    for where, values, message in refused:
        with pytest.raises(ValueError, match=message):
            rows_update(Order, where, values)


@needs_postgresql
@pytest.mark.django_db(transaction=True)
def test_a_request_after_the_server_dropped_the_kept_connection_opens_a_new_one() -> None:
    """No ``SELECT 1`` before each request (``CONN_HEALTH_CHECKS`` off): a kept connection the
    server ended between requests is noticed and replaced, and the request runs as if nothing
    happened (``common.db.dropped_connections_closed``)."""
    from django.db import connections
    from django.test import Client

    client = Client()
    assert client.get("/healthz").status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            # Returns once the session has ended (its socket closed), up to 10 s.
            cursor.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])
    finally:
        other.close()

    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["database"] == "ok"


# ``row_insert_or_count``: one row per key, later inserts counted on it.


def _recorded(shipment_id: str, reference: str) -> Any:
    return row_insert_or_count(
        SimulatedLabOrder(shipment_id=shipment_id, lab_code="gb1", reference=reference),
        key="shipment_id",
        counter="submissions",
        answer="reference",
    )


@pytest.mark.parametrize("returning", [True, False], ids=["returning", "read-after"])
def test_a_row_is_inserted_once_per_key_and_later_inserts_are_counted_on_it(
    returning: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not returning:  # as on SQLite before 3.35, where an INSERT returns nothing
        monkeypatch.setattr(db, "insert_returning", lambda: False)
    before = timezone.now()
    assert _recorded("shp_1", "first") == "first"
    assert _recorded("shp_1", "second") == "first"
    assert _recorded("shp_2", "other") == "other"

    rows = SimulatedLabOrder.objects.order_by("shipment_id")
    assert [(r.shipment_id, r.reference, r.submissions) for r in rows] == [
        ("shp_1", "first", 2),
        ("shp_2", "other", 1),
    ]
    # The model's auto_now_add time, in the database's own form of a datetime.
    assert before <= rows[0].created <= timezone.now()


@needs_postgresql
@pytest.mark.django_db(transaction=True)  # each thread commits on its own connection
def test_concurrent_inserts_of_one_key_make_one_row_that_counts_them_all() -> None:
    """The first insert holds its transaction open; the others wait for its commit and count
    on its row, each answering the first's reference (none fails on the unique key)."""
    inserted, answers = threading.Event(), []

    def first() -> None:
        try:
            with transaction.atomic():
                answers.append(_recorded("shp_9", "first"))
                inserted.set()
                # Let the others reach the unique key and wait on it.
                threading.Event().wait(0.5)
        finally:
            connections.close_all()

    def later(reference: str) -> None:
        try:
            inserted.wait(10)
            answers.append(_recorded("shp_9", reference))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=first)] + [
        threading.Thread(target=later, args=(f"later-{n}",)) for n in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert answers == ["first"] * 5
    (row,) = SimulatedLabOrder.objects.all()
    assert (row.reference, row.submissions) == ("first", 5)


# ``database_reachable``


def test_the_database_is_reachable_and_a_refusal_is_no_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert database_reachable() is True

    def refuse(*args: object, **kwargs: object) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "cursor", refuse)
    assert database_reachable() is False
