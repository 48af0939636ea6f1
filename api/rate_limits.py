"""The base of every rate limit: counts atomically in Redis, and fails open when it is down.

With Redis as the cache, a request is counted by one Lua script (run by Redis atomically,
so concurrent requests on any number of processes and hosts never count over each
other): the window's timestamps live in a sorted set under the throttle's key, with Redis's own
clock, and a request is added only while fewer than the limit are inside the window. Exactly
the limit passes in any window, however many requests arrive at once.

Without Redis (the embedded default of one machine: a file cache) the window is cut into
``WINDOW_BUCKETS`` buckets and a request counts in its bucket of its process, in memory; each
process publishes its counts in one small cache entry per key and reads the others' at most
every ``SHARE_SECONDS``, and always before it refuses. A bucket counts until all of it has left
the window. So one process never passes more than the limit, and several pass at most what
the others served since the last exchange beyond it. DRF's own count wrote the cache on every
request (a temporary file and a rename) with every request's timestamp in the window: at a
few hundred requests a second, tens of thousands of them pickled per request.

A cache outage must not turn every request into a 500: the request is let through, the
failure logged and counted (``RATE_LIMIT_FAILURES``), and the limits apply again as soon as
the cache answers.
"""

import logging
import math
import os
import threading
import time
from typing import Any

import redis
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from redis.commands.core import Script
from redis.exceptions import NoScriptError
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from common.addresses import client_address

logger = logging.getLogger(__name__)
RATE_LIMIT_FAILURES = {"count": 0}

# KEYS[1]: the sorted set of the window; ARGV: limit, window (milliseconds), a unique member.
# Answers {1, 0} when the request is counted, else {0, milliseconds until a place frees up}.
SLIDING_WINDOW_SCRIPT = """
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) < limit then
    redis.call('ZADD', key, now, ARGV[3])
    redis.call('PEXPIRE', key, window)
    return {1, 0}
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
if oldest[2] == nil then
    return {0, window}
end
return {0, tonumber(oldest[2]) + window - now}
"""


# The script bound to a Redis client of this process, by the cache's location.
_window_scripts: dict[str, Script] = {}


def _window_script(location: str) -> Script:
    """The script on a client of this process for the cache's Redis (its first server, where
    the cache writes), made once per location: building a client per request cost as much as
    the round trip. (Django's Redis cache offers no public access to its own client.)"""
    script = _window_scripts.get(location)
    if script is None:
        client = redis.Redis.from_url(location)
        script = _window_scripts[location] = client.register_script(SLIDING_WINDOW_SCRIPT)
    return script


def _cache_location(alias: str = "default") -> str:
    location = settings.CACHES[alias]["LOCATION"]
    servers = location.split(",") if isinstance(location, str) else list(location)
    return str(servers[0]).strip()


# This thread's own connection for the script, with the location and process it is for.
_held = threading.local()


def _window_run(location: str, key: str, *args: Any) -> Any:
    """The script's answer for ``key`` and ``args``, run on a connection this thread keeps to
    the cache's Redis: the client's own call (a connection taken from its pool and given back,
    with its checks) cost twice the round trip itself. As the client would: a connection the
    server dropped is opened again and the script sent once more, and a server that lost its
    scripts (restarted) is given the script again."""
    script = _window_script(location)
    owner = (location, os.getpid())
    held = getattr(_held, "connection", None)
    if held is None or held[0] != owner:
        client: Any = script.registered_client  # a Redis client: made by _window_script
        pool = client.connection_pool
        held = _held.connection = (owner, pool.make_connection())
    connection = held[1]

    def run() -> Any:
        connection.send_command("EVALSHA", script.sha, 1, key, *args)
        return connection.read_response()

    try:
        return run()
    except redis.ConnectionError:  # closed by the client on the error: opened again
        return run()
    except NoScriptError:
        script.registered_client.script_load(script.script)
        return run()


def redis_count_request(cache: RedisCache, key: str, limit: int, seconds: int) -> float | None:
    """Count one request under ``key`` if fewer than ``limit`` were counted in the last
    ``seconds``: ``None`` when counted, else the seconds until the oldest leaves the window."""
    counted, wait_ms = _window_run(
        _cache_location(),
        cache.make_and_validate_key(f"{key}:window"),
        limit,
        seconds * 1000,
        os.urandom(8).hex(),
    )
    return None if counted else max(int(wait_ms), 1) / 1000


WINDOW_BUCKETS = 12
# How stale one process's view of the other processes' counts may be (embedded default).
SHARE_SECONDS = 1.0


class _ProcessWindow:
    """One key's counts as this process sees them: its own by bucket, exact, and the other
    processes' as of the last exchange through the cache."""

    def __init__(self) -> None:
        self.own: dict[int, int] = {}
        self.others: dict[int, int] = {}
        self.shared_at = -math.inf
        self.published = False


_windows: dict[str, _ProcessWindow] = {}


def _recent(counts: dict[int, int], kept: int) -> dict[int, int]:
    return {bucket: n for bucket, n in counts.items() if bucket >= kept}


def _share(window: _ProcessWindow, key: str, kept: int, seconds: int, now: float) -> None:
    """Publish this process's counts in the key's cache entry and read the others'. An entry
    that lost this process's counts (the cache was cleared) restarts them."""
    cache = caches["default"]
    entry: dict[int, dict[int, int]] = cache.get(key) or {}
    pid = os.getpid()
    if window.published and pid not in entry:
        window.own = {}
    window.own = _recent(window.own, kept)
    entry = {p: c for p, c in ((p, _recent(c, kept)) for p, c in entry.items()) if c}
    entry[pid] = window.own
    window.others = {}
    for other, counts in entry.items():
        if other != pid:
            for bucket, n in counts.items():
                window.others[bucket] = window.others.get(bucket, 0) + n
    cache.set(key, entry, seconds)
    window.shared_at, window.published = now, True


def bucket_count_request(key: str, limit: int, seconds: int) -> float | None:
    """Count one request under ``key`` if fewer than ``limit`` were counted (by every process)
    in the buckets of the last ``seconds``: ``None`` when counted, else the seconds until the
    oldest bucket leaves the window."""
    now = time.time()
    width = seconds / WINDOW_BUCKETS
    current = math.floor(now / width)
    kept = current - WINDOW_BUCKETS + 1
    window = _windows.setdefault(key, _ProcessWindow())

    def counted() -> dict[int, int]:
        total = _recent(window.own, kept)
        for bucket, n in _recent(window.others, kept).items():
            total[bucket] = total.get(bucket, 0) + n
        return total

    fresh = now - window.shared_at >= SHARE_SECONDS
    if fresh:
        _share(window, key, kept, seconds, now)
    counts = counted()
    if sum(counts.values()) >= limit and not fresh:
        _share(window, key, kept, seconds, now)  # refuse on fresh figures only
        counts = counted()
    if sum(counts.values()) >= limit:
        return max((min(counts) + WINDOW_BUCKETS) * width - now, 0.001)
    window.own[current] = window.own.get(current, 0) + 1
    return None


class FailOpenRateThrottle(SimpleRateThrottle):
    redis_wait: float | None = None

    def get_ident(self, request: Request) -> str:
        """The client's address, as everything reads it (``common.addresses``)."""
        return client_address(request)

    def allow_request(self, request: Request, view: Any) -> bool:
        try:
            return self._count(request, view)
        except Exception:
            RATE_LIMIT_FAILURES["count"] += 1
            logger.warning(
                "Rate limit %s not checked (cache unreachable); request let through",
                self.scope,
                exc_info=True,
            )
            return True

    def _count(self, request: Request, view: Any) -> bool:
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        limit, seconds = self.parse_rate(self.rate)
        assert limit is not None and seconds is not None
        cache = caches["default"]
        if isinstance(cache, RedisCache):
            self.redis_wait = redis_count_request(cache, key, limit, seconds)
        else:
            self.redis_wait = bucket_count_request(f"{key}:buckets", limit, seconds)
        return self.redis_wait is None

    def wait(self) -> float | None:
        if self.redis_wait is not None:
            return self.redis_wait
        return super().wait()
