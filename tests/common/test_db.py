"""Prepared statements on PostgreSQL. One row's values read by a statement written once
(``common.db.row_values``): what the ORM's ``values_list`` gives. A row
inserted once per key (``common.db.row_insert_or_count``), concurrent inserts counted on it.
Whether the database answers (``common.db.database_reachable``)."""

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import OperationalError, connection, connections, transaction
from django.utils import timezone

from common import db
from common.db import (
    database_reachable,
    row_insert_or_count,
    row_values,
    server_side_binding,
)
from labs.models import SimulatedLabOrder
from merchants.models import Environment, Merchant

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


@needs_postgresql
def test_a_statement_run_again_is_prepared_on_the_server(merchant) -> None:
    assert server_side_binding()

    def prepared() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_prepared_statements")
            return int(cursor.fetchone()[0])

    before = prepared()
    for _ in range(3):
        Merchant.objects.filter(id=merchant.merchant.id).values_list("name", flat=True).get()
        Merchant.objects.filter(id=merchant.merchant.id).values_list("id", flat=True).get()
    # Each of the ORM's two reads prepared once.
    assert prepared() >= before + 2


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


@pytest.mark.documents_unchecked  # the database is still "down" when the check would run
def test_the_database_is_reachable_and_a_refusal_is_no_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert database_reachable() is True

    def refuse(*args: object, **kwargs: object) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "cursor", refuse)
    assert database_reachable() is False


# ``row_values``


def test_a_rows_values_are_what_the_orms_values_list_gives(merchant) -> None:
    environment = merchant.merchant.environments.get(kind="Sandbox")
    fields = ("kind", "previous_signing_secret_until", "merchant")
    expected = Environment.objects.filter(id=environment.id).values_list(*fields).get()
    found = row_values(Environment, fields, id=environment.id, merchant=merchant.merchant.id)
    assert found == expected
    # a datetime as the ORM gives it (aware, in UTC), on every database
    created = Merchant.objects.filter(id=merchant.merchant.id).values_list("created").get()
    assert row_values(Merchant, ("created",), id=merchant.merchant.id) == created
    assert row_values(Environment, ("kind",), id=environment.id, merchant=0) is None
