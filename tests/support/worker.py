"""Real Celery workers (with their beat sweeper) in their own processes, on the test database:
one consuming every queue (``start_worker``), or one per queue with its own pool and a lone
beat, as deployed (``start_queue_workers``).

The worker runs with the settings of ``config.settings.local`` pointed at the database
pytest-django created, so what the tests see is what production does: tasks carrying ids
through the broker, claims by conditional update, due times in rows.
"""

import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings
from django.db import connection

from config.env import BASE_DIR
from tests.support.database import ON_POSTGRES, database_url
from tests.support.pgbouncer import pooled_clients

WORKER_APPLICATION = "pipeline-test-worker"
WAIT_SECONDS = 60.0
# The queues of config/settings/base.py: a worker here consumes all of them unless told otherwise.
QUEUES = ("downloads", "images", "labs", "callbacks", "sweeps")
NO_WORKER = "a real Celery worker needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL)"
CAN_RUN_WORKER = bool(ON_POSTGRES and settings.REDIS_URL)
needs_worker = pytest.mark.skipif(not CAN_RUN_WORKER, reason=NO_WORKER)


def worker_sessions(application: str = WORKER_APPLICATION) -> int:
    """Database sessions of the test workers (their connections carry WORKER_APPLICATION), or
    of one of them (``Worker.application``). Behind PgBouncer, their connections to it."""
    if not ON_POSTGRES:
        return 0
    pooled = pooled_clients(application)
    if pooled is not None:
        return pooled
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name LIKE %s",
            [f"{application}%"],
        )
        (count,) = cursor.fetchone()
    return int(count)


def purge_queues() -> None:
    """Drop queued and unacknowledged messages left by other tests on this broker, and the
    concurrency places and slow hosts its cache holds (``common.concurrency``,
    ``orders.pipeline.lanes``): a place taken by a worker a test killed would otherwise stay
    taken for minutes."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    client.delete(*QUEUES, "default", "unacked", "unacked_index")
    for queue in (*QUEUES, "default"):
        for key in client.scan_iter(f"{queue}\x06\x16*"):
            client.delete(key)
    for pattern in ("*:concurrency:*", "*:slow-download-host:*"):
        for key in client.scan_iter(pattern):
            client.delete(key)
    client.close()


def queued(queue: str) -> list[tuple[str, list[Any]]]:
    """The messages waiting in ``queue`` on this broker, oldest first: (task name, arguments)."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    raw = client.lrange(queue, 0, -1)
    client.close()
    found = []
    for message in reversed(raw):  # kombu pushes on the left and pops on the right
        envelope = json.loads(message)
        args, _kwargs, _embed = json.loads(base64.b64decode(envelope["body"]))
        found.append((envelope["headers"]["task"], args))
    return found


@dataclass
class Worker:
    """A ``celery -A config worker`` subprocess consuming ``queues`` with ``pool`` and
    ``concurrency`` (with its beat unless ``beat`` is False), or with ``kind="beat"`` a lone
    ``celery -A config beat``; ``kill`` is SIGKILL, ``start`` starts anew."""

    env: dict[str, str]
    folder: Path
    queues: tuple[str, ...] = QUEUES
    pool: str = "prefork"
    concurrency: int = 2
    beat: bool = True
    kind: str = "worker"
    name: str = "pipeline-test"
    process: subprocess.Popen[bytes] | None = None
    runs: int = 0
    logs: list[Path] = field(default_factory=list)

    @property
    def application(self) -> str:
        """The ``application_name`` of this process's database sessions."""
        return f"{WORKER_APPLICATION}-{self.name}"

    def arguments(self) -> list[str]:
        schedule = ["-s", str(self.folder / f"{self.name}-beat-schedule")]
        if self.kind == "beat":
            return ["beat", "-l", "info", *schedule]
        return [
            "worker",
            *(["-B", *schedule] if self.beat else []),
            "-Q",
            ",".join(self.queues),
            "-P",
            self.pool,
            "-c",
            str(self.concurrency),
            "-l",
            "info",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-n",
            f"{self.name}-{self.runs}@%h",
        ]

    def start(self) -> None:
        self.runs += 1
        log = self.folder / f"{self.name}-{self.runs}.log"
        self.logs.append(log)
        env = dict(self.env)
        env["DATABASE_URL"] = env["DATABASE_URL"].replace(
            f"application_name={WORKER_APPLICATION}", f"application_name={self.application}"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", *self.arguments()],
            cwd=BASE_DIR,
            env=env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def ready(self) -> bool:
        """The worker consumes (its banner's "ready." line), or beat has started."""
        if not self.logs or not self.logs[-1].exists():
            return False
        text = self.logs[-1].read_text(errors="replace")
        return ("beat: Starting" in text) if self.kind == "beat" else (" ready." in text)

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
        while time.monotonic() < deadline and worker_sessions(self.application):
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
        # This process's key: the file URLs the worker signs in documents are those signed here.
        DJANGO_SECRET_KEY=settings.SECRET_KEY,
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
        ASSET_PERMANENT_RETRY_SECONDS="0.05,0.1",
        PIPELINE_SWEEP_SECONDS="1",
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


@contextlib.contextmanager
def worker_running(base_url: str, db_blocker: Any, **overrides: str) -> Iterator[Worker]:
    """A worker for a test module's tests (``start_worker`` with ``overrides`` of its
    environment), killed at the end with its sessions gone (``db_blocker``: pytest-django's
    ``django_db_blocker``, unblocked to see them go) and the broker emptied; skips without
    PostgreSQL and Redis."""
    if not CAN_RUN_WORKER:
        pytest.skip(NO_WORKER)
    with tempfile.TemporaryDirectory(prefix="pipeline-worker-") as folder:
        running = start_worker(Path(folder), base_url, **overrides)
        try:
            yield running
        finally:
            with db_blocker.unblock():
                running.kill()
            purge_queues()


@dataclass
class Workers:
    """The processes of a deployment: a worker per queue, as README "Queues and workers" runs
    them, and beat (inside the images worker, or alone)."""

    members: dict[str, Worker]

    def __getitem__(self, name: str) -> Worker:
        return self.members[name]

    def start(self) -> None:
        for worker in self.members.values():
            worker.start()

    def ready(self) -> bool:
        return all(worker.ready() for worker in self.members.values())

    def kill(self) -> None:
        for worker in self.members.values():
            worker.kill()

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(
            f"--- {name} ---\n{worker.log_tail(lines)}" for name, worker in self.members.items()
        )


def start_queue_workers(
    folder: Path,
    base_url: str,
    *,
    images: int = 2,
    download_threads: int = 4,
    lab_threads: int = 2,
    callback_threads: int = 2,
    beat_alone: bool = False,
    **overrides: str,
) -> Workers:
    """One worker per queue (images: prefork; downloads, labs and callbacks: threads) and
    beat, on the test database and broker; returns once every one of them consumes."""
    purge_queues()
    env = worker_environment(folder, base_url, **overrides)
    members = {
        "images": Worker(
            env, folder, ("images",), "prefork", images, beat=not beat_alone, name="images"
        ),
        "downloads": Worker(
            env, folder, ("downloads",), "threads", download_threads, beat=False, name="downloads"
        ),
        "labs": Worker(env, folder, ("labs",), "threads", lab_threads, beat=False, name="labs"),
        "callbacks": Worker(
            env,
            folder,
            ("callbacks", "sweeps"),
            "threads",
            callback_threads,
            beat=False,
            name="callbacks",
        ),
    }
    if beat_alone:
        members["beat"] = Worker(env, folder, kind="beat", name="beat")
    workers = Workers(members)
    workers.start()
    wait_for("the workers to consume", workers.ready, workers)
    return workers


def wait_for(
    what: str,
    check: Callable[[], Any],
    worker: Worker | Workers | None,
    timeout: float = WAIT_SECONDS,
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
