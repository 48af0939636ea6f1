"""The API's hot paths against a minimal Django project on the same gunicorn and database,
driven by wrk and judged by the server's CPU a request; with ``--before REF``, the code at
another git ref measured in the same sitting, its rounds interleaved with this tree's.

The floor is ``../shared/bench/minimal_site.py`` beside the repository (``bench/minimal_site.py``
is its copy, used where ``../shared`` is missing): no apps, no middleware, one view that runs
``SELECT 1`` and answers JSON, with persistent connections. It and the service are served by
the same gunicorn command (the project's gunicorn.conf.py, ``--workers`` sync workers) on the
same database.

Each path is measured by ``../shared/bench/cpu_per_request.sh`` (its copy in ``bench/``
likewise), exactly as the API's speed goals are judged: wrk (``-t1 -c8`` unless told, here with
``--latency``) for ``--seconds`` after a 1 s warm-up, and the CPU of the gunicorn master and its
workers plus, on PostgreSQL, the database's backends, read from ``/proc`` before and after and
divided by the requests served. A path's ratio is the floor's CPU a request over the path's in
the same round; the figures printed are the medians of ``--rounds`` rounds (every path once a
round, the floor first; with ``--before`` the two trees' runs of a path side by side, in
alternating order). On a busy machine a cheap path's rate is bounded by the load generator and
the kernel as much as by the server, so the CPU ratio is the figure to go by; req/s and wrk's
p50/p99 are printed beside it.

wrk's Lua script (one a path) sends the request: a fresh idempotency key and reference for
every create, so each is a real create; a random order of the environment's for each get. It
writes wrk's latency percentiles and error counts, and an answer other than 2xx stops the bench.

Configurations: the embedded default (SQLite in a temporary folder, the filesystem broker and
file cache) and, given ``--database-url`` (PostgreSQL: a database whose name starts with
``perf_``, made afresh and dropped at the end) and ``--redis-url``, PostgreSQL + Redis. For each
tree a fresh process (``bench/api_tree.py``) migrates, loads the catalogue, creates a merchant and
``--orders`` orders through the public API, vacuums and counts each path's queries of one
request in-process. Rate limits are raised out of the way (``API_RATE_LIMIT``).

``--before REF``: REF is checked out into a temporary worktree (``git worktree add --detach``,
removed at the end) and served by the same venv with ``PYTHONPATH`` on that tree, against its
own fresh database (``<name>_before``; on SQLite its own folder) and the same Redis database
(the measured paths keep only rate-limit counts there, by key, and task messages no worker
takes). Only the public API and the management commands every version has are used, so REF
may be any commit of the service.

wrk comes from Debian: ``make bench-tools`` installs it, and this runs that when wrk is missing.

    .venv/bin/python bench/bench_api.py [--database-url postgres://.../perf_api
        --redis-url redis://127.0.0.1:6379/14] [--before main] [--only sqlite|postgres]
        [--seconds 5] [--rounds 3] [--clients 8] [--threads 1] [--workers 2]
        [--paths create get ...]
"""

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api_tree import (  # noqa: E402
    CREATE,
    GET,
    HEALTHZ,
    LIST,
    ORDER,
    PATHS,
    QUOTE,
    QUOTE_PATH,
)
from bench.harness import free_port, recreate, scratch_database, start_gunicorn  # noqa: E402

FLOOR = "minimal view"
GOALS = {HEALTHZ: 0.80, CREATE: 0.15, GET: 0.50, LIST: 0.20, QUOTE_PATH: 0.30}
URLS = {
    FLOOR: "/floor",
    HEALTHZ: "/healthz",
    CREATE: "/v4.0/orders",
    GET: "/v4.0/orders",  # the script adds an order's id
    LIST: "/v4.0/orders?top=100",
    QUOTE_PATH: "/v4.0/quotes",
}
LUA_HEADERS = Template("""
wrk.headers["X-API-Key"] = $key
wrk.headers["Content-Type"] = "application/json"
""")
# A create's body is the order's JSON with its own idempotency key and reference put in front:
# the random part read from /dev/urandom differs between the warm-up, the measured run and each
# of their threads, so no key is ever sent twice.
LUA_CREATE = Template("""
wrk.method = "POST"
local rest = $rest
local random = io.open("/dev/urandom", "rb")
local run = (random:read(8):gsub(".", function(c) return string.format("%02x", c:byte()) end))
random:close()
local number = 0
request = function()
  number = number + 1
  local key = "bench-" .. run .. "-" .. number
  return wrk.format(nil, nil, nil,
    '{"idempotencyKey":"' .. key .. '","merchantReference":"' .. key .. '",' .. rest)
end
""")
LUA_GET = Template("""
local ids = {$ids}
request = function()
  return wrk.format(nil, $path .. ids[math.random(#ids)])
end
""")
LUA_QUOTE = Template("""
wrk.method = "POST"
wrk.body = $body
""")
# The Lua end of every script: wrk's own percentiles (microseconds) and error counts, written
# where BENCH_WRK_OUT says (the warm-up run writes it first, the measured run last).
LUA_DONE = """
done = function(summary, latency, requests)
  local e = summary.errors
  local out = io.open(os.getenv("BENCH_WRK_OUT"), "w")
  out:write(string.format("%d %d %d %d %d\\n", summary.requests, e.status,
    e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99)))
  out:close()
end
"""


def shared_file(name: str) -> Path:
    """``../shared/bench/<name>`` beside the repository (from a git worktree elsewhere, beside
    the main checkout), else its copy in ``bench/`` (minimal_site.py has one)."""
    folders = [ROOT.parent]
    common = git("rev-parse", "--path-format=absolute", "--git-common-dir", check=False)
    if common:
        folders.append(Path(common).parent.parent)
    for folder in folders:
        if (folder / "shared" / "bench" / name).exists():
            return folder / "shared" / "bench" / name
    return ROOT / "bench" / name


def git(*words: str, check: bool = True) -> str:
    done = subprocess.run(["git", *words], cwd=ROOT, capture_output=True, text=True)
    if check and done.returncode:
        raise SystemExit(f"git {' '.join(words)}: {done.stderr.strip()}")
    return done.stdout.strip() if done.returncode == 0 else ""


def wrk_installed() -> None:
    """wrk on the PATH, installed by ``make bench-tools`` (Debian's package) when missing."""
    if shutil.which("wrk") is None:
        print("wrk is missing: make bench-tools", flush=True)
        subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "bench-tools"], check=True)
    if shutil.which("wrk") is None:
        raise SystemExit("wrk could not be installed (make bench-tools)")


def lua_string(text: str) -> str:
    """``text`` as a Lua long string (no escapes inside)."""
    level = "="
    while f"]{level}]" in text:
        level += "="
    return f"[{level}[{text}]{level}]"


def lua_scripts(folder: Path, key: str, ids: list[str]) -> dict[str, Path]:
    """wrk's script for each path of a tree served with ``key`` and its orders ``ids``."""
    headers = LUA_HEADERS.substitute(key=lua_string(key))
    create = LUA_CREATE.substitute(rest=lua_string(json.dumps(ORDER)[1:]))
    get = LUA_GET.substitute(
        ids=", ".join(lua_string(public_id) for public_id in ids),
        path=lua_string(URLS[GET] + "/"),
    )
    quote = LUA_QUOTE.substitute(body=lua_string(json.dumps(QUOTE)))
    texts = {
        FLOOR: "",
        HEALTHZ: "",
        CREATE: headers + create,
        GET: headers + get,
        LIST: headers,
        QUOTE_PATH: headers + quote,
    }
    folder.mkdir(parents=True, exist_ok=True)
    scripts = {}
    for name, text in texts.items():
        scripts[name] = folder / f"{''.join(c if c.isalnum() else '-' for c in name)}.lua"
        scripts[name].write_text(text + LUA_DONE)
    return scripts


@dataclass
class Reading:
    """One run of one path: wrk's rate and percentiles, the server's CPU a request."""

    rate: float  # requests a second
    cpu: float  # microseconds a request
    p50: float  # milliseconds
    p99: float
    requests: int


@dataclass
class Served:
    """One tree (or the floor) served in one configuration, and its readings by path."""

    label: str
    root: Path
    env: dict[str, str]
    database_url: str = ""
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    counts: dict[str, int] = field(default_factory=dict)
    scripts: dict[str, Path] = field(default_factory=dict)
    readings: dict[str, list[Reading]] = field(default_factory=dict)


def measured(args: argparse.Namespace, served: Served, path: str, scratch: Path) -> Reading:
    """One path of ``served`` through ``cpu_per_request.sh``; stops on any answer not 2xx."""
    assert served.process is not None
    out = scratch / "wrk.out"
    out.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["BENCH_WRK_OUT"] = str(out)
    if served.database_url:
        env["DATABASE_URL"] = served.database_url  # whose backends count
    done = subprocess.run(
        [
            "bash", str(args.cpu_script), str(args.seconds), str(served.process.pid),
            f"http://127.0.0.1:{served.port}{URLS[path]}",
            "-t", str(args.threads), "-c", str(args.clients), "--latency", "--timeout", "10s",
            "-s", str(served.scripts[path]),
        ],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    if done.returncode or not out.exists():
        raise SystemExit(f"{served.label} {path}: cpu_per_request.sh failed: {done.stderr}")
    rate, cpu = done.stdout.split()
    requests, status_errors, socket_errors, p50, p99 = (int(n) for n in out.read_text().split())
    if status_errors or not requests:
        raise SystemExit(
            f"{served.label} {path}: {status_errors} of {requests} answers were not 2xx"
        )
    if socket_errors:
        print(f"  ({served.label} {path}: {socket_errors} connection errors or timeouts)")
    return Reading(float(rate), float(cpu), p50 / 1000, p99 / 1000, requests)


def prepare(served: Served, orders: int) -> tuple[str, list[str]]:
    """The tree's database prepared and its queries counted by ``bench/api_tree.py``, run on
    the tree's own code; returns (key, order ids)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "api_tree.py"), "--orders", str(orders)],
        cwd=served.root,
        env=served.env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"{served.label}: preparing failed:\n{done.stderr[-3000:]}")
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(facts["code"]) != served.root.resolve():
        raise SystemExit(f"{served.label}: the service was imported from {facts['code']}")
    served.counts = facts["counts"]
    return str(facts["key"]), list(facts["ids"])


def service_env(root: Path, var_dir: str, database_url: str, redis_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env |= {
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "PYTHONPATH": str(root),
        "VAR_DIR": var_dir,
        "API_RATE_LIMIT": "100000000/min",
        "LOG_LEVEL": "WARNING",
    }
    if database_url:
        env["DATABASE_URL"] = database_url
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


def sitting(
    args: argparse.Namespace, trees: list[tuple[str, Path]], database_url: str, redis_url: str
) -> tuple[Served, list[Served]]:
    """One configuration: the floor and every tree on the same kind of database, each tree's
    paths driven in the same interleaved rounds. Returns the floor and the trees, read."""
    scratch = Path(tempfile.mkdtemp(prefix="bench-api-"))
    services: list[Served] = []
    databases: list[tuple[str, str]] = []  # (maintenance URL, name) of each fresh database
    for number, (label, root) in enumerate(trees):
        url = database_url
        if database_url and number:
            url = scratch_database(database_url, "before")[0]
        if url:
            name = urlsplit(url).path.lstrip("/")
            if not name.startswith("perf_"):
                raise SystemExit("Use a PostgreSQL database whose name starts with perf_.")
            admin = urlsplit(url)._replace(path="/postgres").geturl()
            recreate(admin, name)
            databases.append((admin, name))
        var_dir = scratch / f"var-{number}"
        var_dir.mkdir()
        env = service_env(root, str(var_dir), url, redis_url)
        services.append(Served(label, root, env, database_url=url))
    if redis_url:
        import redis

        redis.Redis.from_url(redis_url).flushdb()
    this = services[0]
    floor = Served(
        FLOOR,
        ROOT,
        this.env
        | {"DJANGO_SETTINGS_MODULE": "minimal_site", "MINIMAL_SITE_DIR": this.env["VAR_DIR"]},
        database_url=this.database_url,
        counts={FLOOR: 1},
    )
    paths = [p for p in PATHS if not args.paths or any(p.startswith(w) for w in args.paths)]
    try:
        for served in services:
            began = time.monotonic()
            key, ids = prepare(served, args.orders)
            print(
                f"{served.label}: migrated, catalogue, merchant and {args.orders} orders in"
                f" {time.monotonic() - began:.0f} s",
                flush=True,
            )
            served.scripts = lua_scripts(scratch / f"lua-{services.index(served)}", key, ids)
            served.port = free_port()
            served.process = start_gunicorn(
                served.port, served.env, workers=args.workers, threads=1, worker_class="sync",
                cwd=served.root,
            )  # fmt: skip
        floor.scripts = lua_scripts(scratch / "lua-floor", "", [])
        floor.port = free_port()
        floor.process = start_gunicorn(
            floor.port, floor.env, workers=args.workers, threads=1, worker_class="sync",
            application="minimal_site:application", pythonpath=str(args.minimal_site.parent),
            health_path="/floor",
        )  # fmt: skip
        database = database_url.split("@")[-1] or "SQLite"
        broker = redis_url.split("@")[-1] or "filesystem broker"
        load = os.getloadavg()
        print(
            f"\n{database} + {broker}: gunicorn {args.workers} sync workers, wrk -t{args.threads}"
            f" -c{args.clients}, {args.seconds} s a path (after 1 s of warm-up) in {args.rounds}"
            f" rounds; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
        )
        width = max(len(served.label) for served in [floor, *services])
        for round_number in range(args.rounds):
            # The trees swap places every round, so neither is always the one measured first.
            order = services if round_number % 2 == 0 else services[::-1]
            runs = [(floor, FLOOR)] + [(served, path) for path in paths for served in order]
            for served, path in runs:
                reading = measured(args, served, path, scratch)
                served.readings.setdefault(path, []).append(reading)
                print(
                    f"round {round_number + 1}  {served.label:<{width}}  {path:<17}"
                    f" {reading.rate:8.1f} req/s {reading.cpu:8.1f} us a request"
                    f"  p50 {reading.p50:6.2f} / p99 {reading.p99:6.2f} ms",
                    flush=True,
                )
        load = os.getloadavg()
        print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    finally:
        for served in [floor, *services]:
            if served.process is not None:
                served.process.terminate()
                served.process.wait(timeout=30)
        if redis_url:
            import redis

            redis.Redis.from_url(redis_url).flushdb()
        for admin, name in databases:
            recreate(admin, name, drop_only=True)
        shutil.rmtree(scratch, ignore_errors=True)  # SQLite databases, broker folders, scripts
    return floor, services


def ratios(floor: Served, served: Served, path: str) -> list[float]:
    """The path's CPU ratio to the floor in each round (floor CPU / path CPU, same round)."""
    return [
        f.cpu / r.cpu if r.cpu else 0.0
        for f, r in zip(floor.readings[FLOOR], served.readings[path], strict=True)
    ]


def detail(config: str, floor: Served, served: Served) -> str:
    """One tree's table in one configuration: medians of the rounds."""
    lines = [
        f"{config}, {served.label} (median of {len(floor.readings[FLOOR])} rounds):",
        "",
        "| path | req/s | p50 / p99 | queries | server CPU a request | CPU ratio to the minimal"
        " view (rounds) | goal |",
        "|---|---|---|---|---|---|---|",
    ]
    for who, path in [(floor, FLOOR)] + [(served, path) for path in served.readings]:
        readings = who.readings[path]
        rate = statistics.median(r.rate for r in readings)
        cpu = statistics.median(r.cpu for r in readings)
        p50 = statistics.median(r.p50 for r in readings)
        p99 = statistics.median(r.p99 for r in readings)
        if path == FLOOR:
            ratio, goal = "1", "-"
        else:
            each = ratios(floor, served, path)
            met = "" if statistics.median(each) >= GOALS[path] else ", short"
            ratio = f"{statistics.median(each):.3f} ({min(each):.3f} to {max(each):.3f}{met})"
            goal = f">= {GOALS[path]:.2f}"
        queries = who.counts.get(path, "-")
        lines.append(
            f"| {path} | {rate:.0f} | {p50:.1f} / {p99:.1f} ms | {queries} | {cpu:.0f} us | "
            f"{ratio} | {goal} |"
        )
    return "\n".join(lines)


def summary(sittings: dict[str, tuple[Served, list[Served]]]) -> str:
    """Every tree and configuration side by side: each path's CPU ratio (median of the rounds)
    and its CPU a request, the floor's CPU a request on the first row, and the goal."""
    columns = [
        (config, floor, served)
        for config, (floor, services) in sittings.items()
        for served in services
    ]
    heads = [f"{served.label}, {config.split(' +')[0]}" for config, _, served in columns]
    lines = [
        "| CPU ratio to the minimal view (median) | " + " | ".join(heads) + " | goal |",
        "|---|" + "---|" * len(columns) + "---|",
    ]
    cells = [
        f"{statistics.median(r.cpu for r in floor.readings[FLOOR]):.0f} us a request"
        for _, floor, _ in columns
    ]
    lines.append(f"| {FLOOR} | " + " | ".join(cells) + " | - |")
    for path in PATHS:
        if not all(path in served.readings for _, _, served in columns):
            continue
        cells = []
        for _, floor, served in columns:
            ratio = statistics.median(ratios(floor, served, path))
            cpu = statistics.median(r.cpu for r in served.readings[path])
            bold = "**" if ratio >= GOALS[path] else ""  # the goal met
            cells.append(f"{bold}{ratio:.3f}{bold} ({cpu:.0f} us)")
        lines.append(f"| {path} | " + " | ".join(cells) + f" | >= {GOALS[path]:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--database-url", default="", help="PostgreSQL (a perf_ database)")
    parser.add_argument("--redis-url", default="")
    parser.add_argument(
        "--only", choices=["sqlite", "postgres"], default="", help="one configuration only"
    )
    parser.add_argument("--before", default="", metavar="REF", help="also measure this git ref")
    parser.add_argument("--seconds", type=int, default=5, help="measured seconds a path a round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of all paths")
    parser.add_argument("--clients", type=int, default=8, help="wrk's connections (-c)")
    parser.add_argument("--threads", type=int, default=1, help="wrk's threads (-t)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn's sync workers")
    parser.add_argument("--orders", type=int, default=200, help="orders made before the runs")
    parser.add_argument(
        "--paths",
        nargs="*",
        default=[],
        help="only these paths beside the floor, by the start of their names (get, list, ...)",
    )
    parser.add_argument(
        "--minimal-site", type=Path, default=None, help="the floor's module (minimal_site.py)"
    )
    parser.add_argument("--cpu-script", type=Path, default=None, help="cpu_per_request.sh")
    args = parser.parse_args()
    began = time.monotonic()
    if args.orders < 100:
        raise SystemExit("--orders: at least 100 (the list reads 100)")
    if args.only != "sqlite" and not (args.database_url and args.redis_url):
        if args.only == "postgres":
            raise SystemExit("--only postgres needs --database-url and --redis-url")
        args.only = "sqlite"
    args.minimal_site = (args.minimal_site or shared_file("minimal_site.py")).resolve()
    args.cpu_script = (args.cpu_script or shared_file("cpu_per_request.sh")).resolve()
    for needed in (args.minimal_site, args.cpu_script):
        if not needed.exists():
            raise SystemExit(f"{needed} is missing (../shared/bench beside the repository)")
    if args.minimal_site.name != "minimal_site.py":
        raise SystemExit("--minimal-site: a file named minimal_site.py (served as its module)")
    wrk_installed()
    for used in (args.minimal_site, args.cpu_script):
        digest = hashlib.sha256(used.read_bytes()).hexdigest()[:16]
        print(f"{used.name}: {used} (sha256 {digest}...)")
    dirty = "+changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    trees = [(f"this tree {git('rev-parse', '--short', 'HEAD')}{dirty}", ROOT)]
    before: Path | None = None
    try:
        if args.before:
            commit = git("rev-parse", "--short", f"{args.before}^{{commit}}")
            before = Path(tempfile.mkdtemp(prefix="bench-api-before-")) / "tree"
            git("worktree", "add", "--detach", "--quiet", str(before), commit)
            trees.append((f"{args.before} {commit}", before))
        sittings: dict[str, tuple[Served, list[Served]]] = {}
        if args.only in ("", "sqlite"):
            sittings["SQLite + filesystem broker"] = sitting(args, trees, "", "")
        if args.only in ("", "postgres"):
            sittings["PostgreSQL + Redis"] = sitting(args, trees, args.database_url, args.redis_url)
    finally:
        if before is not None:
            git("worktree", "remove", "--force", str(before), check=False)
            shutil.rmtree(before.parent, ignore_errors=True)
    for config, (floor, services) in sittings.items():
        for served in services:
            print()
            print(detail(config, floor, served))
    print()
    print(summary(sittings))
    print(f"\n{(time.monotonic() - began) / 60:.1f} minutes in all")


if __name__ == "__main__":
    main()
