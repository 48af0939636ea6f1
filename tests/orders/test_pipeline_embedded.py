"""The pipeline on the embedded broker (kombu's filesystem transport, no Redis).

The worker and its beat share a broker folder nobody else writes to, so the order's on-commit
task message from this test process never reaches it: the sweeper alone finds the order due and
queues every step, which is what a lost message leaves the system with.
"""

import tempfile
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from orders.models import Order, PipelineStep
from tests.support.database import ON_POSTGRES
from tests.support.images import jpeg_bytes
from tests.support.orders import order_create_via_api, pk, stage_is
from tests.support.servers import serve
from tests.support.worker import Worker, purge_queues, wait_for, worker_environment

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue", "workers_base_url"),
    pytest.mark.skipif(not ON_POSTGRES, reason="the worker shares the PostgreSQL test database"),
]


def test_an_order_completes_on_the_embedded_broker_with_only_the_sweeper_ringing(
    live_server: Any, sandbox_api: APIClient, httpserver: HTTPServer, settings: Any
) -> None:
    url = serve(httpserver, "/embedded.jpg", jpeg_bytes(), "image/jpeg")
    with tempfile.TemporaryDirectory(prefix="pipeline-embedded-") as folder:
        env = worker_environment(Path(folder), live_server.url, REDIS_URL="")
        worker = Worker(env=env, folder=Path(folder))
        worker.start()
        try:
            order_id = order_create_via_api(
                sandbox_api,
                items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}],
            )
            order = wait_for(
                "the order to complete", stage_is(sandbox_api, order_id, "Complete"), worker
            )
        finally:
            worker.kill()
            banner = worker.logs[-1].read_text(errors="replace")
            if settings.REDIS_URL:
                purge_queues()  # this process's task messages, which no worker was listening to

    assert [s["status"] for s in order["shipments"]] == ["Shipped"]
    assert Order.objects.get(id=pk(order_id)).pipeline_step == PipelineStep.DONE
    # The filesystem broker of the embedded default (common.file_broker: kombu's, sturdier).
    assert ".> transport:   common.file_broker:Transport://" in banner
