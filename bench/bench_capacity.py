"""Capacity: the pipeline with one and with two images-worker processes, in one sitting.

Runs ``bench/bench_pipeline.py`` (the workers as deployed: a prefork ``images`` worker with
beat and a thread-pool worker for ``downloads``, ``labs``, ``callbacks`` and ``sweeps``, 8
threads) with ``--concurrency 1`` and then ``--concurrency 2``, ``--orders`` orders a run and
``--repeat`` runs each, and while each runs samples the scratch database's connections
(``pg_stat_activity``) every half second. Prints, for each: orders per minute (median of the
runs), CPU per order by process type (bench_pipeline's groups: the images worker's pool and
main process, the thread-pool worker, PostgreSQL, Redis) and the most database connections
seen at once; then the scaling ratio (two processes' orders per minute over one's) and the
connections one more images process adds. ``docs/deployment.md`` turns these into the
capacity model.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mydb REDIS_URL=redis://127.0.0.1:6379/6 \\
        .venv/bin/python bench/bench_capacity.py [--orders 24] [--repeat 2]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import scratch_database  # noqa: E402

RATE = re.compile(r"^run \d+: pipeline .*\(\s*([\d.]+) orders/min\)")
CPU_LINE = re.compile(r"^  (.+?)\s+([\d.]+) ms")


def connections_peak(admin_url: str, name: str, stop: threading.Event) -> list[int]:
    """The scratch database's connection count, sampled until ``stop`` (the list fills)."""
    import psycopg

    seen: list[int] = []

    def sample() -> None:
        with psycopg.connect(admin_url, autocommit=True) as connection:
            while not stop.wait(0.5):
                row = connection.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [name]
                ).fetchone()
                seen.append(int(row[0]) if row else 0)

    threading.Thread(target=sample, daemon=True).start()
    return seen


def one_sitting(processes: int, args: argparse.Namespace) -> dict:
    _, name, admin_url = scratch_database(os.environ["DATABASE_URL"], "bench")
    stop = threading.Event()
    seen = connections_peak(admin_url, name, stop)
    command = [
        sys.executable, str(ROOT / "bench" / "bench_pipeline.py"),
        "--concurrency", str(processes), "--orders", str(args.orders),
        "--repeat", str(args.repeat),
    ]  # fmt: skip
    try:
        output = subprocess.run(
            command, cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout
    finally:
        stop.set()
    rates = [float(m.group(1)) for line in output.splitlines() if (m := RATE.match(line))]
    cpu: dict[str, float] = {}
    in_cpu = False
    for line in output.splitlines():
        if line.startswith("CPU during the pipeline, per order:"):
            in_cpu = True
            continue
        if in_cpu:
            match = CPU_LINE.match(line)
            if not match:
                break
            cpu[match.group(1).strip()] = float(match.group(2))
    return {
        "rate": statistics.median(rates),
        "rates": rates,
        "cpu": cpu,
        "connections": max(seen, default=0),
        "output": output,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--orders", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--verbose", action="store_true", help="bench_pipeline's own output")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("Set DATABASE_URL (PostgreSQL) and REDIS_URL, as for bench_pipeline.")
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs")
    sittings = {n: one_sitting(n, args) for n in (1, 2)}
    for n, sitting in sittings.items():
        if args.verbose:
            print(sitting["output"])
        rates = ", ".join(f"{r:.1f}" for r in sitting["rates"])
        print(
            f"{n} images process(es): {sitting['rate']:.1f} orders/min (runs {rates}); "
            f"database connections at most {sitting['connections']}"
        )
        for label, ms in sitting["cpu"].items():
            print(f"    CPU per order, {label:<34} {ms:7.1f} ms")
    one, two = sittings[1], sittings[2]
    print(f"scaling ratio (2 processes / 1): {two['rate'] / one['rate']:.2f}")
    print(
        "database connections one more images process adds: "
        f"{two['connections'] - one['connections']}"
    )
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
