"""Quote throughput against ``GET /healthz`` on the same server, in one run.

Sets up a throwaway SQLite database under a temporary folder (or uses ``DATABASE_URL`` if set),
migrates it, loads the demo catalogue, creates a merchant, starts gunicorn (gthread workers) on
a free loopback port, and then drives each endpoint for ``--seconds`` with ``--clients``
keep-alive connections: first ``GET /healthz`` (database and broker check, no key), then
``POST /v4.0/quotes`` for a three-item basket (fine-art print, framed print, photobook) to GB
priced for every shipping method, then the same basket for one method. Prints requests per
second, median and 99th-percentile latency of each and the quote/healthz ratios.

    .venv/bin/python bench/bench_quotes.py [--seconds 10] [--clients 4] [--workers 2]
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import drive, free_port, report, start_gunicorn  # noqa: E402

BASKET = {
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
        {
            "sku": "BOOK-A4-L-HARD-M",
            "copies": 1,
            "assets": [{"printArea": "default", "pageCount": 60}, {"printArea": "spine"}],
        },
    ],
}


def prepare(env: dict[str, str]) -> str:
    """Migrate, load the catalogue and create a merchant; return its Sandbox key."""
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    from merchants.services import merchant_create

    call_command("migrate", verbosity=0)
    call_command("load_catalogue", verbosity=0)
    return merchant_create(name="Bench Merchant").sandbox_api_key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()

    var_dir = tempfile.mkdtemp(prefix="bench-quotes-")
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "VAR_DIR": var_dir,
        "API_RATE_LIMIT": "100000000/min",
        "LOG_LEVEL": "WARNING",
    }
    api_key = prepare(env)
    port = free_port()
    server = start_gunicorn(port, env, workers=args.workers, threads=args.threads)
    try:
        headers = {"X-API-Key": api_key, "Content-Type": "application/json"}
        all_methods = json.dumps(BASKET).encode()
        one_method = json.dumps({**BASKET, "shippingMethod": "standard"}).encode()
        for body in (all_methods, one_method):  # warm every worker's caches and connections
            drive(port, ("POST", "/v4.0/quotes", body, headers), 1.0, args.clients)
        database = os.environ.get("DATABASE_URL", "").split("@")[-1] or f"SQLite in {var_dir}"
        print(
            f"gunicorn {args.workers} workers x {args.threads} threads, {args.clients} clients, "
            f"{args.seconds:g} s each, database {database}"
        )
        health = drive(port, ("GET", "/healthz", None, {}), args.seconds, args.clients)
        quotes_all = drive(
            port, ("POST", "/v4.0/quotes", all_methods, headers), args.seconds, args.clients
        )
        quotes_one = drive(
            port, ("POST", "/v4.0/quotes", one_method, headers), args.seconds, args.clients
        )
        report("GET /healthz", *health)
        report("POST /v4.0/quotes (all)", *quotes_all)
        report("POST /v4.0/quotes (Standard)", *quotes_one)
        print(f"ratio quotes(all)/healthz      {quotes_all[0] / health[0]:.3f}")
        print(f"ratio quotes(Standard)/healthz {quotes_one[0] / health[0]:.3f}")
    finally:
        server.terminate()
        server.wait(timeout=10)
    shutil.rmtree(var_dir, ignore_errors=True)  # the SQLite database, the broker's folders


if __name__ == "__main__":
    main()
