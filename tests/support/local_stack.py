"""``make run`` in a copy of the checkout: the local stack as a newcomer starts it.

The copy holds what a clone of the working tree would (tracked files and new files git does
not ignore), so the tests see uncommitted changes too. It shares this checkout's virtual
environment (``VENV``, which the Makefile reads from the environment) rather than installing
one of its own, with the copy first on ``PYTHONPATH`` so every process imports the copy's
code. Nothing else is set: no database or Redis URL (the embedded default: SQLite and the
filesystem broker under the copy's ``var/``), no settings module (``make run`` chooses it).
"""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from config.env import BASE_DIR
from tests.support.web import free_port

# The marks of a module whose tests run ``make run`` from what git holds: slow (make run's web,
# worker and scheduler; they only wait on them), and skipped outside a git checkout.
MAKE_RUN_MARKS = [
    pytest.mark.slow,
    pytest.mark.side_by_side,
    pytest.mark.skipif(
        subprocess.run(["git", "rev-parse"], cwd=BASE_DIR, capture_output=True).returncode != 0,
        reason="not a git checkout",
    ),
]
READY = re.compile(r"^Ready on http://127\.0\.0\.1:(\d+)", re.MULTILINE)
# Variables of this process a newcomer's shell would not have.
_NOT_A_NEWCOMERS = (
    "DATABASE_URL",
    "REDIS_URL",
    "VAR_DIR",
    "DJANGO_",
    "PYTEST",
    "EMAIL_URL",
    "VENV",
    "PYTHONPATH",
)


def checkout_copy(into: Path) -> Path:
    """The files a clone of the working tree holds, copied into ``into``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=BASE_DIR,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = BASE_DIR / name
        if source.is_file():  # a file deleted but not yet committed is listed too
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def newcomer_environment(**more: str) -> dict[str, str]:
    """This process's environment without what a newcomer's shell would not have."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_NOT_A_NEWCOMERS)}
    env.update(more)
    return env


def shared_environment(checkout: Path, **more: str) -> dict[str, str]:
    """A newcomer's environment in ``checkout`` using this checkout's virtual environment."""
    venv = str(Path(sys.executable).parent.parent)
    return newcomer_environment(VENV=venv, PYTHONPATH=str(checkout), **more)


@dataclass
class LocalStack:
    checkout: Path
    port: int
    process: subprocess.Popen[bytes]
    output: list[str] = field(default_factory=list)
    ready_at: float = 0.0  # time.monotonic() when it said it was ready

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return "".join(self.output)

    def env(self, **more: str) -> dict[str, str]:
        """The environment of a second shell in the checkout (as the quickstart's)."""
        return shared_environment(self.checkout, PORT=str(self.port), **more)

    def manage(self, *arguments: str) -> str:
        """``manage.py`` in the checkout, as ``make run`` runs it; its output."""
        python = Path(sys.executable).parent / "python"
        return subprocess.run(
            [str(python), "manage.py", *arguments],
            cwd=self.checkout,
            env=self.env(DJANGO_SETTINGS_MODULE="config.settings.local"),
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout


@contextlib.contextmanager
def make_run(checkout: Path, *, seconds: float = 300, **more: str) -> Iterator[LocalStack]:
    """``PORT=<a free port> make run`` in ``checkout``, with ``more`` in its environment, until
    the block ends (then SIGTERM to its process group, as Ctrl-C would send SIGINT)."""
    port = free_port()
    environment = shared_environment(checkout, PORT=str(port), **more)
    with _serving(["make", "run"], checkout, environment, port, seconds) as stack:
        yield stack


@contextlib.contextmanager
def run_all(var_dir: Path, *, seconds: float = 180, **more: str) -> Iterator[LocalStack]:
    """``scripts/run_all.py`` (what ``make run`` ends with) from this checkout, on the embedded
    default in ``var_dir`` (not migrated) and a free port, with ``more`` in its environment,
    until the block ends (then SIGTERM to its process group)."""
    port = free_port()
    environment = newcomer_environment(
        DJANGO_SETTINGS_MODULE="config.settings.local", VAR_DIR=str(var_dir), PORT=str(port)
    )
    environment.update(more)
    command = [sys.executable, "scripts/run_all.py"]
    with _serving(command, BASE_DIR, environment, port, seconds) as stack:
        yield stack


@contextlib.contextmanager
def _serving(
    command: list[str], folder: Path, environment: dict[str, str], port: int, seconds: float
) -> Iterator[LocalStack]:
    process = subprocess.Popen(
        command,
        cwd=folder,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    stack = LocalStack(checkout=folder, port=port, process=process)
    assert process.stdout is not None
    stream = process.stdout

    def read() -> None:
        for line in iter(stream.readline, b""):
            stack.output.append(line.decode(errors="replace"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + seconds
        while not READY.search(stack.log()):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{' '.join(command)} did not get ready:\n{stack.log()[-5000:]}")
            time.sleep(0.2)
        stack.ready_at = time.monotonic()
        yield stack
    finally:
        _stop(process)
        reader.join(timeout=5)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to make and scripts/run_all.py (its process group), then wait until the group
    is gone: run_all stops web, workers and beat (each in a session of its own) before it
    exits."""
    group = process.pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        process.poll()
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    process.wait(timeout=10)
