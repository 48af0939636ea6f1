"""``common.joined``'s reads for what shows rows: only the fields named, timestamps as the
API's text (``iso_timestamp``) whatever the stored form."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection

from common.db import rows_together
from common.joined import RowsPage, Table, TableColumns, UnitedRead, iso_timestamp, rows_by_ids
from orders.models import Order, OrderIssue
from tests.orders.factories import OrderFactory

pytestmark = pytest.mark.django_db

PAGE = RowsPage(Order, fields=("created", "last_updated", "held_until"), iso_timestamps=True)


def test_a_page_of_some_fields_reads_those_and_the_key_with_timestamps_as_text() -> None:
    order = OrderFactory.create(
        created=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        last_updated=datetime(2026, 1, 2, 3, 4, 5, 999999, tzinfo=timezone(timedelta(hours=5))),
    )

    (row,) = PAGE.rows([("pk", "exact", order.id)], limit=10)

    assert vars(row) == {
        "id": order.id,
        "created": "2026-01-02T03:04:05.000Z",
        "last_updated": "2026-01-01T22:04:05.999Z",
        "held_until": None,
    }
    assert row.public_id == order.public_id


@pytest.mark.parametrize("microsecond", [0, 1, 999, 1000, 123456, 999999])
def test_timestamps_read_as_text_are_the_text_of_the_read_datetimes(microsecond: int) -> None:
    moment = datetime(2026, 11, 26, 23, 59, 59, microsecond, tzinfo=UTC)
    order = OrderFactory.create(created=moment, last_updated=moment, held_until=moment)

    (row,) = PAGE.rows([("pk", "exact", order.id)], limit=10)

    stored = Order.objects.get(id=order.id)
    assert row.created == row.last_updated == row.held_until == iso_timestamp(stored.created)


def test_a_timestamp_stored_with_an_offset_reads_as_its_utc_text() -> None:
    order = OrderFactory.create()
    moment = datetime(2026, 11, 26, 23, 30, 0, 250000, tzinfo=timezone(timedelta(hours=-2)))
    table = connection.ops.quote_name(Order._meta.db_table)
    with connection.cursor() as cursor:  # as a statement sends an aware datetime as it is
        cursor.execute(f"UPDATE {table} SET created = %s WHERE id = %s", [moment, order.id])

    (row,) = PAGE.rows([("pk", "exact", order.id)], limit=10)

    assert row.created == "2026-11-27T01:30:00.250Z"


def test_an_instance_is_not_made_of_some_fields() -> None:
    order = OrderFactory.create()
    columns = TableColumns(Order, "t0", fields=("created",))

    with pytest.raises(TypeError):
        columns.instance([order.id, order.created], 0, connection)


ORDER_WITH_ISSUES = UnitedRead(
    rows_by_ids(Table(Order, fields=("stage",)), by="pk"),
    rows_by_ids(Table(OrderIssue, order_by=("id",), fields=("error_code",)), by="order"),
)


def test_a_row_read_beside_a_united_read_is_on_each_of_its_rows_and_alone_without_them() -> None:
    order = OrderFactory.create()
    for code in ("ItemUnavailable", "FailedToDownload"):
        OrderIssue.objects.create(order=order, error_code=code, description="")
    beside = "SELECT 7, 'seven'"

    (rows,) = rows_together([ORDER_WITH_ISSUES.statement_beside([order.id], beside)])
    (missing,) = rows_together([ORDER_WITH_ISSUES.statement_beside([order.id + 1], beside)])

    assert [tuple(row[-2:]) for row in rows] == [(7, "seven")] * 3
    found, issues = ORDER_WITH_ISSUES.split(rows)
    assert [tuple(row) for row in found] == [(order.id, order.stage)]
    assert [row[1] for row in issues] == ["ItemUnavailable", "FailedToDownload"]
    assert [tuple(row) for row in missing] == [(None,) * (len(rows[0]) - 2) + (7, "seven")]
    assert ORDER_WITH_ISSUES.split(missing) == [[], []]
    # the same read without the row beside
    (alone,) = rows_together([ORDER_WITH_ISSUES.statement([order.id])])
    assert ORDER_WITH_ISSUES.split(alone) == [found, issues]
