"""Pipeline throughput: orders per minute through real Celery workers, beside the print-ready
work alone for the same assets, in the same run.

Run from the project root with PostgreSQL and Redis::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mydb REDIS_URL=redis://127.0.0.1:6379/6 \\
        .venv/bin/python bench/bench_pipeline.py [--orders 40] [--concurrency 3] [--one-worker] \\
        [--repeat 3] [--timeline] [--probe]

It creates a scratch database ``<name>_bench`` beside the one in ``DATABASE_URL`` (dropped at
the end), migrates it, loads the demo catalogue and empties the ``default`` and ``callbacks``
queues of the Redis database given. An asset server in its own process serves one photo-like
12-megapixel JPEG (3000x4000); each order is one 8x10" photo print (a 2400x3000 print area).

1. **Pipeline**: the workers as deployed, a prefork ``images`` worker of ``--concurrency``
   processes (by default one more than the CPUs, as ``deploy/`` runs it; with beat) and a
   thread-pool worker for ``downloads``, ``labs``, ``callbacks`` and ``sweeps`` (deployed,
   ``labs`` has a worker of its own; the simulator waits on nothing; ``--one-worker``: one
   prefork worker for every queue), and the lab simulator at ``LAB_SIMULATOR_SECONDS=0``; the
   orders are created through the API with their task messages held back in this process and
   marked as queued, so no sweep takes them early (the API's own cost is ``bench_api``'s),
   then the clock starts, the task messages are queued at once and it runs until every one is
   ``Complete`` (download and format check, no md5 as the orders give no ``md5Hash``;
   allocation, charges, print file and thumbnail, submission, production, shipping, callback
   events). A run's worth of orders goes through first, unmeasured, so every worker process
   and thread is as warm as a long-running deployment's (its statements prepared). The clock
   stops at the time the last order's row records it became ``Complete``; the bench polls for
   it rarely, so its polling is almost no load.
2. **Print-ready alone**: ``render_print_ready`` of the same file to the same size, once per
   order, in a pool of as many processes set up as the images worker sets up its own
   (``RENDER_THREADS`` libvips threads a rendering), before and after the pipeline (the mean
   counts). The work alone keeps the CPUs busy with as many processes as CPUs: one more, or
   two, takes the same time within the machine's noise (measured 25 November: 5.38-5.65 s for
   40 renders in 2, 3 and 4 processes on 2 CPUs), so one pool size serves both sides.
3. **Download and print-ready alone**: the same pool, each order's photo first downloaded from
   the asset server through the guarded client (one kept session per process, no hash, as the
   orders give none) into a file of its own, then rendered as in 2: the work the pipeline cannot
   do without, with no database, broker, claim or event (before and after, the mean counts).

``--repeat``: 1 runs that many times, with 2 and 3 before the first run and after each; each
run is compared with the mean of the runs of 2 and 3 just before and after it, and
the median ratio is shown: on a shared machine whose speed drifts by a tenth within a minute,
one run's ratio is a poor verdict.

The ratio of the pipeline's rate to 2's is the cost of orchestration: HTTP download, database
steps, claims, callback events and the broker round trips; 3's ratio to 2's is the part of it
that is the download and the fresh file alone, the floor under the first. Beside them, the CPU
time each group of processes spent during the pipeline, per order (the workers' main processes
apart from their pools, the asset server, this script polling, PostgreSQL, Redis, and the
rest, the kernel's writeback of the stored files among it), the CPU of one render alone, and
this script's CPU posting an order before the clock. ``--timeline``: for each run, the share of
the CPUs left idle in each tenth of it (where a run waits: its start, its end, or throughout).
``--probe``: the workers run with ``bench/probe`` on their ``PYTHONPATH``, whose
``sitecustomize.py`` counts their tasks' CPU by task name and, in the images pool, the renders'
(``BENCH_PROBE_PROFILE=1``: a cProfile of the tasks of each pool process and each thread
too, kept in the scratch folder's ``probe/``); the images pool's and the thread pool's CPU
are split into tasks, renders and the process's work between tasks, and the CPU of every
process beside the renders is shown as a share of the renders' own (the steadier measure of
orchestration: both counted in the same runs). A finished run deletes its scratch folder (but
those profiles); one that fails leaves it, with the workers' log.
"""

import argparse
import contextlib
import io
import itertools
import multiprocessing
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing import Process, Queue
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import CpuMeter, machine_times, recreate, scratch_database  # noqa: E402

SOURCE_SIZE = (3000, 4000)
SKU = "GLOBAL-PHO-8X10"
PRINT_AREA = (2400, 3000)
# The probe's profiles (bench/probe/sitecustomize.py), kept after the run when asked for.
PROFILED = os.environ.get("BENCH_PROBE_PROFILE") == "1"


def make_photo() -> bytes:
    import pyvips

    width, height = SOURCE_SIZE
    xy = pyvips.Image.xyz(width, height)
    across, down = xy[0] * (255 / width), xy[1] * (255 / height)
    noise = pyvips.Image.gaussnoise(width, height, sigma=28)
    red = across * 0.7 + noise + 30
    green = down * 0.8 + noise * 0.8 + 20
    blue = (across + down) * 0.4 + noise * 1.2
    photo = red.bandjoin([green, blue]).cast("uchar").copy(interpretation="srgb")
    return bytes(photo.jpegsave_buffer(Q=90))


def serve(photo: bytes, ports: "Queue[int]") -> None:
    class Assets(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(len(photo)))
            self.end_headers()
            self.wfile.write(photo)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Assets)
    server.daemon_threads = True
    ports.put(server.server_address[1])
    server.serve_forever()


# The broker's keys of the service's queues, and kombu's record of unacknowledged messages.
QUEUE_KEYS = ("downloads", "images", "labs", "callbacks", "sweeps", "unacked", "unacked_index")


def bench_environment(database_url: str, suffix: str) -> tuple[str, str, Path]:
    """An empty scratch database ``<name>_<suffix>`` beside the one of ``database_url`` and a
    scratch folder, with this process's environment pointed at them (local settings, asset
    URLs on loopback allowed, the lab simulator at 0 s): (the server's maintenance database
    URL, the scratch database's name, the folder). The sweepers keep their deployed period."""
    bench_url, bench_name, admin_url = scratch_database(database_url, suffix)
    recreate(admin_url, bench_name)
    scratch = Path(tempfile.mkdtemp(prefix=f"bench-pipeline-{suffix}-"))
    os.environ.update(
        DATABASE_URL=bench_url,
        DJANGO_SETTINGS_MODULE="config.settings.local",
        VAR_DIR=str(scratch / "var"),
        MEDIA_ROOT=str(scratch / "media"),
        ALLOW_PRIVATE_URLS="1",
        LAB_SIMULATOR_SECONDS="0",
        LOG_LEVEL="WARNING",
    )
    return admin_url, bench_name, scratch


def scratch_remove(scratch: Path, keep: str | None = None) -> Path | None:
    """Delete the scratch folder of a finished run (its media are some 20 MB an order), or all
    of it but ``keep``; the path kept. A run that failed leaves it whole, to be looked into."""
    if keep is None:
        shutil.rmtree(scratch, ignore_errors=True)
        return None
    for entry in scratch.iterdir():
        if entry.name != keep:
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
    return scratch / keep


def asset_server(photo: bytes) -> tuple[Process, str]:
    """``serve`` in a process of its own: (the process, the photo's URL)."""
    ports: Queue[int] = Queue()
    server = Process(target=serve, args=(photo, ports), daemon=True)
    server.start()
    return server, f"http://127.0.0.1:{ports.get()}/photo.jpg"


def service_ready(redis_url: str, merchant: str) -> tuple[Any, Any]:
    """After ``django.setup()``: the scratch database migrated with the demo catalogue, the
    queues of ``redis_url`` emptied; (an API client with a new merchant's Sandbox key, the
    broker's Redis client)."""
    import redis
    from django.core.management import call_command
    from rest_framework.test import APIClient

    from labs.services import demo_catalogue_load
    from merchants.services import merchant_create

    call_command("migrate", verbosity=0)
    demo_catalogue_load()
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=merchant_create(name=merchant).sandbox_api_key)
    broker = redis.Redis.from_url(redis_url)
    broker.delete(*QUEUE_KEYS)
    return client, broker


def order_post(client: Any, asset_url: str, reference: str) -> int:
    """One 8x10" photo print of the photo at ``asset_url``, ordered through the API; its id."""
    body = {
        "merchantReference": reference,
        "shippingMethod": "Standard",
        "recipient": {
            "name": "Ada Lovelace",
            "address": {"line1": "1 Analytical Row", "postalOrZipCode": "SW1A 1AA",
                        "countryCode": "GB", "townOrCity": "London"},
        },
        "items": [{"sku": SKU, "copies": 1, "assets": [{"url": asset_url}]}],
    }  # fmt: skip
    response = client.post("/v4.0/orders", body, format="json")
    assert response.status_code == 200, response.content
    return int(response.json()["order"]["id"].removeprefix("ord_"))


@contextlib.contextmanager
def task_messages_held() -> Iterator[list[tuple[int, str]]]:
    """Within: the orders this process creates are not queued when they commit; their
    (order id, step) are collected instead, for the caller to queue (``order_enqueue``)."""
    from django.db import transaction
    from django.utils import timezone

    from orders.models import Order
    from orders.pipeline import scheduling

    held: list[tuple[int, str]] = []
    queue = scheduling.order_enqueue_on_commit

    def hold(*, order_id: int, step: str) -> None:
        # Marked as queued in the order's own transaction, as the service marks what it
        # queues: the sweeper does not queue it before the clock starts.
        Order.objects.filter(id=order_id).update(swept_at=timezone.now())
        transaction.on_commit(lambda: held.append((order_id, step)))

    scheduling.order_enqueue_on_commit = hold  # type: ignore[assignment]
    try:
        yield held
    finally:
        scheduling.order_enqueue_on_commit = queue


def rendering_process_start(media: str) -> None:
    """A process of the work-alone pool, set up as the images worker sets up its pool's
    processes (``config.celery_app``): Django, and ``RENDER_THREADS`` libvips threads a
    rendering."""
    os.environ["MEDIA_ROOT"] = media
    import django

    django.setup()
    from orders.artwork.printready import render_threads_set

    render_threads_set()


def render_once(args: tuple[str, str, int]) -> float:
    """CPU seconds of one render (the process's every thread: libvips works in several)."""
    source, media, n = args
    os.environ["MEDIA_ROOT"] = media
    import django

    django.setup()
    from orders.artwork.printready import render_print_ready

    started = time.process_time()
    render_print_ready(
        source=Path(source),
        target_width=PRINT_AREA[0],
        target_height=PRINT_AREA[1],
        dpi=300,
        sizing="fillPrintArea",
        storage_prefix=f"bench/{n}",
    )
    return time.process_time() - started


_session: Any = None  # a download-and-render process's kept HTTP session


def download_and_render_once(args: tuple[str, str, int]) -> float:
    """``render_once`` of a file of its own, downloaded first from ``url``: CPU seconds."""
    url, media, n = args
    os.environ["MEDIA_ROOT"] = media
    import django

    django.setup()
    from common.http import download_to_file, guarded_session

    global _session
    if _session is None:
        _session = guarded_session()
    started = time.process_time()
    destination = Path(media) / "downloads" / f"{n}.jpg"
    destination.parent.mkdir(parents=True, exist_ok=True)
    download_to_file(
        url, destination, max_bytes=100_000_000, deadline_seconds=60, session=_session, md5=False
    )
    spent = time.process_time() - started
    try:
        return spent + render_once((str(destination), media, n))
    finally:
        destination.unlink()


def printready_alone(
    source: str, media: str, orders: int, concurrency: int, *, download: bool = False
) -> tuple[float, float, dict[str, float]]:
    """Seconds (wall, and CPU summed over the processes) for ``orders`` renders of ``source``
    (``download``: each of a file of its own downloaded first from the URL ``source``) in a
    pool of ``concurrency`` warmed-up processes (started fresh, not forked: a child forked from
    a process whose libvips threads ran can hang), and the machine's CPU seconds meanwhile by
    kind (``machine_times``)."""
    run = download_and_render_once if download else render_once
    with ProcessPoolExecutor(
        max_workers=concurrency,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=rendering_process_start,
        initargs=(media,),
    ) as pool:
        list(pool.map(run, [(source, media, -n - 1) for n in range(concurrency)]))
        machine, started = machine_times(), time.perf_counter()
        cpu = sum(pool.map(run, [(source, media, n) for n in range(orders)]))
        wall = time.perf_counter() - started
        spent = {kind: seconds - machine[kind] for kind, seconds in machine_times().items()}
        return wall, cpu, spent


class Probed:
    """What ``bench/probe/sitecustomize.py`` counted in the workers' processes, summed over the
    processes of each kind (``pool``: prefork children; ``threads``: thread-pool workers):
    their CPU seconds, the seconds in renders, and by task name its seconds and runs."""

    def __init__(self) -> None:
        self.process: dict[str, float] = {}
        self.render = 0.0
        self.tasks: dict[tuple[str, str], list[float]] = {}

    @classmethod
    def read(cls, folder: Path) -> "Probed":
        found = cls()
        for path in sorted(folder.glob("*-*[0-9]")) if folder.is_dir() else []:
            kind = path.name.split("-", 1)[0]
            with contextlib.suppress(OSError, ValueError):
                first, *lines = path.read_text().splitlines()
                process, render = (float(word) for word in first.split())
                found.process[kind] = found.process.get(kind, 0.0) + process
                found.render += render
                for line in lines:
                    name, cpu, runs = line.split()
                    total = found.tasks.setdefault((kind, name), [0.0, 0.0])
                    total[0] += float(cpu)
                    total[1] += float(runs)
        return found

    def add_difference(self, after: "Probed", before: "Probed") -> None:
        """Add what was counted between ``before`` and ``after``."""
        for kind, seconds in after.process.items():
            spent = seconds - before.process.get(kind, 0.0)
            self.process[kind] = self.process.get(kind, 0.0) + spent
        self.render += after.render - before.render
        for key, (cpu, runs) in after.tasks.items():
            was = before.tasks.get(key, [0.0, 0.0])
            total = self.tasks.setdefault(key, [0.0, 0.0])
            total[0] += cpu - was[0]
            total[1] += runs - was[1]

    def report(self, orders: int) -> list[str]:
        lines = []
        for kind, label in (("pool", "the images pool's processes"), ("threads", "thread pool")):
            tasks = {name: v for (k, name), v in self.tasks.items() if k == kind}
            if kind not in self.process:
                continue
            in_tasks = sum(cpu for cpu, _ in tasks.values())
            shown = ", ".join(
                f"{name} {cpu / orders * 1000:.1f} ms in {runs / orders:.2f} runs"
                for name, (cpu, runs) in sorted(tasks.items(), key=lambda kv: -kv[1][0])
            )
            lines.append(f"  ({label} by the probe, per order: tasks {shown}")
            if kind == "pool":
                lines.append(f"   of which renders {self.render / orders * 1000:.1f} ms;")
            between = (self.process[kind] - in_tasks) / orders * 1000
            lines.append(f"   the process beyond its tasks {between:.1f} ms)")
        return lines


class IdleSampler:
    """Samples the machine's idle CPU time (``/proc/stat``) every ``every`` seconds, in a
    thread of its own, from its creation until ``stop``; ``tenths`` reads the samples."""

    def __init__(self, every: float = 0.05) -> None:
        self.samples: list[tuple[float, float]] = []
        self.stopped = threading.Event()
        self.every = every
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while True:
            self.samples.append((time.time(), machine_times()["idle"]))
            if self.stopped.wait(self.every):
                return

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()

    def tenths(self, start: float, stop: float) -> list[float]:
        """The CPUs' idle share in each tenth of [``start``, ``stop``], from the samples around
        it (interpolated linearly between them)."""
        cpus = os.cpu_count() or 1

        def idle_at(moment: float) -> float:
            before = max((s for s in self.samples if s[0] <= moment), default=self.samples[0])
            after = min((s for s in self.samples if s[0] >= moment), default=self.samples[-1])
            if after[0] == before[0]:
                return before[1]
            share = (moment - before[0]) / (after[0] - before[0])
            return before[1] + (after[1] - before[1]) * share

        step = (stop - start) / 10
        edges = [start + step * n for n in range(11)]
        return [(idle_at(b) - idle_at(a)) / (step * cpus) for a, b in itertools.pairwise(edges)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orders", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=(os.cpu_count() or 1) + 1)
    parser.add_argument("--one-worker", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, help="pipeline runs (median shown)")
    parser.add_argument(
        "--timeline", action="store_true", help="the CPUs' idle share by tenth of each run"
    )
    parser.add_argument(
        "--probe",
        action="store_true",
        help="split the images pool's CPU into renders, the rest of the tasks, and Celery",
    )
    options = parser.parse_args()
    database_url, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not database_url.startswith("postgres") or not redis_url:
        sys.exit("Set DATABASE_URL (PostgreSQL) and REDIS_URL: the workers need both.")

    admin_url, bench_name, scratch = bench_environment(database_url, "bench")
    photo = make_photo()
    source = scratch / "photo.jpg"
    source.write_bytes(photo)
    server, asset_url = asset_server(photo)

    import django

    django.setup()
    from django.db.models import Max

    from orders.models import Order
    from orders.pipeline.scheduling import order_enqueue

    client, _broker = service_ready(redis_url, "Bench")

    def order(n: int) -> int:
        return order_post(client, asset_url, f"bench-{n}")

    def wait(ids: list[int], timeout: float = 600) -> float:
        """Wait until every order in ``ids`` is Complete; the wall-clock time (``time.time()``)
        the last of them became Complete, as its row records it. The count is asked for rarely
        while many orders are left, often near the end: the bench's polling is no load on the
        pipeline it measures, and the clock stops when the last order did, not at a poll."""
        deadline = time.monotonic() + timeout
        while (left := len(ids) - Order.objects.filter(id__in=ids, stage="Complete").count()) > 0:
            if time.monotonic() > deadline:
                raise SystemExit("timed out; see the worker log in " + str(scratch))
            time.sleep(0.5 if left > 2 else 0.02)
        finished = Order.objects.filter(id__in=ids).aggregate(last=Max("last_updated"))["last"]
        return float(finished.timestamp())

    log = (scratch / "worker.log").open("wb")
    common = ["-l", "warning", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    # As deployed (README, "Queues and workers"): rendering and the other steps in a prefork
    # worker of --concurrency processes (with beat here), downloads, labs, callbacks and sweeps
    # in a thread-pool worker; --one-worker: one prefork worker takes every queue.
    if options.one_worker:
        workers = [
            [
                "-Q",
                "downloads,images,labs,callbacks,sweeps",
                "-P",
                "prefork",
                "-c",
                str(options.concurrency),
                "-B",
            ]
        ]
    else:
        workers = [
            [
                "-Q",
                "images",
                "-P",
                "prefork",
                "-c",
                str(options.concurrency),
                "-B",
                "-n",
                "images@%h",
            ],
            ["-Q", "downloads,labs,callbacks,sweeps", "-P", "threads", "-c", "8", "-n", "io@%h"],
        ]
    environment = os.environ.copy()
    probes = scratch / "probe"
    if options.probe:  # bench/probe/sitecustomize.py, in the workers' processes only
        probes.mkdir()
        paths = [str(ROOT / "bench" / "probe"), environment.get("PYTHONPATH", "")]
        environment.update(PYTHONPATH=os.pathsep.join(filter(None, paths)))
        environment.update(BENCH_PROBE_DIR=str(probes))
    started_workers = [
        subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", *queues, *common,
             "-s", str(scratch / "beat-schedule")],
            cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for queues in workers
    ]  # fmt: skip

    # The work alone runs before and after each pipeline run (the mean of the two is its
    # baseline), so a change in the machine's speed during the run falls on every side alike.
    def alone(download: bool) -> tuple[float, float, dict[str, float]]:
        what = asset_url if download else str(source)
        media = str(scratch / "media")
        return printready_alone(what, media, options.orders, options.concurrency, download=download)

    alones, floors = [alone(download=False)], [alone(download=True)[0]]
    loads = [os.getloadavg()[0]]
    names = ["images worker", "downloads worker"] if not options.one_worker else ["worker"]
    groups = {}
    for label, worker in zip(names, started_workers, strict=True):
        # The worker's main process (broker, pool, beat) apart from its pool's processes.
        groups[f"{label}: main process"] = (lambda main: lambda pid, name, sid: pid == main)(
            worker.pid
        )
        groups[f"{label}: pool"] = (lambda session: lambda pid, name, sid: sid == session)(
            worker.pid
        )
    groups.update({
        "asset server": lambda pid, name, sid: pid == server.pid,
        "this bench (polling)": lambda pid, name, sid: pid == os.getpid(),
        "postgres": lambda pid, name, sid: name.startswith("postgres"),
        "redis": lambda pid, name, sid: name.startswith("redis"),
    })  # fmt: skip
    meter = CpuMeter(groups)
    posts: list[float] = []  # this process's CPU seconds posting each run's orders

    runs: list[float] = []  # the pipeline's seconds, run by run
    probe = Probed()  # --probe: the workers' CPU by task
    timelines: list[list[float]] = []  # --timeline: each run's idle share by tenth
    cpu: dict[str, float] = {}  # CPU seconds by group over every run
    system: dict[str, float] = {}  # the part of it in the kernel
    machine: dict[str, float] = {}
    try:
        # Warm-up: a run's worth of orders at once (at least four per rendering process), so
        # every process of the images pool and every thread of the downloads pool has run the
        # steps (imports, connections, the catalogue snapshot, statements prepared and past
        # PostgreSQL's first custom plans) as a long-running deployment's have.
        wait([order(-n - 1) for n in range(max(options.orders, 4 * options.concurrency))])
        for repeat in range(options.repeat):
            # The orders are posted before the clock starts, their tasks queued when it does.
            posting = time.process_time()
            with task_messages_held() as held:
                ids = [order(repeat * options.orders + n) for n in range(options.orders)]
            posts.append(time.process_time() - posting)
            meter.start()
            probed = Probed.read(probes)
            sampling = IdleSampler() if options.timeline else None
            started = time.time()
            for order_id, step in held:
                order_enqueue(order_id=order_id, step=step)
            runs.append(wait(ids) - started)
            if sampling is not None:
                sampling.stop()
                timelines.append(sampling.tenths(started, started + runs[-1]))
            for label, seconds in meter.stop().items():
                cpu[label] = cpu.get(label, 0.0) + seconds
                system[label] = system.get(label, 0.0) + meter.system[label]
            for kind, seconds in meter.machine.items():
                machine[kind] = machine.get(kind, 0.0) + seconds
            if options.probe:  # after the meter: the wait is no part of the run's CPU
                time.sleep(0.2)  # the last tasks' totals written
                probe.add_difference(Probed.read(probes), probed)
            loads.append(os.getloadavg()[0])
            alones.append(alone(download=False))
            floors.append(alone(download=True)[0])
    finally:
        for worker in started_workers:
            os.killpg(worker.pid, signal.SIGTERM)
        for worker in started_workers:
            worker.wait(timeout=30)
        server.kill()
    from django.db import connections

    connections.close_all()
    recreate(admin_url, bench_name, drop_only=True)
    kept = scratch_remove(scratch, keep="probe" if PROFILED and options.probe else None)

    # Each run against the mean of the work alone just before and just after it.
    baselines = [(alones[n][0] + alones[n + 1][0]) / 2 for n in range(len(runs))]
    floor_baselines = [(floors[n] + floors[n + 1]) / 2 for n in range(len(runs))]
    ratios = [run / baseline for run, baseline in zip(runs, baselines, strict=True)]
    floor_ratios = [f / b for f, b in zip(floor_baselines, baselines, strict=True)]
    orders = options.orders * len(runs)
    out = io.StringIO()
    print(f"{options.orders} orders a run, {len(runs)} run(s), {options.concurrency} worker "
          f"processes, {SOURCE_SIZE[0]}x{SOURCE_SIZE[1]} JPEG ({len(photo) / 1e6:.1f} MB) to "
          f"{PRINT_AREA[0]}x{PRINT_AREA[1]}", file=out)  # fmt: skip
    for n, (run, baseline, floor, ratio, floor_ratio) in enumerate(
        zip(runs, baselines, floor_baselines, ratios, floor_ratios, strict=True), 1
    ):
        print(
            f"run {n}: pipeline {run:6.2f} s ({options.orders / run * 60:6.1f} orders/min), "
            f"print-ready alone {baseline:6.2f} s, download and print-ready alone {floor:6.2f} s: "
            f"ratio {ratio:.2f}x (the download and fresh file alone {floor_ratio:.2f}x)",
            file=out,
        )
    for n, tenths in enumerate(timelines, 1):
        shown = " ".join(f"{share * 100:3.0f}" for share in tenths)
        print(f"run {n}: the CPUs idle by tenth of the run (%): {shown}", file=out)
    shown_loads = ", ".join(f"{load:.1f}" for load in loads)
    print(f"load average (1 min) before the first run and after each: {shown_loads}", file=out)
    print(
        f"ratio (orchestration overhead): {statistics.median(ratios):.2f}x"
        + (f" (median of {len(ratios)}; {min(ratios):.2f}x to {max(ratios):.2f}x)"
           if len(ratios) > 1 else ""),
        file=out,
    )  # fmt: skip
    print(
        f"  of which the download and the fresh file alone: {statistics.median(floor_ratios):.2f}x",
        file=out,
    )
    print("CPU during the pipeline, per order:", file=out)
    for label, seconds in cpu.items():
        if not seconds:  # a thread-pool worker has no pool processes
            continue
        kernel = system[label] / orders * 1000
        print(f"  {label:<34} {seconds / orders * 1000:7.1f} ms (system {kernel:.1f})", file=out)
    for line in probe.report(orders):
        print(line, file=out)
    biggest = sorted(meter.others.items(), key=lambda kv: -kv[1])[:4]
    shown = ", ".join(f"{name} {seconds / orders * 1000:.1f}" for name, seconds in biggest)
    print(f"  (other, by command: {shown})", file=out)
    total = sum(cpu.values())
    print(f"  {'all':<34} {total / orders * 1000:7.1f} ms", file=out)
    if probe.render:
        # Both from the same runs: steadier than the rates, which move with the machine's load.
        # The bench's own polling is not the pipeline's; the asset server is (the merchant's
        # host, its side of every download).
        pipeline = total - cpu["this bench (polling)"]
        beside = pipeline - probe.render
        print(f"  beside the renders (all but the renders' own CPU and this bench's): "
              f"{beside / orders * 1000:.1f} ms, {beside / probe.render * 100:.1f}% of the "
              f"renders' CPU (the pipeline's CPU {pipeline / probe.render:.2f}x its renders')",
              file=out)  # fmt: skip
    kinds = ("user", "system", "softirq", "irq", "steal", "idle", "iowait")
    shown = ", ".join(f"{kind} {machine.get(kind, 0.0) / orders * 1000:.1f}" for kind in kinds)
    print(f"the machine's CPUs by kind, per order (ms): {shown}", file=out)
    renders = options.orders * len(alones)
    shown = ", ".join(
        f"{kind} {sum(spent.get(kind, 0.0) for _, _, spent in alones) / renders * 1000:.1f}"
        for kind in kinds
    )
    print(f"  the same during print-ready alone, per render: {shown}", file=out)
    render_cpu = sum(spent for _, spent, _ in alones) / len(alones) / options.orders
    print(f"CPU of one render alone: {render_cpu * 1000:.1f} ms", file=out)
    posted = sum(posts) / orders * 1000
    print(f"CPU of this bench posting an order through the API, before the clock: {posted:.1f} ms",
          file=out)  # fmt: skip
    if kept is not None:
        print(f"the workers' profiles (cProfile, CPU time): {kept}/pool-*.prof (the images "
              f"pool's processes), {kept}/threads-*.prof (the thread pool's threads)",
              file=out)  # fmt: skip
    print(out.getvalue(), end="")


if __name__ == "__main__":
    main()
