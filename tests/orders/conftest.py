import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from tests.support.servers import Receiver
from tests.support.worker import CAN_RUN_WORKER, NO_WORKER, Worker, purge_queues, start_worker


@pytest.fixture(scope="module")
def worker(django_db_setup: None, django_db_blocker: Any, live_server: Any) -> Iterator[Worker]:
    """One worker for the module's tests (the database is emptied between tests)."""
    if not CAN_RUN_WORKER:
        pytest.skip(NO_WORKER)
    with tempfile.TemporaryDirectory(prefix="pipeline-worker-") as folder:
        running = start_worker(Path(folder), live_server.url)
        try:
            yield running
        finally:
            with django_db_blocker.unblock():  # to see the worker's sessions go
                running.kill()
            purge_queues()


@pytest.fixture
def receiver(httpserver: HTTPServer) -> Receiver:
    """The merchant's callback endpoint at ``httpserver``'s ``/callbacks``."""
    found = Receiver()
    httpserver.expect_request("/callbacks", method="POST").respond_with_handler(found.handle)
    return found
