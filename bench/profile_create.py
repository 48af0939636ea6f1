"""CPU a request of the create, quote, get and list paths, in one process, and where it goes.

Sets up one configuration in a scratch folder (the embedded default: SQLite and the filesystem
broker; or, given ``--database-url`` and ``--redis-url``, PostgreSQL and Redis: the database is
migrated and gets a merchant and orders, so give a scratch one), loads the demo catalogue and a
merchant as ``bench/bench_api.py`` does, then sends ``--requests`` requests of each path
through the project's WSGI handler as gunicorn would (no test client, no load driver: nothing
but the service in the process, its start-up heap frozen as ``gunicorn.conf.py`` freezes it).

For each path it prints the process CPU a request (``time.process_time``; the lowest of ten
batches, and their median: on a shared machine contention only adds, so the lowest is the
steadiest), on PostgreSQL also the CPU of the database backend serving this process (from
``/proc``), and the queries a request. ``--profile`` adds the top costs of a cProfile run over
the same requests, ``--queries`` the statements. ``--instructions`` counts the instructions a
request instead (valgrind's callgrind, counting only around the measured requests): the same
on a busy machine as on a quiet one, so it compares two versions of the code where CPU time
cannot. ``--floor`` also measures the minimal view (``bench/minimal_site.py``) the same way in
a child process.

    .venv/bin/python bench/profile_create.py [--database-url postgres://.../scratch
        --redis-url redis://.../8] [--requests 500] [--paths create quote get list] [--floor]
        [--profile] [--queries] [--instructions] [--top 40]
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_api import ORDER, QUOTE  # noqa: E402

Send = Callable[[], int]


def _environ(method: str, path: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    """A WSGI environ as gunicorn builds it for this request."""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path.split("?")[0],
        "QUERY_STRING": path.split("?")[1] if "?" in path else "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1:8000",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "CONTENT_LENGTH": str(len(body)),
    }
    for name, value in headers.items():
        if name.lower() == "content-type":
            environ["CONTENT_TYPE"] = value
        else:
            environ["HTTP_" + name.upper().replace("-", "_")] = value
    return environ


def sender(application: Any, method: str, path: str, body: bytes, headers: dict[str, str]) -> Send:
    """A function that sends the request through ``application`` and returns its status."""
    statuses: list[int] = []

    def start_response(status: str, _headers: Any, _exc_info: Any = None) -> None:
        statuses.append(int(status.split()[0]))

    def send() -> int:
        statuses.clear()
        response = application(_environ(method, path, body, headers), start_response)
        for _chunk in response:
            pass
        if hasattr(response, "close"):
            response.close()
        return statuses[0]

    return send


def backend_ticks() -> float:
    """CPU seconds of the PostgreSQL backend of this process's connection (0 elsewhere)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return 0.0
    if not hasattr(backend_ticks, "pid"):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend_ticks.pid = cursor.fetchone()[0]  # type: ignore[attr-defined]
    try:
        fields = Path(f"/proc/{backend_ticks.pid}/stat").read_text().rsplit(")", 1)[1].split()  # type: ignore[attr-defined]
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(send: Send, requests: int, batches: int = 10) -> tuple[float, float, float]:
    """(lowest, median) process CPU a request in microseconds over ``batches`` batches of
    ``requests`` requests in all, and the database backend's CPU a request over all of them.
    On a shared machine the lowest batch is the steadiest figure: contention only adds."""
    for _ in range(20):  # warm: the snapshot, the connection, prepared statements
        assert send() == 200
    backend_ticks()
    backend = backend_ticks()
    size = max(1, requests // batches)
    per_batch = []
    for _ in range(batches):
        cpu = time.process_time()
        for _ in range(size):
            send()
        per_batch.append((time.process_time() - cpu) * 1e6 / size)
    return (
        min(per_batch),
        statistics.median(per_batch),
        (backend_ticks() - backend) * 1e6 / (size * batches),
    )


def queries(send: Send) -> list[str]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        assert send() == 200
    return [query["sql"] for query in captured.captured_queries]


def profiled(send: Send, requests: int, top: int) -> str:
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(requests):
        send()
    profile.disable()
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def prepare() -> None:
    """Schema, catalogue and a merchant; prints the merchant's sandbox key."""
    import django

    django.setup()
    from django.core.management import call_command

    from merchants.services import merchant_create

    call_command("migrate", verbosity=0)
    call_command("load_catalogue", verbosity=0)
    key = merchant_create(name="Profile create").sandbox_api_key
    print(key)


def service(args: argparse.Namespace) -> None:
    import django

    django.setup()
    import gc

    from config.wsgi import application

    headers = {"X-API-Key": args.key, "Content-Type": "application/json"}
    paths = {
        "create": sender(application, "POST", "/v4.0/orders", json.dumps(ORDER).encode(), headers),
        "quote": sender(application, "POST", "/v4.0/quotes", json.dumps(QUOTE).encode(), headers),
    }
    if {"get", "list"} & set(args.paths):
        # A hundred orders to list, one of them to get.
        from orders.models import Order

        for _ in range(100):
            assert paths["create"]() == 200
        order = Order.objects.order_by("-id").first()
        assert order is not None
        paths["get"] = sender(application, "GET", f"/v4.0/orders/{order.public_id}", b"", headers)
        paths["list"] = sender(application, "GET", "/v4.0/orders?top=100", b"", headers)
    for name in args.paths:
        assert paths[name]() == 200, name
    gc.freeze()  # as gunicorn's post_worker_init does
    for name in args.paths:
        send = paths[name]
        if args.instructions:
            counted_here = counted(send, args.requests, args.instructions)
            print(f"{name}: {counted_here:,.0f} instructions a request")
            continue
        low, median, backend = measure(send, args.requests)
        sql = queries(send)
        print(
            f"{name}: {low:.0f} us process CPU (median batch {median:.0f})"
            + (f" + {backend:.0f} us backend" if backend else "")
            + f" a request, {len(sql)} queries"
        )
        if args.queries:
            for statement in sql:
                print(f"    {statement[:200]}")
        if args.profile:
            print(profiled(send, args.requests, args.top))


def floor(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import minimal_site

    send = sender(minimal_site.application, "GET", "/floor", b"", {})
    if args.instructions:
        print(f"minimal view: {counted(send, args.requests, args.instructions):,.0f} instructions")
        return
    low, median, backend = measure(send, args.requests)
    print(
        f"minimal view: {low:.0f} us process CPU (median batch {median:.0f})"
        + (f" + {backend:.0f} us backend" if backend else "")
        + " a request"
    )


# Callgrind's client requests, for ``--instructions``: counting starts and stops around the
# measured requests alone (not the interpreter's and Django's start-up).
MARKS_C = """
#include <valgrind/callgrind.h>
void marks_start(void) {
    CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT;
}
void marks_stop(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS; }
"""


def counted(send: Send, requests: int, out: str) -> float:
    """Instructions a request (callgrind, this process only), over ``requests`` requests."""
    import ctypes

    for _ in range(20):
        assert send() == 200
    marks = ctypes.CDLL(str(Path(out).parent / "marks.so"))
    marks.marks_start()
    for _ in range(requests):
        send()
    marks.marks_stop()
    dumps = sorted(Path(out).parent.glob(Path(out).name + "*"), key=lambda p: p.stat().st_mtime)
    text = dumps[-1].read_text()
    total = next(line for line in text.splitlines() if line.startswith(("summary:", "totals:")))
    dumps[-1].unlink()
    return int(total.split()[1]) / requests


def _child(args: list[str], env: dict[str, str], instructions: str) -> str:
    """Run this script with ``args`` in a fresh interpreter (Django's settings are read once per
    process), under callgrind when counting instructions; its output."""
    command = [sys.executable, __file__, *args]
    if instructions:
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            "--collect-atstart=no",
            f"--callgrind-out-file={instructions}",
            *command,
        ]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--database-url", default="")
    parser.add_argument("--redis-url", default="")
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--paths", nargs="*", default=["create", "quote"])
    parser.add_argument("--floor", action="store_true", help="also the minimal view")
    parser.add_argument("--profile", action="store_true", help="cProfile each path")
    parser.add_argument("--queries", action="store_true", help="print each path's statements")
    parser.add_argument(
        "--instructions",
        nargs="?",
        const="count",
        default="",
        help="count instructions under valgrind's callgrind (steady on a busy machine; needs "
        "valgrind, its headers and a C compiler) rather than CPU time",
    )
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--role", choices=["prepare", "service", "floor"], help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "prepare":
        return prepare()
    if args.role == "service":
        return service(args)
    if args.role == "floor":
        return floor(args)
    var_dir = tempfile.mkdtemp(prefix="profile-create-")
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")},
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "VAR_DIR": var_dir,
        "MINIMAL_SITE_DIR": var_dir,
        "API_RATE_LIMIT": "100000000/min",
        "LOG_LEVEL": "WARNING",
    }
    if args.database_url:
        env["DATABASE_URL"] = args.database_url
    if args.redis_url:
        env["REDIS_URL"] = args.redis_url
    passed = [a for a in sys.argv[1:] if not a.startswith("--instructions")]
    instructions = ""
    if args.instructions:
        instructions = str(Path(var_dir) / "callgrind.out")
        source = Path(var_dir) / "marks.c"
        source.write_text(MARKS_C)
        subprocess.run(
            ["cc", "-O2", "-shared", "-fPIC", "-o", str(Path(var_dir) / "marks.so"), str(source)],
            check=True,
        )
        passed.append(f"--instructions={instructions}")
    try:
        key = _child(["--role", "prepare"], env, "").strip().splitlines()[-1]
        print(_child([*passed, "--role", "service", "--key", key], env, instructions), end="")
        if args.floor:
            floor_env = {**env, "DJANGO_SETTINGS_MODULE": "minimal_site"}
            print(_child([*passed, "--role", "floor"], floor_env, instructions), end="")
    finally:
        if args.redis_url:
            import redis

            redis.Redis.from_url(args.redis_url).flushdb()
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
