"""The API's hot paths against a bare Django view on the same gunicorn and database, in one run.

Prepares a database (``--database-url``, a PostgreSQL database whose name starts with
``perf_`` is created if missing; by default the embedded SQLite in a temporary folder, with the
filesystem broker and file cache, or Redis with ``--redis-url``): migrates it, loads the demo
catalogue, a merchant and ``--orders`` orders through the service, then ``ANALYZE``. Counts
the queries of one request per path in-process, starts gunicorn (sync workers, as on 2 CPUs
they beat threads) with ``bench.settings`` and drives each path for ``--seconds`` with
``--clients`` connections: the bare view (``SELECT 1`` -> JSON), ``GET /healthz``,
``POST /v4.0/orders`` (2 items), ``GET /v4.0/orders/{id}``, ``GET /v4.0/orders?top=100`` and
``POST /v4.0/quotes`` (2 items, every method), in ``--rounds`` interleaved rounds (each path
``--seconds`` in all). Prints req/s, p50 and p99, queries per request and each path's ratio to
the bare view (over all rounds, and the lowest and highest round).

    .venv/bin/python bench/bench_api.py [--database-url postgres://.../perf_api]
        [--redis-url redis://127.0.0.1:6379/14] [--seconds 5] [--clients 8] [--workers 2]
        [--rounds 5]
"""

import argparse
import copy
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import Request, drive, free_port, report, start_gunicorn  # noqa: E402

ITEM = {
    "sku": "GLOBAL-FAP-10X10",
    "copies": 1,
    "assets": [{"printArea": "default", "url": "https://images.example.com/bench.jpg"}],
}
ORDER: dict[str, Any] = {
    "shippingMethod": "Standard",
    "recipient": {
        "name": "Bench Recipient",
        "address": {
            "line1": "1 Load Street",
            "postalOrZipCode": "EC1A 1BB",
            "countryCode": "GB",
            "townOrCity": "London",
        },
    },
    "items": [
        ITEM,
        {
            "sku": "GLOBAL-CAN-10X10",
            "copies": 2,
            "attributes": {"wrap": "ImageWrap"},
            "assets": [{"printArea": "default", "url": "https://images.example.com/can.jpg"}],
        },
    ],
}
QUOTE = {
    "destinationCountryCode": "GB",
    "currencyCode": "GBP",
    "items": [
        {"sku": "GLOBAL-FAP-16X24", "copies": 2, "assets": [{"printArea": "default"}]},
        {
            "sku": "GLOBAL-CFPM-16X20",
            "copies": 1,
            "attributes": {"color": "natural"},
            "assets": [{"printArea": "default"}],
        },
    ],
}


def ensure_postgres_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name.startswith("perf_"):
        raise SystemExit("Use a PostgreSQL database whose name starts with perf_.")
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def prepare(orders: int) -> tuple[str, list[str]]:
    """Schema, catalogue, a merchant and its orders; returns (key, order ids)."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from merchants.selectors import api_key_authenticate
    from merchants.services import merchant_create
    from orders.api.serializers import OrderCreateInput
    from orders.creation import order_create

    call_command("migrate", verbosity=0)
    call_command("load_catalogue", verbosity=0)
    created = merchant_create(name="Bench API")

    api_key = api_key_authenticate(key=created.sandbox_api_key)
    assert api_key is not None
    ids = []
    for number in range(orders):
        body = copy.deepcopy(ORDER)
        body["merchantReference"] = f"bench-{number}"
        serializer = OrderCreateInput(data=body)
        serializer.is_valid(raise_exception=True)
        result = order_create(environment=api_key.environment, data=serializer.validated_data)
        ids.append(result.order.public_id)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return created.sandbox_api_key, ids


def queries_per_request(cases: list[tuple[str, Request]]) -> dict[str, int]:
    """Queries of one request per path, in this process (after one warm-up request each)."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    counts = {}

    def send(request: Request) -> int:
        method, path, body, headers = request
        extra: Any = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()}
        extra.pop("HTTP_CONTENT_TYPE", None)
        if method == "GET":
            return client.get(path, **extra).status_code
        return client.post(path, body, content_type="application/json", **extra).status_code

    for name, request in cases:
        assert send(request) == 200, name
        with CaptureQueriesContext(connection) as captured:
            assert send(request) == 200, name
        counts[name] = len(captured.captured_queries)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--database-url", default="")
    parser.add_argument("--redis-url", default="")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="above 1: gthread workers")
    parser.add_argument("--orders", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of all paths")
    args = parser.parse_args()

    var_dir = tempfile.mkdtemp(prefix="bench-api-")
    env = {
        "DJANGO_SETTINGS_MODULE": "bench.settings",
        "VAR_DIR": var_dir,
        "API_RATE_LIMIT": "100000000/min",
        "LOG_LEVEL": "WARNING",
    }
    if args.database_url:
        ensure_postgres_database(args.database_url)
        env["DATABASE_URL"] = args.database_url
    if args.redis_url:
        env["REDIS_URL"] = args.redis_url
    os.environ.update(env)
    key, ids = prepare(args.orders)
    headers = {"X-API-Key": key, "Content-Type": "application/json"}
    order_body = json.dumps(ORDER).encode()
    rng = random.Random(7)

    def get_order(_: int) -> Request:
        return ("GET", f"/v4.0/orders/{rng.choice(ids)}", None, headers)

    cases: list[tuple[str, Request | Any]] = [
        ("bare view (SELECT 1 -> JSON)", ("GET", "/bench/bare", None, {})),
        ("GET /healthz", ("GET", "/healthz", None, {})),
        ("POST /v4.0/orders (2 items)", ("POST", "/v4.0/orders", order_body, headers)),
        ("GET /v4.0/orders/{id}", get_order),
        ("GET /v4.0/orders?top=100", ("GET", "/v4.0/orders?top=100", None, headers)),
        (
            "POST /v4.0/quotes (2 items, all)",
            ("POST", "/v4.0/quotes", json.dumps(QUOTE).encode(), headers),
        ),
    ]
    counts = queries_per_request(
        [(name, case(0) if callable(case) else case) for name, case in cases]
    )
    port = free_port()
    worker_class = "sync" if args.threads == 1 else "gthread"
    server = start_gunicorn(
        port, env, workers=args.workers, threads=args.threads, worker_class=worker_class
    )
    try:
        for _, request in cases:  # warm every worker's snapshot and connections
            drive(port, request, 1.0, args.clients)
        database = args.database_url.split("@")[-1] or f"SQLite in {var_dir}"
        broker = args.redis_url.split("@")[-1] or "filesystem broker"
        load = os.getloadavg()
        print(
            f"gunicorn {args.workers} {worker_class} workers x {args.threads}, "
            f"{args.clients} clients, {args.seconds:g} s each in {args.rounds} rounds, "
            f"{database}, {broker}, "
            f"{args.orders} orders; load average "
            f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
        )
        # Every path is driven in each of ``--rounds`` rounds (seconds / rounds each), so a
        # change in the machine's load falls on all of them alike rather than on whichever
        # path ran at the time; each ratio is its rate over the bare view's in the same round.
        latencies: dict[str, list[float]] = {name: [] for name, _ in cases}
        rates: dict[str, list[float]] = {name: [] for name, _ in cases}
        for _ in range(args.rounds):
            for name, request in cases:
                rate, measured = drive(port, request, args.seconds / args.rounds, args.clients)
                rates[name].append(rate)
                latencies[name].extend(measured)
        bare_rates = rates[cases[0][0]]
        for name, _ in cases:
            ratios = sorted(r / b for r, b in zip(rates[name], bare_rates, strict=True))
            report(
                name,
                sum(rates[name]) / args.rounds,
                latencies[name],
                f"  {counts[name]:2d} queries  ratio {sum(rates[name]) / sum(bare_rates):.3f}"
                f" (rounds {ratios[0]:.3f} to {ratios[-1]:.3f})",
            )
        load = os.getloadavg()
        print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    finally:
        server.terminate()
        server.wait(timeout=10)
        if args.redis_url:
            import redis

            redis.Redis.from_url(args.redis_url).flushdb()
    shutil.rmtree(var_dir, ignore_errors=True)  # the SQLite database, the broker's folders


if __name__ == "__main__":
    main()
