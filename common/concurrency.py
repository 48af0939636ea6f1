"""Concurrency limits shared by every process: at most N pieces of work of one kind at once.

A piece of work takes a place in each of several named limits together, or in none
(``places_take``), keeps them while it runs and gives them back as it ends
(``places_release``); a place also frees itself ``seconds`` after it was taken, so one held by a
process that died is not lost for good. The places live in Redis when ``REDIS_URL`` is set (one
key per place, taken by SET NX, so processes on any number of hosts never take one place
twice); without Redis, in the SQLite file every process of the embedded setup shares with the
rate-limit counts (``RATE_LIMIT_DATABASE``, ``common.rate_counts``): a place is taken by one
``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` expired, a statement SQLite runs under its write
lock, so two processes never take one place either (the file cache's ``add`` reads, then
writes: two could).

A store that cannot be reached lets the work through (logged): the limits apply again as soon
as it answers, as the rate limits do.
"""

import logging
import math
import sqlite3
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.cache import cache

from common.rate_counts import shared_connection

logger = logging.getLogger(__name__)
KEY_PREFIX = "concurrency"


@dataclass(frozen=True)
class Places:
    """The places one piece of work holds: their keys, and the token that says they are its."""

    keys: tuple[str, ...]
    holder: str


def _place_keys(limit_name: str, limit: int) -> list[str]:
    return [f"{KEY_PREFIX}:{limit_name}:{number}" for number in range(limit)]


_PLACES_SCHEMA = """
CREATE TABLE IF NOT EXISTS places (
    key TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until REAL NOT NULL
) WITHOUT ROWID
"""
# Taken (one row changed) when the place is free: no row, or one whose time is over.
_PLACE_TAKE = """
INSERT INTO places (key, holder, until) VALUES (:key, :holder, :until)
ON CONFLICT (key) DO UPDATE SET holder = excluded.holder, until = excluded.until
WHERE places.until <= :now
"""


def _places_file() -> sqlite3.Connection | None:
    """The shared file's connection without Redis; None with Redis (the cache holds them)."""
    if settings.REDIS_URL:
        return None
    connection = shared_connection(Path(settings.RATE_LIMIT_DATABASE))
    connection.execute(_PLACES_SCHEMA)
    return connection


def _place_add(key: str, holder: str, timeout: int) -> bool:
    connection = _places_file()
    if connection is None:
        return bool(cache.add(key, holder, timeout))
    now = time.time()
    values = {"key": key, "holder": holder, "until": now + timeout, "now": now}
    return connection.execute(_PLACE_TAKE, values).rowcount == 1


def _place_free(key: str, holder: str) -> None:
    connection = _places_file()
    if connection is None:
        if cache.get(key) == holder:
            cache.delete(key)
        return
    connection.execute("DELETE FROM places WHERE key = ? AND holder = ?", (key, holder))


def _place_held(key: str) -> bool:
    connection = _places_file()
    if connection is None:
        return cache.get(key) is not None
    found = connection.execute(
        "SELECT 1 FROM places WHERE key = ? AND until > ?", (key, time.time())
    ).fetchone()
    return found is not None


def places_take(limits: Mapping[str, int], *, seconds: float) -> Places | None:
    """A place in every one of ``limits`` (name: the most at once), held for ``seconds`` at
    most; or None, holding nothing, when one of them is full. Without a cache: no places, and
    the work goes ahead."""
    holder = uuid.uuid4().hex
    timeout = max(1, math.ceil(seconds))
    taken: list[str] = []
    try:
        for name, limit in limits.items():
            place = next(
                (key for key in _place_keys(name, limit) if _place_add(key, holder, timeout)),
                None,
            )
            if place is None:
                places_release(Places(tuple(taken), holder))
                return None
            taken.append(place)
    except Exception:
        logger.exception("Concurrency limits %s could not be read: not applied", list(limits))
        return Places((), holder)
    return Places(tuple(taken), holder)


def places_release(places: Places) -> None:
    """Give the places back (a place that expired and was taken by other work is left to it)."""
    try:
        for key in places.keys:
            _place_free(key, places.holder)
    except Exception:
        logger.exception("Concurrency places %s could not be given back", places.keys)


def places_in_use(limit_name: str, limit: int) -> int:
    """How many of the limit's places are held now."""
    try:
        return sum(1 for key in _place_keys(limit_name, limit) if _place_held(key))
    except Exception:
        logger.exception("Concurrency places of %s could not be counted", limit_name)
        return 0


@contextmanager
def places_held(limits: Mapping[str, int], *, seconds: float) -> Iterator[bool]:
    """Whether a place in every one of ``limits`` was taken (``places_take``); taken places
    are given back when the block ends, however it ends."""
    places = places_take(limits, seconds=seconds)
    try:
        yield places is not None
    finally:
        if places is not None:
            places_release(places)
