"""The part of ``bench/bench_api.py`` that runs on the code measured: a fresh interpreter whose
working folder and ``PYTHONPATH`` are the tree served (this one, or the ``--before`` ref's
temporary worktree) and whose environment configures it (settings, database, broker).

It prepares the database through what every version of the service has, management commands
and the public API, so the same steps prepare the code before and after a change of its
insides: ``migrate``, ``load_catalogue``, ``create_merchant``, then ``--orders`` orders posted
to ``POST /v4.0/orders`` (Django's test client, in this process). Then the tables are vacuumed
and analysed as a deployment's autovacuum keeps them (this machine's PostgreSQL runs with
autovacuum off), and each path's queries of one request are counted in-process, after one
warm-up request. Prints one JSON line: the Sandbox key, the order ids, the counts and the
folder the service's code was imported from.

    python bench/api_tree.py --orders 200   (run by bench_api.py, not by hand)

Nothing here imports Django or the service at module level: ``bench_api.py`` reads the bodies
and the path names from this module.
"""

import argparse
import copy
import io
import json
import os
import re
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HEALTHZ = "GET /healthz"
CREATE = "create (2 items)"
GET = "get"
LIST = "list of 100"
QUOTE_PATH = "quote (2 items)"
PATHS = (HEALTHZ, CREATE, GET, LIST, QUOTE_PATH)

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
        {
            "sku": "GLOBAL-FAP-10X10",
            "copies": 1,
            "assets": [{"printArea": "default", "url": "https://images.example.com/bench.jpg"}],
        },
        {
            "sku": "GLOBAL-CAN-10X10",
            "copies": 2,
            "attributes": {"wrap": "ImageWrap"},
            "assets": [{"printArea": "default", "url": "https://images.example.com/can.jpg"}],
        },
    ],
}
QUOTE: dict[str, Any] = {
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


def order_body(key: str) -> str:
    """An order of ``ORDER``'s two items under its own idempotency key and reference, so that
    each is a real create (a repeated key would be answered from the first order)."""
    body = copy.deepcopy(ORDER)
    body["idempotencyKey"] = body["merchantReference"] = key
    return json.dumps(body)


def prepared(orders: int) -> tuple[str, list[str]]:
    """Schema, catalogue, a merchant and its orders; returns (Sandbox key, order ids)."""
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    call_command("migrate", verbosity=0)
    call_command("load_catalogue", verbosity=0)
    printed = io.StringIO()
    call_command("create_merchant", name="Bench API", stdout=printed)
    found = re.search(r"^SANDBOX_API_KEY=(\S+)$", printed.getvalue(), flags=re.MULTILINE)
    assert found, printed.getvalue()
    key = found.group(1)
    client = Client(headers={"X-API-Key": key})
    run = secrets.token_hex(4)
    ids = []
    for number in range(orders):
        response = client.post(
            "/v4.0/orders", order_body(f"bench-{run}-{number}"), content_type="application/json"
        )
        assert response.status_code == 200, response.content
        ids.append(response.json()["order"]["id"])
    postgres = os.environ.get("DATABASE_URL", "").startswith("postgres")  # else SQLite
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE" if postgres else "ANALYZE")
    return key, ids


def queries_per_request(key: str, ids: list[str]) -> dict[str, int]:
    """Queries of one request per path, in this process (after one warm-up request each)."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(headers={"X-API-Key": key})
    creates = iter(range(10**6))
    sends: dict[str, Callable[[], Any]] = {
        HEALTHZ: lambda: client.get("/healthz"),
        CREATE: lambda: client.post(
            "/v4.0/orders",
            order_body(f"bench-count-{secrets.token_hex(4)}-{next(creates)}"),
            content_type="application/json",
        ),
        GET: lambda: client.get(f"/v4.0/orders/{ids[0]}"),
        LIST: lambda: client.get("/v4.0/orders?top=100"),
        QUOTE_PATH: lambda: client.post("/v4.0/quotes", QUOTE, content_type="application/json"),
    }
    counts = {}
    for name, send in sends.items():
        assert send().status_code == 200, name
        with CaptureQueriesContext(connection) as captured:
            assert send().status_code == 200, name
        counts[name] = len(captured.captured_queries)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--orders", type=int, default=200)
    args = parser.parse_args()
    import django

    django.setup()
    import orders

    key, ids = prepared(args.orders)
    counts = queries_per_request(key, ids)
    code = str(Path(next(iter(orders.__path__))).resolve().parent)
    print(json.dumps({"key": key, "ids": ids, "counts": counts, "code": code}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
