"""The Redis broker's transport: kombu's, with one Redis client kept per channel.

kombu's Redis channel makes a new ``redis.Redis`` client for every message it publishes and
every acknowledgement (``Channel.conn_or_acquire``), and building one fills its table of 170
response callbacks: a third of the CPU of a publish. A ``redis.Redis`` is safe to share between
threads (each command borrows a connection from the pool), so the channel keeps one, made anew
when the channel's connection pool is (after a connection error). Selected by
``CELERY_BROKER_TRANSPORT`` when ``REDIS_URL`` is set.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kombu.transport import redis


class Channel(redis.Channel):  # type: ignore[misc]
    _kept_client: Any = None

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        if client:
            yield client
            return
        kept = self._kept_client
        if kept is None or kept.connection_pool is not self.pool:
            kept = self._kept_client = self._create_client()
        yield kept


class Transport(redis.Transport):  # type: ignore[misc]
    Channel = Channel
