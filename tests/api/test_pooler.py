"""Behind PgBouncer (``make test`` runs this file and the workers' connection tests a second
time through it, ``python -m tests.support.pgbouncer``): the connection really is pooled in
transaction mode and nothing outlives a transaction."""

import os

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from tests.support.database import ON_POSTGRES

pytestmark = pytest.mark.skipif(
    not ON_POSTGRES or os.environ.get("DATABASE_PREPARED_STATEMENTS") != "0",
    reason="runs in the pass through PgBouncer (DATABASE_PREPARED_STATEMENTS=0)",
)


@pytest.mark.django_db
def test_the_database_is_reached_through_pgbouncer_in_transaction_mode() -> None:
    database = settings.DATABASES["default"]
    assert "prepare_threshold" not in database.get("OPTIONS", {})
    assert database["DISABLE_SERVER_SIDE_CURSORS"] is True

    admin = psycopg.connect(
        host=database["HOST"],
        port=database["PORT"],
        user=database["USER"],
        dbname="pgbouncer",
        autocommit=True,
        prepare_threshold=None,
    )
    with admin:
        cursor = admin.execute("SHOW POOLS")
        columns = [column.name for column in cursor.description or []]
        pools = [dict(zip(columns, row, strict=False)) for row in cursor.fetchall()]
    mine = [pool for pool in pools if pool["database"] == connection.settings_dict["NAME"]]
    assert mine and {pool["pool_mode"] for pool in mine} == {"transaction"}
