import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from tests.support.servers import Receiver
from tests.support.worker import CAN_RUN_WORKER, NO_WORKER, Worker, purge_queues, start_worker


@pytest.fixture(scope="module")
def module_worker(
    django_db_setup: None, django_db_blocker: Any, live_server: Any
) -> Iterator[Worker]:
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
def workers_base_url(settings: Any, live_server: Any) -> str:
    """The base URL the workers run with (the live server's: ``start_worker``), this process's
    too for the test: the documents the workers write and those written here (and the
    suite's check of them) show the same file URLs."""
    settings.SANDBOX_BASE_URL = settings.LIVE_BASE_URL = live_server.url
    return str(live_server.url)


@pytest.fixture
def worker(module_worker: Worker, workers_base_url: str) -> Worker:
    """The module's worker, for a test that runs with it (``workers_base_url``)."""
    return module_worker


@pytest.fixture
def receiver(httpserver: HTTPServer) -> Receiver:
    """The merchant's callback endpoint at ``httpserver``'s ``/callbacks``."""
    found = Receiver()
    httpserver.expect_request("/callbacks", method="POST").respond_with_handler(found.handle)
    return found
