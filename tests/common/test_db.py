"""Statements sent together (``common.db.rows_together``) and prepared statements on
PostgreSQL: the same rows whichever way they travel, one query as Django counts them."""

from collections.abc import Iterator

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from common.db import rows_together, server_side_binding
from merchants.models import Merchant

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
