"""The production topology of ``deploy/`` started whole by ``deploy/start.sh`` (supervisord).

The environment file is the template, ``deploy/production.env.example``, with this session's
test database and Redis database, free ports and a temporary ``VAR_DIR``: the production
settings are in force. supervisord keeps its control socket, its own log and each program's
log under ``VAR_DIR``; the tests read the programs' states and pids through its XML-RPC
interface on that socket, as ``deploy/ctl.sh status`` does.
"""

import contextlib
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import xmlrpc.client
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from supervisor.xmlrpc import SupervisorTransport

from config.env import BASE_DIR
from tests.support.database import database_url
from tests.support.proxy import environment_file
from tests.support.web import free_port

# What each program says in its log once it serves (nginx says nothing: the health check
# through it is its proof).
READY = {
    "proxy": None,
    "web": re.compile(r"Booting worker with pid"),
    "downloads": re.compile(r"downloads@\S+ ready\."),
    "images": re.compile(r"images@\S+ ready\."),
    "labs": re.compile(r"labs@\S+ ready\."),
    "callbacks": re.compile(r"callbacks@\S+ ready\."),
    "beat": re.compile(r"beat: Starting\.\.\."),
}


@dataclass
class Topology:
    process: subprocess.Popen[bytes]
    env_file: Path
    var_dir: Path
    proxy_port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.proxy_port}"

    def log(self, program: str) -> str:
        """The program's log (``supervisord`` for supervisord's own)."""
        path = self.var_dir / "log" / f"{program}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs_tail(self, lines: int = 15) -> str:
        return "\n".join(
            f"--- {name} ---\n" + "\n".join(self.log(name).splitlines()[-lines:])
            for name in ("supervisord", *READY)
        )

    def wait(self, what: str, check: Callable[[], Any], timeout: float) -> Any:
        """Poll ``check`` until it returns something true, and return that; fail with the
        end of every log when ``timeout`` seconds pass first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            time.sleep(0.2)
        pytest.fail(f"timed out waiting for {what}\n{self.logs_tail()}")

    def programs(self) -> dict[str, dict[str, Any]]:
        """Each program's state as supervisord reports it (``statename``, ``pid``, ...)."""
        transport = SupervisorTransport(None, None, f"unix://{self.var_dir}/supervisor.sock")
        proxy = xmlrpc.client.ServerProxy("http://127.0.0.1", transport=transport)
        try:
            infos: list[dict[str, Any]] = proxy.supervisor.getAllProcessInfo()  # type: ignore[assignment]
            return {info["name"]: info for info in infos}
        finally:
            transport.close()

    def pids(self) -> dict[str, int]:
        return {name: info["pid"] for name, info in self.programs().items()}

    def ready(self, awaited: Iterable[str] = READY) -> list[str]:
        """The programs of ``awaited`` not yet serving (by their logs) or not yet RUNNING."""
        try:
            states = {name: info["statename"] for name, info in self.programs().items()}
        except OSError:
            return list(awaited)
        return [
            name
            for name in awaited
            if states.get(name) != "RUNNING"
            or ((ready := READY[name]) and not ready.search(self.log(name)))
        ]


def topology_environment(tmp_path: Path, **overrides: str) -> dict[str, str]:
    """The settings of a small topology on this session's database and broker."""
    return {
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "METRICS_TOKEN": secrets.token_urlsafe(32),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "NGINX_PORT": str(free_port()),
        "WEB_BIND": f"127.0.0.1:{free_port()}",
        "WEB_CONCURRENCY": "1",
        "IMAGES_CONCURRENCY": "1",
        "CALLBACKS_CONCURRENCY": "1",
        "LABS_CONCURRENCY": "1",
        "VAR_DIR": str(tmp_path / "var"),
        "MEDIA_ROOT": str(tmp_path / "media"),
        **overrides,
    }


@contextlib.contextmanager
def topology_running(
    tmp_path: Path,
    programs: Sequence[str] = (),
    awaited: Iterable[str] | None = None,
    **overrides: str,
) -> Iterator[Topology]:
    """``deploy/start.sh`` with the settings of ``topology_environment`` and ``programs`` (by
    default all); yields once each of ``awaited`` (by default ``programs``) serves, and stops
    them all (SIGTERM to supervisord) when the block ends."""
    values = topology_environment(tmp_path, **overrides)
    env_file = environment_file(tmp_path / "test.env", values)
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))}
    environment["VENV"] = str(Path(sys.executable).parent.parent)
    with (tmp_path / "start.log").open("wb") as output:
        process = subprocess.Popen(
            [str(BASE_DIR / "deploy" / "start.sh"), str(env_file), *programs],
            cwd=BASE_DIR,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    topology = Topology(process, env_file, Path(values["VAR_DIR"]), int(values["NGINX_PORT"]))
    try:
        deadline = time.monotonic() + 120
        awaited = list(programs or READY) if awaited is None else list(awaited)
        while (waiting := topology.ready(awaited)) and process.poll() is None:
            assert time.monotonic() < deadline, f"not serving: {waiting}\n{topology.logs_tail()}"
            time.sleep(0.5)
        assert process.poll() is None, (tmp_path / "start.log").read_text(errors="replace")
        yield topology
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
