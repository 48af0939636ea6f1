"""A probe in the bench's workers (``bench_pipeline.py --probe``): where a worker spends its CPU.

Python imports this module at start-up in every process started with ``bench/probe`` on its
``PYTHONPATH`` and ``BENCH_PROBE_DIR`` set (the bench's workers only). It counts the CPU seconds
each task takes, by task name, and within them the seconds in ``render_print_ready``: in a
prefork child (one task at a time) the whole process's CPU (``time.process_time``, libvips'
threads with it), in a thread-pool worker the task's thread's (``time.thread_time``). After
each task it writes the process's running totals to ``<BENCH_PROBE_DIR>/<kind>-<pid>`` (kind
``pool`` or ``threads``): a first line "process-CPU render-CPU", then "task-name CPU runs" a
line. The bench reads the files before and after a run: what a process spent beyond its tasks
is Celery's own work between them.
"""

import cProfile
import os
import threading
import time
from pathlib import Path
from typing import Any

FOLDER = os.environ.get("BENCH_PROBE_DIR", "")
# BENCH_PROBE_PROFILE=1: each prefork child also profiles its tasks (cProfile, in CPU time), its
# statistics written to ``pool-<pid>.prof`` after each task, and each thread of a thread-pool
# worker its own (in its thread's CPU time) to ``threads-<pid>-<thread>.prof``: where the steps
# spend CPU; the profiler's own cost makes the bench's other numbers meaningless then.
PROFILE = os.environ.get("BENCH_PROBE_PROFILE") == "1"


class _Totals:
    def __init__(self, kind: str, clock: Any) -> None:
        self.kind, self.clock = kind, clock
        self.render = 0.0
        self.tasks: dict[str, list[float]] = {}  # name: [CPU seconds, runs]
        self.local = threading.local()
        self.lock = threading.Lock()

    def _profile(self) -> cProfile.Profile | None:
        """This thread's profiler (a prefork child has one thread running tasks). One per
        thread works up to Python 3.11, the project's; from 3.12 a profiler is the process's,
        and a second thread's ``enable`` raises."""
        if not PROFILE:
            return None
        if getattr(self.local, "profile", None) is None:
            self.local.profile = cProfile.Profile(self.clock)
        return self.local.profile  # type: ignore[no-any-return]

    def started(self) -> None:
        self.local.started = self.clock()
        if (profile := self._profile()) is not None:
            profile.enable()

    def ended(self, name: str) -> None:
        if (profile := self._profile()) is not None:
            profile.disable()
            thread = "" if self.kind == "pool" else f"-{threading.get_ident()}"
            profile.dump_stats(Path(FOLDER) / f"{self.kind}-{os.getpid()}{thread}.prof")
        spent = self.clock() - getattr(self.local, "started", self.clock())
        with self.lock:  # one writer at a time, and the file replaced whole: never half read
            total = self.tasks.setdefault(name, [0.0, 0])
            total[0] += spent
            total[1] += 1
            lines = [f"{time.process_time()} {self.render}"]
            lines += [f"{task} {cpu} {runs}" for task, (cpu, runs) in self.tasks.items()]
            path = Path(FOLDER) / f"{self.kind}-{os.getpid()}"
            partial = path.with_name(path.name + ".part")
            partial.write_text("\n".join(lines) + "\n")
            os.replace(partial, path)


def _install() -> None:
    from celery import signals

    totals = {"now": _Totals("threads", time.thread_time)}

    @signals.worker_process_init.connect(weak=False)
    def _child(**_kwargs: object) -> None:  # a prefork child: one task at a time
        from orders.pipeline.steps import prepare

        child = totals["now"] = _Totals("pool", time.process_time)
        render = prepare.render_print_ready

        def timed(*args: Any, **kwargs: Any) -> Any:
            begun = time.process_time()
            try:
                return render(*args, **kwargs)
            finally:
                child.render += time.process_time() - begun

        prepare.render_print_ready = timed  # type: ignore[assignment]

    @signals.task_prerun.connect(weak=False)
    def _task_started(**_kwargs: object) -> None:
        totals["now"].started()

    @signals.task_postrun.connect(weak=False)
    def _task_ended(sender: Any = None, **_kwargs: object) -> None:
        totals["now"].ended(getattr(sender, "name", "?").rsplit(".", 1)[-1])


if FOLDER:
    _install()
