"""Order endpoints with 1,000,000 orders of one merchant in PostgreSQL, against ``GET /healthz``.

Creates (once; later runs reuse it) the database ``bench_orders`` on the local PostgreSQL (or
``BENCH_DATABASE_URL``), migrates it, loads the demo catalogue, a merchant, and 1,000,000 orders
(each with an item and an asset) by set-based SQL. Then starts gunicorn on a free port and drives
each endpoint for ``--seconds`` with ``--clients`` keep-alive connections, printing requests per
second and the ratio to ``GET /healthz`` measured in the same run:

- create-order throughput (``POST /v4.0/orders``),
- get-order throughput (``GET /v4.0/orders/{id}`` over 1,000 different orders),
- list page 1 (``GET /v4.0/orders``),
- the page reached by following ``nextUrl`` 10,000 times (its cursor URL, computed directly),
  and, for comparison, the same page by ``skip`` alone.

    .venv/bin/python bench/bench_orders.py [--seconds 10] [--clients 4] [--orders 1000000]
"""

import argparse
import json
import os
import random
import sys
import time
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.harness import Request, drive, free_port, report, start_gunicorn

API_KEY = "sk_sandbox_bench_orders_fixed_key_0001"
PAGES_DEEP = 10_000
PAGE_SIZE = 10

ORDER = {
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
        {
            "sku": "GLOBAL-FAP-10X10",
            "copies": 1,
            "assets": [{"printArea": "default", "url": "https://images.example.com/bench.jpg"}],
        }
    ],
}


def ensure_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def prepare(total: int) -> tuple[int, list[str], str]:
    """Schema, catalogue, merchant and orders; returns (environment id, sample ids, deep cursor)."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from merchants.keys import api_key_digest
    from merchants.models import ApiKey
    from merchants.services import merchant_create

    call_command("migrate", verbosity=0)
    call_command("load_catalogue", verbosity=0)
    key = (
        ApiKey.objects.filter(digest=api_key_digest(API_KEY)).select_related("environment").first()
    )
    if key is None:
        merchant_create(name="Bench Orders", sandbox_api_key=API_KEY)
        key = ApiKey.objects.select_related("environment").get(digest=api_key_digest(API_KEY))
    environment_id = key.environment_id
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM orders_order WHERE environment_id = %s", [environment_id]
        )
        have = cursor.fetchone()[0]
        if have < total:
            started = time.monotonic()
            load_orders(cursor, environment_id, total - have)
            print(f"loaded {total - have} orders in {time.monotonic() - started:.1f} s")
        cursor.execute(
            "SELECT id FROM orders_order WHERE environment_id = %s"
            " ORDER BY id DESC OFFSET %s LIMIT 1",
            [environment_id, PAGES_DEEP * PAGE_SIZE - 1],
        )
        deep_cursor = f"ord_{cursor.fetchone()[0]}"
        cursor.execute(
            "SELECT id FROM orders_order WHERE environment_id = %s ORDER BY random() LIMIT 1000",
            [environment_id],
        )
        sample = [f"ord_{row[0]}" for row in cursor.fetchall()]
    return environment_id, sample, deep_cursor


def load_orders(cursor: object, environment_id: int, count: int) -> None:
    """Set-based inserts: orders, one item and one asset each, ids increasing with time."""
    ms_base = int(time.time() * 1000) - 1_577_836_800_000 - 10 * count
    params = {"env": environment_id, "n": count, "base": ms_base}
    statements = [
        """
        INSERT INTO orders_order (
            id, environment_id, merchant_reference, request_fingerprint, shipping_method,
            callback_url, recipient_name, recipient_email, recipient_phone, address_line1,
            address_line2, address_postal_or_zip_code, address_country_code, address_town_or_city,
            address_state_or_county, metadata, branding, packing_slip_url, packing_slip_status,
            tag, us_sales_tax_already_collected, currency, stage, download_assets,
            allocate_production_location, print_ready_assets_prepared, in_production, shipping,
            pipeline_step, created, last_updated, callback_sequence
        )
        SELECT ((%(base)s + g * 10)::bigint << 20), %(env)s, 'REF-' || g, '', 'Standard',
            '', 'Recipient ' || g, '', '', '1 Load Street', '', 'EC1A 1BB', 'GB', 'London', '',
            '{}'::jsonb, '{}'::jsonb, '', '', '', false, 'GBP', 'Complete', 'Complete',
            'Complete', 'Complete', 'Complete', 'Complete', 'Done',
            to_timestamp((1577836800000 + %(base)s + g * 10) / 1000.0),
            to_timestamp((1577836800000 + %(base)s + g * 10) / 1000.0), 0
        FROM generate_series(1, %(n)s) AS g
        """,
        """
        INSERT INTO orders_orderitem (
            id, order_id, position, merchant_reference, sku, copies, sizing, attributes, status,
            availability, thumbnail, recipient_cost_currency
        )
        SELECT o.id, o.id, 0, '', 'GLOBAL-FAP-10X10', 1, 'fillPrintArea', '{}'::jsonb, 'Ok',
            'Available', '', ''
        FROM orders_order o
        WHERE o.environment_id = %(env)s
          AND NOT EXISTS (SELECT 1 FROM orders_orderitem i WHERE i.order_id = o.id)
        """,
        """
        INSERT INTO orders_asset (
            id, item_id, position, print_area, url, md5_hash, status, download_attempts,
            last_error, source_file, print_file, thumbnail
        )
        SELECT i.id, i.id, 0, 'default', 'https://images.example.com/' || i.id || '.jpg', '',
            'Complete', 1, '', '', '', ''
        FROM orders_orderitem i
        WHERE NOT EXISTS (SELECT 1 FROM orders_asset a WHERE a.item_id = i.id)
        """,
        "ANALYZE orders_order",
        "ANALYZE orders_orderitem",
        "ANALYZE orders_asset",
    ]
    for statement in statements:
        cursor.execute(statement, params)  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--orders", type=int, default=1_000_000)
    args = parser.parse_args()

    database_url = os.environ.get(
        "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_orders"
    )
    ensure_database(database_url)
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": database_url,
        "REDIS_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9"),
        "API_RATE_LIMIT": "100000000/min",
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    _, sample, deep_cursor = prepare(args.orders)

    port = free_port()
    server = start_gunicorn(port, env, workers=args.workers, threads=args.threads)
    headers = {"X-API-Key": API_KEY, "Content-Type": "application/json"}
    create_body = json.dumps(ORDER).encode()
    rng = random.Random(7)

    def get_order(_: int) -> Request:
        return ("GET", f"/v4.0/orders/{rng.choice(sample)}", None, headers)

    deep = f"/v4.0/orders?top={PAGE_SIZE}&skip={PAGES_DEEP * PAGE_SIZE}&cursor={deep_cursor}"
    deep_skip = f"/v4.0/orders?top={PAGE_SIZE}&skip={PAGES_DEEP * PAGE_SIZE}"
    cases: list[tuple[str, Request | object]] = [
        ("GET /healthz", ("GET", "/healthz", None, {})),
        ("POST /v4.0/orders (create)", ("POST", "/v4.0/orders", create_body, headers)),
        ("GET /v4.0/orders/{id}", get_order),
        ("GET /v4.0/orders (page 1)", ("GET", "/v4.0/orders", None, headers)),
        (f"GET nextUrl x{PAGES_DEEP} (cursor)", ("GET", deep, None, headers)),
        (f"GET skip={PAGES_DEEP * PAGE_SIZE} (no cursor)", ("GET", deep_skip, None, headers)),
    ]
    try:
        for _, request in cases:  # warm-up
            drive(port, request, 1.0, args.clients)  # type: ignore[arg-type]
        print(
            f"{args.orders} orders, gunicorn {args.workers}x{args.threads}, "
            f"{args.clients} clients, {args.seconds:g} s each"
        )
        results = []
        for name, request in cases:
            rate, latencies = drive(port, request, args.seconds, args.clients)  # type: ignore[arg-type]
            report(name, rate, latencies)
            results.append((name, rate))
        health = results[0][1]
        for name, rate in results[1:]:
            print(f"ratio {name:<34} / healthz {rate / health:6.3f}")
    finally:
        server.terminate()
        server.wait(timeout=10)
        import redis

        redis.Redis.from_url(env["REDIS_URL"]).flushdb()


if __name__ == "__main__":
    main()
