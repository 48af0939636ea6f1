"""Each pipeline step of one order, in this process: CPU, wall time and queries per step.

Where ``bench_pipeline`` measures the whole pipeline through real workers, this one says which
step the time goes to. Run from the project root with PostgreSQL and Redis::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mydb REDIS_URL=redis://127.0.0.1:6379/6 \\
        .venv/bin/python bench/bench_steps.py [--orders 6] [--profile Download,Allocate]

In a scratch database ``<name>_steps`` (dropped at the end) with the demo catalogue, it creates
``--orders`` orders through the API, each one 8x10" photo print of the same 7.6 MB JPEG as
``bench_pipeline`` (served by a local asset server), and runs every step of each order in turn
with ``order_advance`` (the lab simulator at 0 s: shipped on the first check). The first order
warms up and is not counted; the means of the others are printed per step, with the CPU of
this process's PostgreSQL backend ("db", from ``/proc/<pid>/schedstat`` when PostgreSQL runs
on this machine, otherwise 0). ``--profile`` adds
a cProfile (cumulative, top 40) of the steps named, over all counted orders, in this process's
CPU time (waits on PostgreSQL and the asset server not counted). Queries are
counted with ``CaptureQueriesContext`` (BEGIN and COMMIT included), whose logging of each
statement's SQL costs CPU; ``--uncaptured`` counts them with an execute wrapper instead.
"""

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_pipeline import (  # noqa: E402
    QUEUE_KEYS,
    SKU,
    asset_server,
    bench_environment,
    make_photo,
    order_post,
    scratch_remove,
    service_ready,
)
from bench.harness import recreate  # noqa: E402


class QueryCounter:
    """An execute wrapper counting the queries it sees."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute: Any, sql: Any, params: Any, many: Any, context: Any) -> Any:
        self.count += 1
        return execute(sql, params, many, context)


def backend_cpu(connection: Any) -> tuple[int, float]:
    """The connection's PostgreSQL backend process and the seconds of CPU it has used, when
    PostgreSQL runs on this machine (0, 0 otherwise)."""
    if connection.settings_dict["HOST"] not in ("", "127.0.0.1", "localhost", "::1"):
        return 0, 0.0
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    try:
        with open(f"/proc/{pid}/schedstat") as stat:
            return pid, int(stat.read().split()[0]) / 1e9
    except OSError:
        return 0, 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orders", type=int, default=6)
    parser.add_argument("--profile", default="", help="steps to profile, comma-separated")
    parser.add_argument(
        "--uncaptured",
        action="store_true",
        help="count queries with an execute wrapper, not CaptureQueriesContext: no SQL logged "
        "(the log's copy of each statement is CPU a deployment does not spend, more so with "
        "server-side binding, where Django formats the values into it), BEGIN and COMMIT not "
        "counted",
    )
    parser.add_argument(
        "--sql",
        action="store_true",
        help="print each step's statements for the last order (not with --uncaptured, which "
        "keeps no statement)",
    )
    options = parser.parse_args()
    database_url, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not database_url.startswith("postgres") or not redis_url:
        sys.exit("Set DATABASE_URL (PostgreSQL) and REDIS_URL.")
    admin_url, bench_name, scratch = bench_environment(database_url, "steps")
    server, asset_url = asset_server(make_photo())

    import django

    django.setup()
    from django.db import connection, connections
    from django.test.utils import CaptureQueriesContext

    from orders.models import Order, PipelineStep
    from orders.pipeline.state_machine import order_advance

    # The orders' task messages and callback deliveries are not for any worker: no queue keeps them.
    client, broker = service_ready(redis_url, "Steps")
    wanted = {step for step in options.profile.split(",") if step}
    measured: dict[str, list[tuple[float, float, int, float]]] = {}
    profiles: dict[str, pstats.Stats] = {}
    try:
        for n in range(options.orders + 1):
            order_id = order_post(client, asset_url, f"steps-{n}")
            for _ in range(12):
                step = Order.objects.values_list("pipeline_step", flat=True).get(id=order_id)
                if step == PipelineStep.FAILED:
                    raise SystemExit(f"order {order_id} failed: see {scratch}")
                if step == PipelineStep.DONE:
                    break
                profile = cProfile.Profile(time.process_time) if step in wanted and n else None
                queries = QueryCounter()
                captured = CaptureQueriesContext(connection)
                with connection.execute_wrapper(queries) if options.uncaptured else captured:
                    before = backend_cpu(connection)
                    cpu, wall = time.process_time(), time.perf_counter()
                    if profile:
                        profile.enable()
                    order_advance(order_id=order_id, step=step)
                    if profile:
                        profile.disable()
                    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                    after = backend_cpu(connection)
                    # A step that reconnected: its backend's CPU is not all known.
                    db = after[1] - before[1] if after[0] == before[0] else 0.0
                if options.sql and n == options.orders and not options.uncaptured:
                    print(f"--- {step}: {len(captured)} statements ---")
                    for query in captured.captured_queries:
                        print("  ", " ".join(query["sql"].split())[:200])
                if n:  # the first order warms up
                    measured.setdefault(step, []).append(
                        (cpu, wall, queries.count if options.uncaptured else len(captured), db)
                    )
                if profile:
                    if step in profiles:
                        profiles[step].add(profile)
                    else:
                        profiles[step] = pstats.Stats(profile)
            else:
                raise SystemExit(f"order {order_id} did not finish: see {scratch}")
    finally:
        broker.delete(*QUEUE_KEYS)
        server.kill()
        connections.close_all()
        recreate(admin_url, bench_name, drop_only=True)
    scratch_remove(scratch)  # not when an order failed or did not finish: its files are kept

    print(f"{options.orders} orders, one {SKU} print each, steps run in this process (means)")
    total_cpu = total_wall = total_db = 0.0
    for step, runs in measured.items():
        cpu = sum(run[0] for run in runs) / options.orders
        wall = sum(run[1] for run in runs) / options.orders
        queries = sum(run[2] for run in runs) / options.orders
        db = sum(run[3] for run in runs) / options.orders
        total_cpu, total_wall, total_db = total_cpu + cpu, total_wall + wall, total_db + db
        print(
            f"  {step:<12} CPU {cpu * 1000:7.1f} ms   db {db * 1000:6.2f} ms   "
            f"wall {wall * 1000:7.1f} ms   "
            f"{queries:5.1f} queries   ({len(runs) / options.orders:.0f} run per order)"
        )
    print(
        f"  {'all':<12} CPU {total_cpu * 1000:7.1f} ms   db {total_db * 1000:6.2f} ms   "
        f"wall {total_wall * 1000:7.1f} ms"
    )
    for step, stats in profiles.items():
        out = io.StringIO()
        stats.stream = out  # type: ignore[attr-defined]
        stats.sort_stats("cumulative").print_stats(40)
        print(f"\n--- {step} ---\n{out.getvalue()}")


if __name__ == "__main__":
    main()
