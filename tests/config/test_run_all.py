"""``make run``'s process runner (``scripts/run_all.py``) keeps the service up: a worker or
beat that dies is started again while web goes on answering, within a budget of restarts a
minute; beyond it, or on SIGTERM, everything stops."""

import os
import re
import signal
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.local_stack import LocalStack, run_all

# scripts/run_all's web, workers and scheduler.
pytestmark = [pytest.mark.slow, pytest.mark.side_by_side]


def wait_for(condition: Callable[[], Any], seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
    return found


def pids(stack: LocalStack, name: str) -> list[int]:
    """The pids ``name`` was started with, in order."""
    return [int(pid) for pid in re.findall(rf"^{name} started \(pid (\d+)\)$", stack.log(), re.M)]


def started_after(stack: LocalStack, name: str, pid: int) -> bool:
    """Whether ``name`` was started again since it ran as ``pid``."""
    return pids(stack, name)[-1] != pid


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, not yet reaped by run_all, has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
    except FileNotFoundError:
        return False
    return state != "Z"


def healthz(stack: LocalStack) -> int:
    return requests.get(f"{stack.url}/healthz", timeout=10).status_code


def test_a_killed_worker_or_beat_is_started_again_and_too_many_deaths_stop_all(
    tmp_path: Path,
) -> None:
    # Given make run's processes on the embedded default (one process or two threads each)
    with run_all(
        tmp_path / "var",
        WEB_CONCURRENCY="1",
        CELERY_CONCURRENCY="1",
        CELERY_THREADS="2",
        LABS_CONCURRENCY="1",
    ) as stack:
        [web] = pids(stack, "web")
        [images] = pids(stack, "images")
        started = {name: pids(stack, name)[0] for name in ("web", "io", "labs", "beat")}
        assert healthz(stack) == 200

        # When the images worker is killed (as the kernel's out-of-memory killer would)
        os.kill(images, signal.SIGKILL)

        # Then it is started again, and web (the same process) answered meanwhile
        wait_for(lambda: len(pids(stack, "images")) == 2, 30, "images started again")
        assert "images exited with -9; starting it again (1 of 5 restarts a minute)." in (
            stack.log()
        )
        assert healthz(stack) == 200
        assert pids(stack, "web") == [web] and alive(web)
        again = pids(stack, "images")[1]
        assert again != images and alive(again)
        assert all(alive(pid) for pid in started.values())

        # When beat dies six times within a minute
        for _ in range(6):
            killed = pids(stack, "beat")[-1]
            os.kill(killed, signal.SIGKILL)
            if len(pids(stack, "beat")) < 6:
                wait_for(partial(started_after, stack, "beat", killed), 30, "beat started again")

        # Then it was started again five times, and the sixth death stopped everything
        wait_for(lambda: stack.process.poll() is not None, 60, "run_all to stop")
        log = stack.log()
        assert len(pids(stack, "beat")) == 6
        assert "beat exited with -9; starting it again (5 of 5 restarts a minute)." in log
        assert "beat exited with -9 (6 times in a minute); stopping the others." in log
        assert stack.process.returncode != 0

    everyone = [*pids(stack, "web"), *pids(stack, "images"), *pids(stack, "io")]
    everyone += [*pids(stack, "labs"), *pids(stack, "beat")]
    assert not [pid for pid in everyone if alive(pid)]


def test_sigterm_stops_every_process(tmp_path: Path) -> None:
    with run_all(tmp_path / "var", WEB_CONCURRENCY="1", CELERY_THREADS="0") as stack:
        everyone = [*pids(stack, "web"), *pids(stack, "worker"), *pids(stack, "beat")]
        assert len(everyone) == 3 and healthz(stack) == 200

    assert stack.process.returncode == 0
    wait_for(lambda: not [pid for pid in everyone if alive(pid)], 10, "every process gone")
