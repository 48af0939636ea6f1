"""Soak: the production topology at its measured capacity for a minute; no 5xx, memory flat.

Run from the project root with PostgreSQL and Redis (loopback only)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mydb REDIS_URL=redis://127.0.0.1:6379/6 \\
        .venv/bin/python bench/bench_soak.py [--seconds 60] [--probe-seconds 10] [--clients 8]
        [--web-workers 4]

It creates a scratch database ``<name>_soak`` beside the one in ``DATABASE_URL`` (dropped at
the end), writes an environment file from ``deploy/production.env.example`` (production
settings; a scratch ``VAR_DIR``; free ports; ``API_RATE_LIMIT`` raised so the budget is not
what is measured), runs ``deploy/release.sh``, loads the demo catalogue, creates a merchant and
20 orders, and starts the whole of ``deploy/start.sh``: nginx in front of gunicorn, the
downloads, images, labs and callbacks workers and beat. Requests go through nginx over keep-alive
connections, with ``X-Forwarded-Proto: https`` as a load balancer sends it, in a fixed mix:
``GET /healthz``, ``GET /v4.0/orders/{id}``, ``GET /v4.0/orders?top=10``, ``POST /v4.0/quotes``
(2 items, every method) and ``POST /v4.0/orders`` (2 items; their assets are on a loopback
address the service refuses to fetch, so the workers see downloads fail and back off, and
nothing leaves the machine).

1. **Capacity**: ``--clients`` closed loops for ``--probe-seconds``: requests per second.
2. **Soak**: the same mix for ``--seconds``, paced at that rate (open loop: a request is sent
   at its time whether or not earlier ones have been answered). Every status is counted;
   the resident memory of every process of the topology is read from ``/proc`` at the start,
   halfway and at the end (growth in the first half only is warming up; in both, a leak,
   unless it follows the task messages the workers hold: a retry's countdown waits in the
   downloads worker's memory, and their number is printed for the same three reads).

Exits non-zero on any 5xx, on any failed request, or when a gunicorn worker grew by more
than ``--max-growth-mb``.
"""

import argparse
import collections
import http.client
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api_tree import QUOTE  # noqa: E402 -- the same basket as the hot-path bench
from bench.harness import free_port, recreate, scratch_database, wait_until_up  # noqa: E402

MERCHANT_KEY = "sk_sandbox_soak_" + "0" * 24
UNREACHABLE_ASSET = "http://127.0.0.1:9/soak.jpg"  # refused by the guarded client: never fetched
ORDER = {
    "shippingMethod": "Standard",
    "recipient": {
        "name": "Soak Recipient",
        "address": {
            "line1": "1 Load Street",
            "postalOrZipCode": "EC1A 1BB",
            "countryCode": "GB",
            "townOrCity": "London",
        },
    },
    "items": [
        {"sku": "GLOBAL-FAP-10X10", "copies": 1, "assets": [{"url": UNREACHABLE_ASSET}]},
        {
            "sku": "GLOBAL-CAN-10X10",
            "copies": 2,
            "attributes": {"wrap": "ImageWrap"},
            "assets": [{"url": UNREACHABLE_ASSET}],
        },
    ],
}
HEADERS = {
    "Host": "127.0.0.1",
    "X-Forwarded-Proto": "https",
    "X-API-Key": MERCHANT_KEY,
    "Content-Type": "application/json",
}


def environment_file(path: Path, overrides: dict[str, str]) -> None:
    """The template with ``overrides`` in place of its lines (or added at the end)."""
    template = (ROOT / "deploy" / "production.env.example").read_text().splitlines()
    lines, left = [], dict(overrides)
    for line in template:
        key = line.split("=", 1)[0] if "=" in line and not line.startswith("#") else None
        if key in left:
            lines.append(f"{key}={left.pop(key)}")
        else:
            lines.append(line)
    lines += [f"{key}={value}" for key, value in left.items()]
    path.write_text("\n".join(lines) + "\n")


def honcho_run(env_file: Path, *command: str) -> str:
    bin_dir = Path(sys.executable).parent
    return subprocess.run(
        [str(bin_dir / "honcho"), "--app-root", ".", "--env", str(env_file), "run", *command],
        cwd=ROOT,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = collections.defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children[parent].append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children[todo.pop()]:
            found.append(child)
            todo.append(child)
    return found


def process_memory(root: int) -> dict[int, tuple[str, int]]:
    """Every process under ``root`` that is part of the topology: pid -> (name, RSS in kB)."""
    memory = {}
    for pid in descendants(root):
        try:
            command = (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")).decode()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        rss = next(
            (int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS")), 0
        )
        if command.startswith("/bin/sh") or not rss:
            continue
        memory[pid] = (describe(command), rss)
    return memory


def broker_messages(redis_url: str) -> tuple[int, int]:
    """The task messages in the broker: (held by the workers, queued). A held message was
    delivered and is not yet acknowledged: running, or waiting in a worker's memory for its
    countdown (a download's retry due within ``DIRECT_FOLLOW_UP``), so a worker's memory grows
    and shrinks with their number without being a leak."""
    client = redis.Redis.from_url(redis_url)
    try:
        held = int(client.hlen("unacked"))  # kombu's Redis transport keeps them there
        queued = sum(
            int(client.llen(key)) for key in client.scan_iter() if client.type(key) == b"list"
        )
    finally:
        client.close()
    return held, queued


def describe(command: str) -> str:
    if "supervisord" in command:
        return "supervisord"
    if command.startswith("nginx"):
        return "nginx " + command.split(":")[1].split()[0]
    if "gunicorn" in command:
        return "gunicorn"
    if "celery" in command:
        for queue in ("downloads", "images", "labs", "callbacks"):
            if f"--queues {queue}" in command:
                return f"celery {queue}"
        return "celery beat" if " beat" in command else "celery"
    return command.split()[0]


class Load:
    """Keep-alive clients through nginx sending the mix; statuses and latencies counted."""

    def __init__(self, port: int, order_ids: list[str]) -> None:
        self.port = port
        self.order_ids = order_ids
        self.statuses: collections.Counter[int] = collections.Counter()
        self.failures: list[str] = []
        self.latencies: list[float] = []
        self.lock = threading.Lock()
        self.counter = 0

    def request(self, number: int) -> tuple[str, str, bytes | None]:
        kind = number % 10
        if kind in (0, 1):
            return "GET", "/healthz", None
        if kind in (2, 3, 4):
            return "GET", f"/v4.0/orders/{self.order_ids[number % len(self.order_ids)]}", None
        if kind in (5, 6):
            return "GET", "/v4.0/orders?top=10", None
        if kind in (7, 8):
            return "POST", "/v4.0/quotes", json.dumps(QUOTE).encode()
        body = {**ORDER, "merchantReference": f"soak-{number}"}
        return "POST", "/v4.0/orders", json.dumps(body).encode()

    def next_number(self) -> int:
        with self.lock:
            self.counter += 1
            return self.counter

    def run(self, clients: int, seconds: float, rate: float | None = None) -> float:
        """Requests per second answered; paced at ``rate`` overall when given."""
        began = time.monotonic()
        stop = began + seconds
        answered = [0] * clients

        def client(index: int) -> None:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            sent = 0
            while True:
                if rate is not None:
                    due = began + (sent * clients + index) / rate
                    if due >= stop:
                        break
                    time.sleep(max(0.0, due - time.monotonic()))
                elif time.monotonic() >= stop:
                    break
                sent += 1
                method, path, body = self.request(self.next_number())
                started = time.perf_counter()
                try:
                    connection.request(method, path, body=body, headers=HEADERS)
                    response = connection.getresponse()
                    response.read()
                except (OSError, http.client.HTTPException) as exc:
                    connection.close()
                    connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                    with self.lock:
                        self.failures.append(f"{method} {path}: {exc!r}")
                    continue
                elapsed = time.perf_counter() - started
                with self.lock:
                    self.statuses[response.status] += 1
                    self.latencies.append(elapsed)
                    if response.status >= 500:
                        self.failures.append(f"{method} {path}: {response.status}")
                answered[index] += 1
            connection.close()

        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return sum(answered) / (time.monotonic() - began)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--probe-seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--max-growth-mb", type=float, default=20)
    options = parser.parse_args()
    database_url, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not database_url.startswith("postgres") or not redis_url:
        sys.exit("Set DATABASE_URL (PostgreSQL) and REDIS_URL: the topology needs both.")

    soak_url, soak_name, admin_url = scratch_database(database_url, "soak")
    recreate(admin_url, soak_name)
    scratch = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    proxy_port, web_port = free_port(), free_port()
    env_file = scratch / "soak.env"
    environment_file(
        env_file,
        {
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "METRICS_TOKEN": secrets.token_urlsafe(32),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "DATABASE_URL": soak_url,
            "REDIS_URL": redis_url,
            "NGINX_PORT": str(proxy_port),
            "WEB_BIND": f"127.0.0.1:{web_port}",
            "WEB_CONCURRENCY": str(options.web_workers),
            "VAR_DIR": str(scratch / "var"),
            "MEDIA_ROOT": str(scratch / "media"),
            "API_RATE_LIMIT": "10000000/min",
            "LOG_LEVEL": "WARNING",
            "GUNICORN_LOG_LEVEL": "warning",
        },
    )
    log = (scratch / "topology.log").open("wb")
    topology = None
    try:
        subprocess.run(
            [str(ROOT / "deploy" / "release.sh"), str(env_file)],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        honcho_run(env_file, "python", "manage.py", "load_catalogue")
        honcho_run(
            env_file, "python", "manage.py", "create_merchant", "--name", "Soak Merchant",
            "--sandbox-api-key", MERCHANT_KEY,
        )  # fmt: skip
        topology = subprocess.Popen(
            [str(ROOT / "deploy" / "start.sh"), str(env_file)],
            cwd=ROOT,
            env={**os.environ, "VENV": str(Path(sys.executable).parent.parent)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_until_up(proxy_port, 90, HEADERS, "the topology did not become healthy")
        order_ids = create_orders(proxy_port, 20)

        probe = Load(proxy_port, order_ids)
        capacity = probe.run(options.clients, options.probe_seconds)
        print(
            f"capacity: {capacity:.1f} req/s ({options.clients} clients, "
            f"{options.probe_seconds:.0f} s; p50 {percentile(probe.latencies, 0.5) * 1000:.0f} ms, "
            f"p99 {percentile(probe.latencies, 0.99) * 1000:.0f} ms; {dict(probe.statuses)})"
        )
        time.sleep(2)
        load_before = os.getloadavg()[0]
        before = process_memory(topology.pid)
        messages = [broker_messages(redis_url)]
        middle: dict[int, tuple[str, int]] = {}

        def read_halfway() -> None:
            middle.update(process_memory(topology.pid))
            messages.append(broker_messages(redis_url))

        halfway = threading.Timer(options.seconds / 2, read_halfway)
        halfway.start()
        soak = Load(proxy_port, order_ids)
        achieved = soak.run(options.clients * 2, options.seconds, rate=capacity)
        halfway.join()
        after = process_memory(topology.pid)
        messages.append(broker_messages(redis_url))
        print(
            f"soak: {options.seconds:.0f} s paced at {capacity:.1f} req/s: answered "
            f"{achieved:.1f} req/s, {sum(soak.statuses.values())} requests, statuses "
            f"{dict(sorted(soak.statuses.items()))}, failures {len(soak.failures)}; "
            f"p50 {percentile(soak.latencies, 0.5) * 1000:.0f} ms, "
            f"p99 {percentile(soak.latencies, 0.99) * 1000:.0f} ms, "
            f"mean {statistics.fmean(soak.latencies) * 1000:.0f} ms; load average "
            f"{load_before:.1f} -> {os.getloadavg()[0]:.1f}"
        )
        print(
            f"{'process':<18} {'pid':>7} {'RSS start':>10} {'halfway':>10} {'end':>10} "
            f"{'1st half':>8} {'2nd half':>8}"
        )
        growth = 0.0
        for pid, (name, rss) in sorted(before.items(), key=lambda item: item[1][0]):
            half = middle.get(pid, (name, 0))[1]
            end = after.get(pid, (name, 0))[1]
            if name == "gunicorn":
                growth = max(growth, (end - rss) / 1024)
            print(
                f"{name:<18} {pid:>7} {rss / 1024:7.1f} MB {half / 1024:7.1f} MB "
                f"{end / 1024:7.1f} MB {(half - rss) / 1024:+8.1f} {(end - half) / 1024:+8.1f}"
            )
        print(
            "task messages held by the workers (running, or waiting for a countdown) / queued: "
            + ", ".join(f"{held:,} / {queued:,}" for held, queued in messages)
            + " (start, halfway, end)"
        )
        restarted = sorted(set(after) - set(before))
        if restarted:
            print(f"processes started during the soak: {restarted}")
        five_xx = sum(count for status, count in soak.statuses.items() if status >= 500)
        if soak.failures:
            print("first failures:", soak.failures[:5])
        if five_xx or soak.failures or growth > options.max_growth_mb:
            sys.exit(
                f"FAILED: {five_xx} 5xx, {len(soak.failures)} failures, growth {growth:.1f} MB"
            )
        print(f"OK: 0 5xx, largest gunicorn worker growth {growth:+.1f} MB")
    finally:
        if topology is not None:
            os.killpg(topology.pid, signal.SIGINT)
            try:
                topology.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(topology.pid, signal.SIGKILL)
        recreate(admin_url, soak_name, drop_only=True)
        print(f"topology log: {scratch / 'topology.log'}")


def create_orders(port: int, count: int) -> list[str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    ids = []
    for number in range(count):
        body = json.dumps({**ORDER, "merchantReference": f"soak-setup-{number}"}).encode()
        connection.request("POST", "/v4.0/orders", body=body, headers=HEADERS)
        response = connection.getresponse()
        answer = json.loads(response.read())
        if response.status != 200:
            raise SystemExit(f"creating an order failed: {response.status} {answer}")
        ids.append(answer["order"]["id"])
    return ids


if __name__ == "__main__":
    main()
