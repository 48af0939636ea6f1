"""Concurrency limits shared by every process: at most N pieces of work of one kind at once.

A piece of work takes a place in each of several named limits together, or in none
(``places_take``), keeps them while it runs and gives them back as it ends
(``places_release``); a place also frees itself ``seconds`` after it was taken, so one held by a
process that died is not lost for good. The places live in the default cache: Redis in
production (one key per place, taken by SET NX, so processes on any number of hosts never
take one place twice), the file cache of the embedded setup on one machine.

A cache that cannot be reached lets the work through (logged): the limits apply again as soon
as it answers, as the rate limits do.
"""

import logging
import math
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from django.core.cache import cache

logger = logging.getLogger(__name__)
KEY_PREFIX = "concurrency"


@dataclass(frozen=True)
class Places:
    """The places one piece of work holds: their keys, and the token that says they are its."""

    keys: tuple[str, ...]
    holder: str


def _place_keys(limit_name: str, limit: int) -> list[str]:
    return [f"{KEY_PREFIX}:{limit_name}:{number}" for number in range(limit)]


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
                (key for key in _place_keys(name, limit) if cache.add(key, holder, timeout)),
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
            if cache.get(key) == places.holder:
                cache.delete(key)
    except Exception:
        logger.exception("Concurrency places %s could not be given back", places.keys)


def places_in_use(limit_name: str, limit: int) -> int:
    """How many of the limit's places are held now."""
    return sum(1 for key in _place_keys(limit_name, limit) if cache.get(key) is not None)


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
