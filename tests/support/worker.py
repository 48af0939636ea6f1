"""A real Celery worker (with its beat sweeper) in its own process, on the test database.

The worker runs with the settings of ``config.settings.local`` pointed at the database
pytest-django created, so what the tests see is what production does: tasks carrying ids
through the broker, claims by conditional update, due times in rows.
"""

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings
from django.db import connection

from config.env import BASE_DIR
from tests.support.database import ON_POSTGRES, database_url

WORKER_APPLICATION = "pipeline-test-worker"
WAIT_SECONDS = 60.0
NO_WORKER = "a real Celery worker needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL)"
CAN_RUN_WORKER = bool(ON_POSTGRES and settings.REDIS_URL)
needs_worker = pytest.mark.skipif(not CAN_RUN_WORKER, reason=NO_WORKER)


def worker_sessions() -> int:
    """Database sessions of the test workers (their connections carry WORKER_APPLICATION)."""
    if not ON_POSTGRES:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = %s",
            [WORKER_APPLICATION],
        )
        (count,) = cursor.fetchone()
    return int(count)


def purge_queues() -> None:
    """Drop queued and unacknowledged messages left by other tests on this broker."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    client.delete("default", "callbacks", "unacked", "unacked_index")
    for key in client.scan_iter("default\x06\x16*"):
        client.delete(key)
    client.close()


@dataclass
class Worker:
    """A ``celery -A config worker -B`` subprocess; ``kill`` is SIGKILL, ``start`` starts anew."""

    env: dict[str, str]
    folder: Path
    process: subprocess.Popen[bytes] | None = None
    runs: int = 0
    logs: list[Path] = field(default_factory=list)

    def start(self) -> None:
        self.runs += 1
        log = self.folder / f"worker-{self.runs}.log"
        self.logs.append(log)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-B",
                "-Q",
                "default,callbacks",
                "-P",
                "prefork",
                "-c",
                "2",
                "-l",
                "info",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-s",
                str(self.folder / "beat-schedule"),
                "-n",
                f"pipeline-test-{self.runs}@%h",
            ],
            cwd=BASE_DIR,
            env=self.env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self) -> None:
        """SIGKILL the whole process group: the main process, its pool children and beat.

        Returns once every process of the group is gone and the database has dropped their
        sessions: the pool children are not ours to wait for, and a session left behind makes
        the test database's teardown fail ("being accessed by other users").
        """
        if self.process is None:
            return
        group = self.process.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
        self.process.wait(timeout=10)
        self.process = None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        while time.monotonic() < deadline and worker_sessions():
            time.sleep(0.05)

    def log_tail(self, lines: int = 60) -> str:
        if not self.logs:
            return ""
        text = self.logs[-1].read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])


def worker_environment(folder: Path, base_url: str, **overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.local",
        DATABASE_URL=f"{database_url()}?application_name={WORKER_APPLICATION}",
        DATABASE_CONN_MAX_AGE="0",
        REDIS_URL=settings.REDIS_URL,
        VAR_DIR=str(folder / "var"),
        MEDIA_ROOT=str(settings.MEDIA_ROOT),
        SANDBOX_BASE_URL=base_url,
        LIVE_BASE_URL=base_url,
        ALLOW_PRIVATE_URLS="1",
        LAB_SIMULATOR_SECONDS="1",
        ASSET_RETRY_BASE_SECONDS="0.05",
        ASSET_RETRY_MAX_SECONDS="0.2",
        PIPELINE_SWEEP_SECONDS="1",
        PIPELINE_CLAIM_SECONDS="20",
        ASSET_DOWNLOAD_DEADLINE_SECONDS="10",
        LOG_LEVEL="INFO",
    )
    env.update(overrides)
    return env


def start_worker(folder: Path, base_url: str, **overrides: str) -> Worker:
    purge_queues()
    worker = Worker(env=worker_environment(folder, base_url, **overrides), folder=folder)
    worker.start()
    return worker


def wait_for(
    what: str, check: Callable[[], Any], worker: Worker | None, timeout: float = WAIT_SECONDS
) -> Any:
    """Poll ``check`` until it returns something true, and return that; fail with the worker's
    log when ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    tail = worker.log_tail() if worker is not None else ""
    pytest.fail(f"timed out waiting for {what}\n--- worker log ---\n{tail}")
