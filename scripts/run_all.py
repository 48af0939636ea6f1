"""Run web (gunicorn), the Celery workers and Celery beat together in the foreground.

Three workers share the queues: a prefork one for `images` (CPU-bound: `CELERY_CONCURRENCY`
processes, by default one more than the CPUs, so the CPUs stay busy while a process waits on the
database between renders), a thread-pool one for `downloads` and `callbacks` (both wait on other
hosts: `CELERY_THREADS` threads), so a slow asset host never holds the rendering processes, and a
thread-pool one for `labs` (submissions and progress checks: `LABS_CONCURRENCY` threads), so a
lab site that hangs holds neither. `CELERY_THREADS=0` runs one prefork worker consuming every
queue instead.

A worker or beat that exits (killed, out of memory, crashed) is started again while web and the
others keep serving, each at most ``RESTARTS_PER_MINUTE`` times in a minute; one that exits more
often than that, or web exiting, stops them all (this exits with its code). Each start and exit
is one line with the process's pid. Ctrl-C (or SIGTERM) stops them all. Once the web server
answers, one line says where it serves and where the quickstart's values are.

With ``SITEFLOW_STANDIN`` on (``SITEFLOW_STANDIN=1 make run``) it also runs the Site Flow
stand-in (``labs/siteflow_standin.py``, a development tool) on ``SITEFLOW_STANDIN_PORT`` (by
default the port after ``PORT``), keeping its orders under ``$VAR_DIR/siteflow-standin``, where
``setup_demo`` pointed the demo Site Flow lab ``sf1``; it is restarted as the workers are.
"""

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections import deque

PYTHON_BIN = os.path.dirname(sys.executable)
RESTARTS_PER_MINUTE = 5
# Web is not restarted: its exit (a port taken, a broken setting) is for the person to see.
NOT_RESTARTED = ("web",)
# What turns a boolean setting on (as django-environ reads it in config/settings/local.py).
TRUE_WORDS = ("true", "on", "ok", "y", "yes", "1")


def _command(name: str) -> list[str]:
    return [os.path.join(PYTHON_BIN, name)]


def _worker(name: str, queues: str, *pool: str) -> list[str]:
    return [
        *_command("celery"), "-A", "config", "worker", "--loglevel", "INFO",
        "--hostname", f"{name}@%h", "--queues", queues, *pool,
    ]  # fmt: skip


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _started(name: str, command: list[str]) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(command, start_new_session=True)
    print(f"{name} started (pid {process.pid})", flush=True)
    return process


def _leftovers_killed(process: subprocess.Popen[bytes]) -> None:
    """What an exited process left of its session (a killed worker's pool processes)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    port = os.environ.get("PORT", "8000")
    concurrency = os.environ.get("CELERY_CONCURRENCY", str((os.cpu_count() or 1) + 1))
    threads = os.environ.get("CELERY_THREADS", "8")
    processes = {
        "web": [
            *_command("gunicorn"),
            "config.wsgi:application",
            "--bind", f"127.0.0.1:{port}",
            "--workers", os.environ.get("WEB_CONCURRENCY", "2"),
            "--timeout", "75",
            "--access-logfile", "-",
        ],
        "beat": [*_command("celery"), "-A", "config", "beat", "--loglevel", "INFO"],
    }  # fmt: skip
    if threads == "0":
        processes["worker"] = _worker(
            "worker", "downloads,images,labs,callbacks,sweeps", "--concurrency", concurrency
        )
    else:
        processes["images"] = _worker("images", "images", "--concurrency", concurrency)
        processes["io"] = _worker(
            "io", "downloads,callbacks,sweeps", "--pool", "threads", "--concurrency", threads
        )
        labs = os.environ.get("LABS_CONCURRENCY", "4")
        processes["labs"] = _worker("labs", "labs", "--pool", "threads", "--concurrency", labs)
    var_dir = os.environ.get("VAR_DIR", "var")
    if os.environ.get("SITEFLOW_STANDIN", "").strip().lower() in TRUE_WORDS:
        standin_port = os.environ.get("SITEFLOW_STANDIN_PORT") or str(int(port) + 1)
        processes = {
            "siteflow-standin": [
                sys.executable, "-m", "labs.siteflow_standin", "--port", standin_port,
                "--folder", os.path.join(var_dir, "siteflow-standin"),
            ],
            **processes,
        }  # fmt: skip
    names = ", ".join(processes)
    print(f"Starting {names} on http://127.0.0.1:{port}; Ctrl-C stops all.", flush=True)
    running = {name: _started(name, command) for name, command in processes.items()}
    exits: dict[str, deque[float]] = {name: deque() for name in processes}
    demo_file = os.path.join(var_dir, "demo.env")
    ready = False

    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    exit_code = 0
    while not stopping:
        for name, process in list(running.items()):
            if process.poll() is None or stopping:
                continue
            _leftovers_killed(process)
            now = time.monotonic()
            recent = exits[name]
            recent.append(now)
            while recent[0] <= now - 60:
                recent.popleft()
            if name in NOT_RESTARTED or len(recent) > RESTARTS_PER_MINUTE:
                within = "" if name in NOT_RESTARTED else f" ({len(recent)} times in a minute)"
                print(
                    f"{name} exited with {process.returncode}{within}; stopping the others.",
                    flush=True,
                )
                exit_code = process.returncode or 1
                stopping = True
                continue
            print(
                f"{name} exited with {process.returncode}; starting it again "
                f"({len(recent)} of {RESTARTS_PER_MINUTE} restarts a minute).",
                flush=True,
            )
            running[name] = _started(name, processes[name])
        if not ready and not stopping and _answers(f"http://127.0.0.1:{port}/healthz"):
            ready = True
            print(
                f"Ready on http://127.0.0.1:{port}: `. {demo_file}` in another shell sets API, "
                "the demo keys and DEMO_IMAGE_URL for the README's quickstart.",
                flush=True,
            )
        time.sleep(0.5)
    for process in running.values():
        if process.poll() is None:
            process.terminate()  # each main process shuts its own children down warmly
    deadline = time.monotonic() + 20
    for process in running.values():
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
