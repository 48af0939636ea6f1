"""The API's hot paths against a minimal Django project, on the same gunicorn and database, in
one run.

The floor is ``bench/minimal_site.py`` (a copy of the shared ``minimal_site.py``; ``--minimal-site``
serves another): no apps, no middleware, one view that runs ``SELECT 1`` and answers JSON, with
persistent connections. Both it and the service are served by the same gunicorn command (the
project's gunicorn.conf.py, ``--workers`` sync workers) against the same database.

Two configurations, one after the other in the same sitting: the embedded default (SQLite in a
temporary folder, the filesystem broker and file cache) and, given ``--database-url`` (a
PostgreSQL database whose name starts with ``perf_``, created if missing) and ``--redis-url``,
PostgreSQL + Redis. For each: a fresh process migrates, loads the demo catalogue, a merchant and
``--orders`` orders through the service, runs ``VACUUM ANALYZE`` (``ANALYZE`` on SQLite) and
counts the queries of one request per path; then the floor, ``GET /healthz``,
``POST /v4.0/orders`` (2 items), ``GET /v4.0/orders/{id}``, ``GET /v4.0/orders?top=100`` and
``POST /v4.0/quotes`` (2 items, every method) are driven for ``--seconds`` each with
``--clients`` keep-alive connections and no rate limit in the way, in ``--rounds`` interleaved
rounds. Prints req/s, p50 and p99, queries per request and each path's ratio to the floor's
rate (over all rounds, and the lowest and highest round), then the README's table with the
goals.

    .venv/bin/python bench/bench_api.py [--database-url postgres://.../perf_api
        --redis-url redis://127.0.0.1:6379/14] [--only sqlite|postgres] [--seconds 5]
        [--clients 8] [--workers 2] [--rounds 5] [--paths create get ...]
"""

import argparse
import copy
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import Request, drive, free_port, report, start_gunicorn  # noqa: E402

FLOOR = "minimal view"

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

    from common.db import tables_tidied
    from merchants.selectors import api_key_authenticate
    from merchants.services import merchant_create
    from orders.creation import order_create
    from orders.inputs import OrderCreateInput

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
    # The steady state a deployment's autovacuum keeps: the one-row version tables that every
    # request reads take an update per catalogue row loaded, and this machine's PostgreSQL runs
    # with autovacuum off, which left them (and the versions read) bloated for the whole run.
    tables_tidied()
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


def sitting(
    args: argparse.Namespace, database_url: str, redis_url: str
) -> dict[str, dict[str, Any]]:
    """One configuration: the floor and the service on the same database, driven in the same
    interleaved rounds. Returns each path's figures by name."""
    var_dir = tempfile.mkdtemp(prefix="bench-api-")
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "VAR_DIR": var_dir,
        "MINIMAL_SITE_DIR": var_dir,  # the floor's SQLite file beside the service's
        "API_RATE_LIMIT": "100000000/min",
        "LOG_LEVEL": "WARNING",
    }
    for name in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)
    if database_url:
        ensure_postgres_database(database_url)
        env["DATABASE_URL"] = database_url
    if redis_url:
        env["REDIS_URL"] = redis_url
    script = (
        f"import os, sys; os.environ.update({env!r}); sys.path.insert(0, {str(ROOT)!r}); "
        f"from bench.bench_api import prepare_and_count; prepare_and_count({args.orders})"
    )
    # A fresh interpreter per configuration: Django's settings are read once per process.
    prepared = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True, cwd=ROOT
    )
    facts = json.loads(prepared.stdout.strip().splitlines()[-1])
    key, ids, counts = facts["key"], facts["ids"], facts["counts"]
    headers = {"X-API-Key": key, "Content-Type": "application/json"}
    order_body = json.dumps(ORDER).encode()
    rng = random.Random(7)

    def get_order(_: int) -> Request:
        return ("GET", f"/v4.0/orders/{rng.choice(ids)}", None, headers)

    cases: list[tuple[str, Request | Any]] = [
        (FLOOR, ("GET", "/floor", None, {})),
        ("GET /healthz", ("GET", "/healthz", None, {})),
        ("create (2 items)", ("POST", "/v4.0/orders", order_body, headers)),
        ("get", get_order),
        ("list of 100", ("GET", "/v4.0/orders?top=100", None, headers)),
        ("quote (2 items)", ("POST", "/v4.0/quotes", json.dumps(QUOTE).encode(), headers)),
    ]
    if args.paths:  # the floor, and the paths asked for (names start with the words given)
        cases = [
            (name, request)
            for name, request in cases
            if name == FLOOR or any(name.startswith(word) for word in args.paths)
        ]
    counts[FLOOR] = 1
    env = {**env, **({"DATABASE_URL": database_url} if database_url else {})}
    floor_port, port = free_port(), free_port()
    floor = start_gunicorn(
        floor_port,
        env | {"DJANGO_SETTINGS_MODULE": "minimal_site"},
        workers=args.workers,
        threads=1,
        worker_class="sync",
        application="minimal_site:application",
        pythonpath=str(Path(args.minimal_site).resolve().parent),
        health_path="/floor",
    )
    server = start_gunicorn(port, env, workers=args.workers, threads=1, worker_class="sync")
    ports = {name: floor_port if name == FLOOR else port for name, _ in cases}
    figures: dict[str, dict[str, Any]] = {}
    try:
        for name, request in cases:  # warm every worker's snapshot and connections
            drive(ports[name], request, 1.0, args.clients)
        database = database_url.split("@")[-1] or "SQLite"
        broker = redis_url.split("@")[-1] or "filesystem broker"
        load = os.getloadavg()
        print(
            f"\n{database} + {broker}: gunicorn {args.workers} sync workers, {args.clients} "
            f"clients, {args.seconds:g} s a path in {args.rounds} rounds, {args.orders} orders; "
            f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
        )
        # Every path is driven in each of ``--rounds`` rounds (seconds / rounds each), so a
        # change in the machine's load falls on all of them alike rather than on whichever
        # path ran at the time; each ratio is its rate over the floor's in the same round.
        latencies: dict[str, list[float]] = {name: [] for name, _ in cases}
        rates: dict[str, list[float]] = {name: [] for name, _ in cases}
        for _ in range(args.rounds):
            for name, request in cases:
                rate, measured = drive(
                    ports[name], request, args.seconds / args.rounds, args.clients
                )
                rates[name].append(rate)
                latencies[name].extend(measured)
        floor_rates = rates[FLOOR]
        for name, _ in cases:
            ratios = sorted(r / b for r, b in zip(rates[name], floor_rates, strict=True))
            ordered = sorted(latencies[name])
            figures[name] = {
                "rate": sum(rates[name]) / args.rounds,
                "ratio": sum(rates[name]) / sum(floor_rates),
                "queries": counts[name],
                "p50": statistics.median(ordered) * 1000,
                "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
            }
            report(
                name,
                figures[name]["rate"],
                latencies[name],
                f"  {counts[name]:2d} queries  ratio {figures[name]['ratio']:.3f}"
                f" (rounds {ratios[0]:.3f} to {ratios[-1]:.3f})",
            )
        load = os.getloadavg()
        print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    finally:
        for process in (server, floor):
            process.terminate()
            process.wait(timeout=10)
        if redis_url:
            import redis

            redis.Redis.from_url(redis_url).flushdb()
        shutil.rmtree(var_dir, ignore_errors=True)  # the SQLite databases, the broker's folders
    return figures


def prepare_and_count(orders: int) -> None:
    """In a fresh process configured by the environment: prepare the database, count each
    path's queries, and print the key, the order ids and the counts as one JSON line."""
    key, ids = prepare(orders)
    headers = {"X-API-Key": key, "Content-Type": "application/json"}
    cases: list[tuple[str, Request]] = [
        ("GET /healthz", ("GET", "/healthz", None, {})),
        ("create (2 items)", ("POST", "/v4.0/orders", json.dumps(ORDER).encode(), headers)),
        ("get", ("GET", f"/v4.0/orders/{ids[0]}", None, headers)),
        ("list of 100", ("GET", "/v4.0/orders?top=100", None, headers)),
        ("quote (2 items)", ("POST", "/v4.0/quotes", json.dumps(QUOTE).encode(), headers)),
    ]
    counts = queries_per_request(cases)
    print(json.dumps({"key": key, "ids": ids, "counts": counts}))


GOALS = {
    "GET /healthz": 0.80,
    "create (2 items)": 0.15,
    "get": 0.40,
    "list of 100": 0.08,
    "quote (2 items)": 0.30,
}


def table(sittings: dict[str, dict[str, dict[str, Any]]]) -> str:
    """The README's table: each path's ratio to the floor (queries, p50/p99 in ms) per
    configuration, the floor's own rate on its first row, and the goal."""
    names = list(sittings)
    lines = [
        "| path (ratio to the minimal view) | " + " | ".join(names) + " | goal (both) |",
        "|---|" + "---|" * len(names) + "---|",
    ]
    first = next(iter(sittings.values()))
    for path in first:
        cells = []
        for name in names:
            f = sittings[name][path]
            if path == FLOOR:
                cells.append(f"{f['rate']:.0f} req/s (p50 {f['p50']:.1f} / p99 {f['p99']:.1f} ms)")
            else:
                met = "" if f["ratio"] >= GOALS[path] else " (below goal)"
                cells.append(
                    f"{f['ratio']:.3f}{met}: {f['queries']} "
                    f"{'query' if f['queries'] == 1 else 'queries'}, "
                    f"p50 {f['p50']:.1f} / p99 {f['p99']:.1f} ms"
                )
        goal = f">= {GOALS[path]:.2f}" if path in GOALS else "-"
        lines.append(f"| {path} | " + " | ".join(cells) + f" | {goal} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--database-url", default="", help="PostgreSQL (a perf_ database)")
    parser.add_argument("--redis-url", default="")
    parser.add_argument(
        "--only", choices=["sqlite", "postgres"], default="", help="one configuration only"
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--orders", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of all paths")
    parser.add_argument(
        "--paths",
        nargs="*",
        default=[],
        help="only these paths beside the floor, by the start of their names (get, list, ...)",
    )
    parser.add_argument(
        "--minimal-site",
        default=str(ROOT / "bench" / "minimal_site.py"),
        help="the floor's module (a copy of the shared minimal_site.py)",
    )
    args = parser.parse_args()
    if args.only != "sqlite" and not (args.database_url and args.redis_url):
        if args.only == "postgres":
            raise SystemExit("--only postgres needs --database-url and --redis-url")
        args.only = "sqlite"
    digest = hashlib.sha256(Path(args.minimal_site).read_bytes()).hexdigest()[:16]
    print(f"floor: {args.minimal_site} (sha256 {digest}...)")
    sittings = {}
    if args.only in ("", "sqlite"):
        sittings["SQLite + filesystem broker"] = sitting(args, "", "")
    if args.only in ("", "postgres"):
        sittings["PostgreSQL + Redis"] = sitting(args, args.database_url, args.redis_url)
    print()
    print(table(sittings))


if __name__ == "__main__":
    main()
