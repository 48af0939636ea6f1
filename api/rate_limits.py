"""The base of every rate limit: counts atomically in Redis, and fails open when it is down.

With Redis as the cache, a request is counted by one Lua script (one round trip, run by Redis
alone, so concurrent requests on any number of processes and hosts never count over each
other): the window's timestamps live in a sorted set under the throttle's key, with Redis's own
clock, and a request is added only while fewer than the limit are inside the window. Exactly
the limit passes in any window, however many requests arrive at once.

Without Redis (the embedded default of one machine: a file cache) the count is DRF's, which
reads and writes the cache in two steps and so may let a few extra through under concurrency.

A cache outage must not turn every request into a 500: the request is let through, the
failure logged and counted (``RATE_LIMIT_FAILURES``), and the limits apply again as soon as
the cache answers.
"""

import logging
import os
from typing import Any

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from redis.commands.core import Script
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

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


def _window_script(cache: RedisCache) -> Script:
    """The script bound to a client of the cache's own connection pool (Django's Redis cache
    has no public API for it), made once per cache connection: building a client per request
    cost as much as the round trip."""
    backend = cache._cache
    script: Script | None = getattr(backend, "_window_script", None)
    if script is None:
        script = backend.get_client(None, write=True).register_script(SLIDING_WINDOW_SCRIPT)
        setattr(backend, "_window_script", script)  # noqa: B010 (not an attribute Django declares)
    return script


def redis_count_request(cache: RedisCache, key: str, limit: int, seconds: int) -> float | None:
    """Count one request under ``key`` if fewer than ``limit`` were counted in the last
    ``seconds``: ``None`` when counted, else the seconds until the oldest leaves the window."""
    counted, wait_ms = _window_script(cache)(
        keys=[cache.make_and_validate_key(f"{key}:window")],
        args=[limit, seconds * 1000, os.urandom(8).hex()],
    )
    return None if counted else max(int(wait_ms), 1) / 1000


class FailOpenRateThrottle(SimpleRateThrottle):
    redis_wait: float | None = None

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
        cache = caches["default"]
        if not isinstance(cache, RedisCache):
            return super().allow_request(request, view)
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        limit, seconds = self.parse_rate(self.rate)
        assert limit is not None and seconds is not None
        self.redis_wait = redis_count_request(cache, key, limit, seconds)
        return self.redis_wait is None

    def wait(self) -> float | None:
        if self.redis_wait is not None:
            return self.redis_wait
        return super().wait()
