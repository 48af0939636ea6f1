"""Shared pieces of the benchmarks: a free port, a scratch PostgreSQL database, a gunicorn
server and the wait for a healthy /healthz, keep-alive load loops."""

import http.client
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scratch_database(url: str, suffix: str) -> tuple[str, str, str]:
    """(URL of the database ``<name>_<suffix>`` beside the one of ``url``, its name, URL of
    the server's maintenance database)."""
    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'postgres'}_{suffix}"
    return (
        urlunsplit(parts._replace(path=f"/{name}")),
        name,
        urlunsplit(parts._replace(path="/postgres")),
    )


def recreate(admin_url: str, name: str, *, drop_only: bool = False) -> None:
    """Drop the database ``name`` (whoever is connected) and, unless ``drop_only``, create it
    empty."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not drop_only:
            connection.execute(f'CREATE DATABASE "{name}"')


def wait_until_up(
    port: int,
    timeout: float = 30,
    headers: Mapping[str, str] | None = None,
    what: str = "gunicorn did not start",
    path: str = "/healthz",
) -> None:
    """Return once ``GET path`` (``/healthz``) on ``port`` answers 200 (sent with ``headers``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", path, headers=dict(headers or {}))
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(what)


def start_gunicorn(
    port: int,
    env: dict[str, str],
    *,
    workers: int,
    threads: int,
    worker_class: str = "gthread",
    application: str = "config.wsgi:application",
    pythonpath: str = "",
    health_path: str = "/healthz",
    cwd: Path = ROOT,
) -> subprocess.Popen[bytes]:
    """Gunicorn serving ``application`` (with the gunicorn.conf.py of ``cwd``, the project's
    folder unless another checkout is served) once ``health_path`` answers 200."""
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            application,
            *(["--pythonpath", pythonpath] if pythonpath else []),
            "--bind", f"127.0.0.1:{port}",
            "--workers", str(workers),
            "--worker-class", worker_class,
            "--threads", str(threads),
            "--log-level", "warning",
        ],
        cwd=cwd,
        env={**os.environ, **env},
    )  # fmt: skip
    wait_until_up(port, path=health_path)
    return server


Request = tuple[str, str, bytes | None, dict[str, str]]


def drive(
    port: int,
    request: Request | Callable[[int], Request],
    seconds: float,
    clients: int,
) -> tuple[float, list[float]]:
    """Requests per second and latencies (s) of ``clients`` keep-alive loops for ``seconds``.

    ``request`` is ``(method, path, body, headers)`` or a function of the request number that
    returns one (to vary the body, e.g. a fresh idempotency key).
    """
    latencies: list[list[float]] = [[] for _ in range(clients)]
    failures: list[str] = []
    stop = time.monotonic() + seconds
    counter = iter(range(10**12))

    def loop(mine: list[float]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while time.monotonic() < stop:
            method, path, body, headers = request(next(counter)) if callable(request) else request
            started = time.perf_counter()
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            mine.append(time.perf_counter() - started)
            if response.status != 200:
                failures.append(f"{path}: {response.status}")
                return
        conn.close()

    threads = [threading.Thread(target=loop, args=(mine,)) for mine in latencies]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    if failures:
        raise SystemExit(f"request failed: {failures[0]}")
    flat = [x for mine in latencies for x in mine]
    return len(flat) / elapsed, flat


def report(name: str, rate: float, latencies: list[float], suffix: str = "") -> None:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    print(
        f"{name:<36} {rate:9.1f} req/s   median {statistics.median(ordered) * 1000:7.2f} ms"
        f"   p99 {p99 * 1000:7.2f} ms   ({len(ordered)} requests){suffix}"
    )


def _process_times() -> dict[int, tuple[str, int, int, float, float]]:
    """Every process's (command name, session id, start time in ticks, CPU seconds: user +
    system, and system alone). A kernel worker thread renames itself after the work it does,
    so a process is told from a later one with its pid by its start time, not its name."""
    tick = os.sysconf("SC_CLK_TCK")
    seen = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        session, started = int(fields[3]), int(fields[19])
        user, system = int(fields[11]), int(fields[12])
        seen[int(entry)] = (name, session, started, (user + system) / tick, system / tick)
    return seen


_MACHINE_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def machine_times() -> dict[str, float]:
    """The machine's CPU seconds since boot by kind, from the first line of ``/proc/stat``."""
    tick = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as handle:
        values = handle.readline().split()[1:]
    return {kind: int(value) / tick for kind, value in zip(_MACHINE_FIELDS, values, strict=False)}


class CpuMeter:
    """CPU seconds spent between ``start()`` and ``stop()``, by group of processes.

    ``groups`` maps a label to a test of (pid, command name, session id); a process counts in
    the first group whose test holds, else in "other". Processes that end in between are not
    counted (their time is lost), so the groups measured should be long-lived. ``machine``: the
    whole machine's CPU time in between by kind (``/proc/stat``: idle, softirq, steal...);
    ``system``: the part of each group's time spent in the kernel on its behalf.
    """

    def __init__(self, groups: Mapping[str, Callable[[int, str, int], bool]]) -> None:
        self.groups = groups
        self.before: dict[int, tuple[str, int, int, float, float]] = {}
        self.spent: dict[str, float] = {}
        self.system: dict[str, float] = {}
        self.others: dict[str, float] = {}  # "other" by command name
        self.machine_before: dict[str, float] = {}
        self.machine: dict[str, float] = {}  # the machine's CPU seconds in between, by kind

    def start(self) -> None:
        self.before = _process_times()
        self.machine_before = machine_times()

    def stop(self) -> dict[str, float]:
        after = _process_times()
        self.machine = {
            kind: seconds - self.machine_before[kind] for kind, seconds in machine_times().items()
        }
        spent: dict[str, float] = {label: 0.0 for label in [*self.groups, "other"]}
        system = dict(spent)
        for pid, (name, session, started, seconds, kernel) in after.items():
            was = self.before.get(pid)
            same = was is not None and was[2] == started
            used = seconds - (was[3] if was and same else 0.0)
            label = next(
                (label for label, test in self.groups.items() if test(pid, name, session)),
                "other",
            )
            spent[label] += used
            system[label] += kernel - (was[4] if was and same else 0.0)
            if label == "other":
                self.others[name] = self.others.get(name, 0.0) + used
        self.spent, self.system = spent, system
        return spent
