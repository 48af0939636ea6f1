"""Callback delivery throughput against a local keep-alive receiver.

Runs, in one process and against the same receiver, N deliveries through
``webhooks.delivery.deliver`` (Standard Webhooks signing per attempt, the guarded
session with its address filter and deadline-bounded body reading) and N posts of the same
bodies through a bare keep-alive ``requests.Session``, and prints deliveries per second for
both and their ratio. The receiver is a threaded HTTP/1.1 server in a separate process, so it
does not compete with the sender for the GIL.

    .venv/bin/python bench/bench_callbacks.py [--count N] [--rounds R]
"""

import argparse
import datetime as dt
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
os.environ["ALLOW_PRIVATE_URLS"] = "1"  # the receiver is on loopback

import django

django.setup()

import requests  # noqa: E402

from merchants.keys import generate_signing_secret  # noqa: E402
from orders.events import stage_changed_type  # noqa: E402
from webhooks.delivery import Outcome, deliver, signed_headers  # noqa: E402
from webhooks.envelope import CONTENT_TYPE, envelope_bytes  # noqa: E402


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    # Headers and body go out in two writes; with Nagle on, the second waits for the client's
    # delayed ACK (~40 ms) and both loops would measure that instead of the sender.
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(port_queue: "multiprocessing.Queue[int]") -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    server.daemon_threads = True
    port_queue.put(server.server_address[1])
    server.serve_forever()


def sample_order(n: int) -> dict:
    return {
        "id": f"ord_{1000 + n}",
        "status": {"stage": "Complete", "issues": []},
        "recipient": {"name": "Zoë Smith", "address": {"line1": "1 High Street"}},
        "items": [
            {"id": f"ori_{i}", "sku": "GLOBAL-CAN-10x10", "copies": 1, "assets": []}
            for i in range(8)
        ],
        "metadata": {"note": "x" * 500},
    }


def rate(count: int, send: Callable[[int], None]) -> tuple[float, float]:
    """Sends per wall-clock second, and the sender's CPU microseconds per send.

    The CPU figure is steadier than the rate on a busy machine: it counts only this process.
    """
    started, cpu_started = time.perf_counter(), time.process_time()
    for i in range(count):
        send(i)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return count / wall, cpu / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500, help="deliveries per round and loop")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()

    ports: multiprocessing.Queue[int] = multiprocessing.Queue()
    receiver = multiprocessing.Process(target=serve, args=(ports,), daemon=True)
    receiver.start()
    url = f"http://127.0.0.1:{ports.get(timeout=10)}/hook"

    secret = generate_signing_secret()
    now = dt.datetime.now(dt.UTC)
    bodies = [
        envelope_bytes(
            event_id=500 + n,
            event_type=stage_changed_type("Complete"),
            source="https://api.print.test/v4.0/Orders/",
            subject=f"ord_{1000 + n}",
            data={"order": sample_order(n)},
            sequence=1,
            time=now,
        )
        for n in range(100)
    ]
    ids = [f"evt_{500 + n}" for n in range(100)]

    def ours(i: int) -> None:
        body = bodies[i % 100]
        headers = signed_headers(msg_id=ids[i % 100], secret=secret, body=body)
        result = deliver(url, body, headers, 10.0)
        if result.outcome is not Outcome.DELIVERED:
            raise SystemExit(f"delivery failed: {result}")

    def bare_loop(session: requests.Session) -> Callable[[int], None]:
        def post(i: int) -> None:
            response = session.post(
                url, data=bodies[i % 100], headers={"Content-Type": CONTENT_TYPE}, timeout=10.0
            )
            if response.status_code != 200:
                raise SystemExit(f"bare post failed: {response.status_code}")

        return post

    bare = bare_loop(requests.Session())
    # A default Session consults proxy variables and .netrc on every request; the guarded one
    # does not (trust_env off), so this line shows the cost of our layers alone.
    quiet_session = requests.Session()
    quiet_session.trust_env = False
    bare_quiet = bare_loop(quiet_session)

    loops = {"ours": ours, "bare": bare, "quiet": bare_quiet}
    for send in loops.values():
        rate(200, send)
    rates: dict[str, list[float]] = {name: [] for name in loops}
    cpus: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(args.rounds):
        for name, send in loops.items():
            per_second, cpu_us = rate(args.count, send)
            rates[name].append(per_second)
            cpus[name].append(cpu_us)
    receiver.terminate()

    median = {name: statistics.median(values) for name, values in rates.items()}
    cpu = {name: statistics.median(values) for name, values in cpus.items()}
    labels = {
        "ours": "deliver() (signed, guarded session)",
        "bare": "bare keep-alive requests.Session",
        "quiet": "bare Session, trust_env=False",
    }
    print(f"body {len(bodies[0])} bytes; {args.count} sends x {args.rounds} rounds; medians")
    for name, label in labels.items():
        print(f"{label:38} {median[name]:7.0f} /s  {cpu[name]:6.0f} us CPU per send")
    for name in ("bare", "quiet"):
        print(
            f"ratio deliver / {name:5}: {median['ours'] / median[name]:.2f} (rate), "
            f"{cpu['ours'] / cpu[name]:.2f} (CPU per send)"
        )


if __name__ == "__main__":
    main()
