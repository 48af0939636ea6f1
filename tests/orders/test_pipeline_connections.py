"""Workers keep their database connections from task to task (Celery's Django fix-up would close
them around every task; ``config/celery_app.py`` checks them instead, as Django does around a
request), and behind PgBouncer they reach the database through it."""

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from orders.models import OrderIssue
from tests.support.database import ON_POSTGRES
from tests.support.orders import photo_order, pk, stage_is
from tests.support.pgbouncer import POOLER_ADMIN_URL, pooled_clients
from tests.support.worker import needs_worker, purge_queues, start_worker, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue", "workers_base_url"),
    needs_worker,
]

CLIENT_BACKENDS = (
    "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
    "AND backend_type = 'client backend' AND application_name LIKE 'pipeline-test%%'"
)


def test_a_worker_keeps_its_connections_and_carries_on_at_once_when_they_are_cut(
    live_server: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    """Connections cut between tasks (a database restart, a proxy's idle timeout) are noticed
    before the next task uses them: that task runs as if nothing happened, with no failed step
    and no 60-second retry."""
    if connection.vendor != "postgresql":
        pytest.skip("cuts PostgreSQL sessions")
    with tempfile.TemporaryDirectory(prefix="pipeline-connections-") as folder:
        worker = start_worker(Path(folder), live_server.url, DATABASE_CONN_MAX_AGE="60")
        try:
            first = photo_order(sandbox_api, httpserver, "before-the-cut")
            wait_for("the first order", stage_is(sandbox_api, first, "Complete"), worker)
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT count(*) {CLIENT_BACKENDS}")
                (kept,) = cursor.fetchone()
                cursor.execute(f"SELECT count(pg_terminate_backend(pid)) {CLIENT_BACKENDS}")
                (cut,) = cursor.fetchone()
            assert kept >= 1 and cut == kept  # kept after their tasks ended, then cut

            second = photo_order(sandbox_api, httpserver, "after-the-cut")
            started = time.monotonic()
            wait_for("the second order", stage_is(sandbox_api, second, "Complete"), worker)

            assert time.monotonic() - started < 15  # a failed step waits for a retry
            assert not OrderIssue.objects.filter(order_id=pk(second)).exists()
            assert "retrying later" not in worker.log_tail(500)
        finally:
            worker.kill()
            purge_queues()


@pytest.mark.skipif(
    not ON_POSTGRES or not os.environ.get(POOLER_ADMIN_URL),
    reason="runs in the pass through PgBouncer (python -m tests.support.pgbouncer)",
)
def test_behind_pgbouncer_a_worker_reaches_the_database_through_it(
    live_server: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    """The workers the pipeline tests start are PgBouncer's clients, with prepared statements
    off, as a deployment behind it runs them: the pooled pass tests the pipeline behind it."""
    with tempfile.TemporaryDirectory(prefix="pipeline-pooled-") as folder:
        worker = start_worker(Path(folder), live_server.url, DATABASE_CONN_MAX_AGE="60")
        try:
            order_id = photo_order(sandbox_api, httpserver, "pooled")
            wait_for("the order", stage_is(sandbox_api, order_id, "Complete"), worker)

            clients = pooled_clients(worker.application)
            assert clients is not None and clients >= 1
            assert worker.env["DATABASE_PREPARED_STATEMENTS"] == "0"
        finally:
            worker.kill()
            purge_queues()
