"""Print-ready benchmark: ``render_print_ready`` beside a bare pyvips thumbnail + jpegsave.

Run from the project root::

    .venv/bin/python bench/bench_printready.py [--runs 3]

It writes a 6000x4000 (24-megapixel) JPEG with photo-like content (gradients and noise), then
renders it to a 7200x4800 print area several times per case, each run in a fresh Python process
so one run's memory cannot hide in another's (after one warm-up run on a 120x80 copy, as in a
worker that has rendered before). Wall time is measured inside the child around the
work alone, with the CPU time of all its threads; peak memory is the child's ``ru_maxrss`` from
``os.wait4`` (whole process: the interpreter and its imports, listed separately, are part of
it). Runs are interleaved, every case once per round. It prints the median time and CPU time
and the highest peak per case, and the ratios of ``render_print_ready`` to the bare pipeline.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE_SIZE = (6000, 4000)
PRINT_AREA = (7200, 4800)

CASES = {
    "bare": "bare pyvips thumbnail + jpegsave",
    "bare-crop": "bare pyvips thumbnail(crop=centre) + jpegsave",
    "render": "render_print_ready fillPrintArea",
    "render-rotated": "render_print_ready fillPrintArea, portrait area (turned)",
}


def make_photo(path: Path) -> None:
    import pyvips

    width, height = SOURCE_SIZE
    xy = pyvips.Image.xyz(width, height)
    across, down = xy[0] * (255 / width), xy[1] * (255 / height)
    noise = pyvips.Image.gaussnoise(width, height, sigma=28)
    fine = pyvips.Image.gaussnoise(width // 8, height // 8, sigma=60).resize(8)
    red = across * 0.7 + fine * 0.5 + noise + 30
    green = down * 0.8 + fine * 0.3 + noise * 0.8 + 20
    blue = (across + down) * 0.4 + fine * 0.6 + noise * 1.2
    photo = red.bandjoin([green, blue]).cast("uchar").copy(interpretation="srgb")
    photo.jpegsave(str(path), Q=90)


def child(case: str, source: str, scratch: str) -> None:
    """One measured run; prints its own timing and import-time memory as JSON."""
    import resource

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    os.environ["MEDIA_ROOT"] = str(Path(scratch) / "media")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    import pyvips

    from orders.artwork.printready import render_print_ready

    pyvips.cache_set_max(0)
    imports_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    def run(source: str, width: int, height: int) -> None:
        if case == "bare":
            pyvips.Image.thumbnail(source, width, height=height).jpegsave(
                str(Path(scratch) / "bare.jpg"), Q=95
            )
        elif case == "bare-crop":
            pyvips.Image.thumbnail(source, width, height=height, crop="centre").jpegsave(
                str(Path(scratch) / "bare.jpg"), Q=95
            )
        else:
            target = (height, width) if case == "render-rotated" else (width, height)
            render_print_ready(
                source=Path(source),
                target_width=target[0],
                target_height=target[1],
                dpi=300,
                sizing="fillPrintArea",
                storage_prefix="bench",
            )

    # A worker renders many images: its libvips operations are looked up and its code paths
    # run once before the measured run, on a small image of the same kind.
    small = Path(scratch) / f"warm-up-{case}.jpg"
    pyvips.Image.thumbnail(source, 120, height=80).jpegsave(str(small), Q=90)
    run(str(small), PRINT_AREA[0] // 50, PRINT_AREA[1] // 50)
    width, height = PRINT_AREA
    started = time.perf_counter()
    cpu_started = time.process_time()
    run(source, width, height)
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    print(json.dumps({"seconds": elapsed, "cpu": cpu, "imports_kb": imports_kb}))


def measure(case: str, source: Path, scratch: Path) -> tuple[float, float, float, float]:
    """(seconds, peak RSS MB, RSS after imports MB, CPU seconds of every thread) of one run in
    a fresh process."""
    process = subprocess.Popen(
        [sys.executable, __file__, "--child", case, str(source), str(scratch)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "LOG_LEVEL": "WARNING"},
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{case} failed with exit code {process.returncode}")
    report = json.loads(output)
    return report["seconds"], usage.ru_maxrss / 1024, report["imports_kb"] / 1024, report["cpu"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per case (default 3)")
    parser.add_argument(
        "--child", nargs=3, metavar=("CASE", "SOURCE", "SCRATCH"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    with tempfile.TemporaryDirectory(prefix="bench-printready-") as scratch_dir:
        scratch = Path(scratch_dir)
        source = scratch / "photo.jpg"
        make_photo(source)
        megapixels = SOURCE_SIZE[0] * SOURCE_SIZE[1] / 1e6
        concurrency = os.environ.get("VIPS_CONCURRENCY", "default")
        print(
            f"source {SOURCE_SIZE[0]}x{SOURCE_SIZE[1]} JPEG ({megapixels:.0f} MP, "
            f"{source.stat().st_size / 1e6:.1f} MB) -> print area {PRINT_AREA[0]}x{PRINT_AREA[1]}; "
            f"{args.runs} runs per case, each in a fresh process; "
            f"cpus {os.cpu_count()}, VIPS_CONCURRENCY={concurrency}"
        )
        print(f"{'case':58} {'time s':>8} {'cpu s':>7} {'peak MB':>8} {'imports MB':>11}")
        # Runs interleaved (every case once per round), so a change in the machine's load falls
        # on every case alike; CPU time (all threads) is steadier than wall time under load.
        runs: dict[str, list[tuple[float, float, float, float]]] = {case: [] for case in CASES}
        for _ in range(args.runs):
            for case in CASES:
                runs[case].append(measure(case, source, scratch))
        results: dict[str, tuple[float, float, float]] = {}
        for case, label in CASES.items():
            seconds = statistics.median(run[0] for run in runs[case])
            peak = max(run[1] for run in runs[case])
            imports = max(run[2] for run in runs[case])
            cpu = statistics.median(run[3] for run in runs[case])
            results[case] = (seconds, peak, cpu)
            print(f"{label:58} {seconds:8.2f} {cpu:7.2f} {peak:8.0f} {imports:11.0f}")
        bare_s, bare_mb, bare_cpu = results["bare"]
        for case in ("render", "render-rotated"):
            seconds, peak, cpu = results[case]
            print(
                f"ratio {case} / bare: time {seconds / bare_s:.2f}x, cpu {cpu / bare_cpu:.2f}x, "
                f"peak memory {peak / bare_mb:.2f}x"
            )


if __name__ == "__main__":
    main()
