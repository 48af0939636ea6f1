"""Leases: a worker's claim on a row of work is short, and kept alive while the worker runs.

A claim is two columns of the row: ``claimed_until``, the end of the lease, and
``claim_token``, which names the claim (``claim_token_new``). The lease lasts
``PIPELINE_CLAIM_SECONDS`` (``lease_until``): a worker that dies stops renewing it, so the row
is due again within that time and the sweepers queue it. A worker's own writes to the row are
conditional on the token, so a renewal (which moves only ``claimed_until``) never makes them
fail, and a claim taken over (a new token) or dropped by an action always does.

While the work runs, a ``Heartbeat`` renews the lease every third of its length from a thread
of its own (with a database connection of its own), whatever the work is doing: a download, a
rendering, a lab call. A renewal that finds the claim gone marks the heartbeat ``lost`` and
stops; ``check`` then raises ``ClaimLost`` before the work sends anything more, and the work's
conditional writes find the claim gone too, so nothing of it commits.
"""

import heapq
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from types import TracebackType

from django.conf import settings
from django.db import connections
from django.utils import timezone

logger = logging.getLogger(__name__)


class ClaimLost(Exception):
    """Another worker took the work over (our lease expired), or an action dropped our claim:
    our changes must roll back."""


def lease_seconds() -> float:
    """How long a claim lasts unless renewed (``PIPELINE_CLAIM_SECONDS``)."""
    return float(settings.PIPELINE_CLAIM_SECONDS)


def lease_until(now: datetime | None = None) -> datetime:
    """The end of a lease taken or renewed at ``now`` (by default, now)."""
    return (now or timezone.now()) + timedelta(seconds=lease_seconds())


def claim_token_new() -> int:
    """A token for a new claim: positive, fits a signed 64-bit column, and for all practical
    purposes never the token of another claim of the same row."""
    return secrets.randbits(62) + 1


class Heartbeat:
    """Renews a claim every third of the lease while the block it guards runs (``with``).

    ``renew`` extends the lease, conditional on the claim still being ours, and says whether it
    was. It runs in the heartbeat's thread, never in the caller's: a renewal that waits for a
    row lock the caller's own transaction holds waits until that commits, and the caller is
    never held up by it. The thread is a daemon, stopped (not joined) when the block ends; a
    renewal after that counts for nothing. It closes its database connection when it stops.

    Most blocks end before their first renewal is due: the thread is started only then (by
    the process's one ``_Starter``), so such a block costs no thread.
    """

    def __init__(self, renew: Callable[[], bool], *, name: str) -> None:
        self._renew = renew
        self._name = name
        self._stopped = threading.Event()
        self.lost = False

    def __enter__(self) -> "Heartbeat":
        _STARTER.start_at(time.monotonic() + lease_seconds() / 3, self)
        return self

    def beat(self) -> None:
        """Start renewing (the first renewal now) in a thread of its own, unless stopped."""
        if not self._stopped.is_set():
            name = f"heartbeat {self._name}"
            threading.Thread(target=self._run, name=name, daemon=True).start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stopped.set()

    def check(self) -> None:
        """Raise ``ClaimLost`` once a renewal has found the claim gone."""
        if self.lost:
            raise ClaimLost(f"{self._name}: claim lost")

    def _run(self) -> None:
        period = lease_seconds() / 3
        try:
            while not self._stopped.is_set():
                try:
                    renewed = self._renew()
                except Exception:
                    # The database away for a moment: the next beat tries again (the lease
                    # outlasts two missed beats).
                    logger.warning("%s: lease not renewed", self._name, exc_info=True)
                    connections.close_all()
                    continue
                if not renewed:
                    if not self._stopped.is_set():
                        self.lost = True
                        logger.warning("%s: claim lost; the work stops", self._name)
                    return
                self._stopped.wait(period)
        finally:
            connections.close_all()  # this thread's own connections


class _Starter:
    """The process's one thread that starts each heartbeat's own thread when its first
    renewal is due (a heartbeat stopped by then is dropped). Started on first use, and again
    in a process forked from one that had it (a prefork pool's child)."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, Heartbeat]] = []
        self._condition = threading.Condition()
        self._pid = 0
        self._count = 0

    def start_at(self, at: float, heartbeat: Heartbeat) -> None:
        with self._condition:
            if self._pid != os.getpid():  # none yet in this process
                self._pid, self._due = os.getpid(), []
                threading.Thread(target=self._run, name="heartbeats", daemon=True).start()
            self._count += 1
            heapq.heappush(self._due, (at, self._count, heartbeat))
            self._condition.notify()

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._due or self._due[0][0] > time.monotonic():
                    wait = self._due[0][0] - time.monotonic() if self._due else None
                    self._condition.wait(wait)
                _, _, heartbeat = heapq.heappop(self._due)
            heartbeat.beat()

    def forked(self) -> None:
        """In a forked child: nothing inherited (the thread did not come along)."""
        self._due, self._condition, self._pid = [], threading.Condition(), 0


_STARTER = _Starter()
os.register_at_fork(after_in_child=_STARTER.forked)
