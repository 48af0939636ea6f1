"""The base of every rate limit: counts atomically in Redis, and fails open when it is down.

With Redis as the cache, a request is counted by one Lua script (run by Redis atomically,
so concurrent requests on any number of processes and hosts never count over each
other): the window's timestamps live in a sorted set under the throttle's key, with Redis's own
clock, and a request is added only while fewer than the limit are inside the window. Exactly
the limit passes in any window, however many requests arrive at once.

Without Redis (the embedded default of one machine) a request is counted by one statement in
a small SQLite file under ``VAR_DIR`` shared by every process (``common.rate_counts``): a
window of buckets, so that no window passes more than the limit either, across any number of
web processes. (Counts kept per process and exchanged through the file cache lost each
other's: two web workers let hundreds of wrong keys through a limit of 60.)

A cache outage must not turn every request into a 500: the request is let through, the
failure logged and counted (``RATE_LIMIT_FAILURES``), and the limits apply again as soon as
the cache answers.
"""

import logging
import os
import threading
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
from common.rate_counts import sqlite_count_request

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


class FailOpenRateThrottle(SimpleRateThrottle):
    refused_wait: float | None = None

    def get_ident(self, request: Request) -> str:
        """The client's address, as everything reads it (``common.addresses``)."""
        return client_address(request)

    def allow_request(self, request: Request, view: Any) -> bool:
        try:
            return self._count(request, view)
        except Exception:
            RATE_LIMIT_FAILURES["count"] += 1
            logger.warning(
                "Rate limit %s not checked (its counter unreachable); request let through",
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
            self.refused_wait = redis_count_request(cache, key, limit, seconds)
        else:
            self.refused_wait = sqlite_count_request(
                path=settings.RATE_LIMIT_DATABASE, key=key, limit=limit, seconds=seconds
            )
        return self.refused_wait is None

    def wait(self) -> float | None:
        """The seconds until the oldest request counted in the window leaves it."""
        return self.refused_wait
