"""The web application served by a real gunicorn in its own process, on the test database.

Started from the project folder as ``make run`` and ``deploy/`` start it (so it reads
``gunicorn.conf.py``), with the test settings and the database pytest-django created.
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings

from config.env import BASE_DIR
from tests.support.database import ON_POSTGRES, database_url

WEB_APPLICATION = "web-test-gunicorn"
# Another process sees the test database only on a server (pytest-django's SQLite one is in memory).
needs_shared_database = pytest.mark.skipif(
    not ON_POSTGRES, reason="a second process reaches the test database only on PostgreSQL"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_listening(
    port: int, process: subprocess.Popen[bytes], name: str, *, seconds: float
) -> None:
    """Return once ``process`` accepts connections on ``port``; RuntimeError if it exits or
    ``seconds`` pass first."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"{name} did not start") from None
            time.sleep(0.1)


@dataclass(frozen=True)
class Web:
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def gunicorn_serving(workers: int = 1, **overrides: str) -> Iterator[Web]:
    """Serve ``config.wsgi`` until the block ends; the database is this session's test one."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings.test", DATABASE_CONN_MAX_AGE="0")
    if ON_POSTGRES:
        env["DATABASE_URL"] = f"{database_url()}?application_name={WEB_APPLICATION}"
    if settings.REDIS_URL:
        env["REDIS_URL"] = settings.REDIS_URL
    env.update(overrides)
    gunicorn = Path(sys.executable).parent / "gunicorn"
    command = [str(gunicorn), "config.wsgi:application", "--bind", f"127.0.0.1:{port}"]
    process = subprocess.Popen(
        [*command, "--workers", str(workers)],
        cwd=BASE_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until_listening(port, process, "gunicorn", seconds=30)
        yield Web(port=port, process=process)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
