"""Bounded lanes for slow outbound work, so that slow hosts cannot take every worker thread.

**Slow downloads.** A download waits on the merchant's asset host, and a host that drips a
byte a second holds a download thread for the whole download deadline. The merchants' share
(``orders.pipeline.claims``) bounds one merchant, not many: four merchants with slow hosts
filled every thread. So every download keeps a pace (``download_pace``: at least
``SLOW_DOWNLOAD_MIN_BYTES_PER_SECOND`` on average, checked every
``SLOW_DOWNLOAD_CHECK_SECONDS``); one that falls behind stops, and its host is remembered as
slow for ``SLOW_HOST_MEMORY_SECONDS``. A download from a host remembered as slow runs only in
the slow lane: with a place among ``SLOW_DOWNLOADS`` at once over all workers, and among
``SLOW_DOWNLOADS_PER_HOST`` from its host, taken before it starts and held until it ends
(``slow_download_place``); with no place free it is not started and waits
``DOWNLOAD_DEFER_SECONDS``, holding no thread. So slow transfers hold at most
``SLOW_DOWNLOADS`` download threads for long, whatever the number of merchants or hosts, and a
slow host costs another thread a pace check's seconds at most once per memory period.

**Lab calls.** The pipeline's calls to a real lab (submission, progress) run on the ``labs``
queue's threads; a lab whose site hangs holds each call for its whole timeout. At most
``LAB_CALLS_PER_LAB`` of one lab's calls run at once over all workers (``lab_call_place``); a
step that finds its lab's places taken does not call it and tries again
``LAB_BUSY_RETRY_SECONDS`` later, so a hanging site holds that many threads at most and the
other labs' orders go on.

A host is its name and port as the URL gives them (``asset_host``).
"""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache

from common.concurrency import places_held
from common.http import Pace

logger = logging.getLogger(__name__)
# The cache key that says a host was found slow (``slow_host_remember``).
_SLOW_HOST = "slow-download-host:{}"
# A place outlives the download it was taken for by this much at most (a worker that died).
_PLACE_MARGIN_SECONDS = 60.0


def asset_host(url: str) -> str:
    """The host a download goes to: its name and port (``example.com:443``), lower case."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        return url.lower()
    return f"{(parts.hostname or '').lower()}:{port}"


def download_pace() -> Pace:
    """The least a download must average before it is moved to the slow lane."""
    return Pace(
        check_seconds=settings.SLOW_DOWNLOAD_CHECK_SECONDS,
        min_bytes_per_second=settings.SLOW_DOWNLOAD_MIN_BYTES_PER_SECOND,
    )


def slow_host_remember(host: str) -> None:
    """Remember ``host`` as slow: its downloads run in the slow lane for a while (without a
    cache: not remembered, its downloads keep their pace check)."""
    try:
        cache.set(
            _SLOW_HOST.format(host), 1, timeout=max(1, int(settings.SLOW_HOST_MEMORY_SECONDS))
        )
    except Exception:
        logger.exception("Slow host %s could not be remembered", host)


def slow_host_known(host: str) -> bool | None:
    """Whether a download from ``host`` was found slow within ``SLOW_HOST_MEMORY_SECONDS``;
    None when the cache cannot be read (then there is no slow lane: downloads run unpaced, as
    a download stopped for its pace could not be sent to the lane)."""
    try:
        return cache.get(_SLOW_HOST.format(host)) is not None
    except Exception:
        logger.exception("Whether host %s is slow could not be read: no slow lane", host)
        return None


@contextmanager
def slow_download_place(host: str) -> Iterator[bool]:
    """Whether a place in the slow lane was taken for one download from ``host``: one of
    ``SLOW_DOWNLOADS`` over all workers and of ``SLOW_DOWNLOADS_PER_HOST`` for the host, held
    until the block ends."""
    limits = {
        "slow-downloads": settings.SLOW_DOWNLOADS,
        f"slow-downloads:{host}": settings.SLOW_DOWNLOADS_PER_HOST,
    }
    seconds = settings.ASSET_DOWNLOAD_DEADLINE_SECONDS + _PLACE_MARGIN_SECONDS
    with places_held(limits, seconds=seconds) as taken:
        yield taken


def slow_lane_wait() -> timedelta:
    """How long a download that found the slow lane full waits before it asks again."""
    return timedelta(seconds=settings.DOWNLOAD_DEFER_SECONDS)


@contextmanager
def lab_call_place(lab_code: str) -> Iterator[bool]:
    """Whether a place was taken for one pipeline call to lab ``lab_code`` (one of
    ``LAB_CALLS_PER_LAB`` over all workers), held until the block ends."""
    seconds = settings.SITEFLOW_TIMEOUT_SECONDS + _PLACE_MARGIN_SECONDS
    with places_held({f"lab-calls:{lab_code}": settings.LAB_CALLS_PER_LAB}, seconds=seconds) as t:
        yield t


def lab_busy_retry() -> timedelta:
    """How long a step that found its lab's places taken waits before it asks again."""
    return timedelta(seconds=settings.LAB_BUSY_RETRY_SECONDS)
