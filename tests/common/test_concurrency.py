"""Concurrency limits shared by processes: places in the cache (Redis) or, without Redis, in
the shared SQLite file; all or none, given back."""

import multiprocessing
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache

from common.concurrency import places_held, places_in_use, places_release, places_take


def named(kind: str) -> str:
    """A limit's name of this test alone (the cache may be shared with other runs)."""
    return f"{kind}-{uuid.uuid4().hex}"


def test_at_most_the_limit_take_a_place_and_a_place_given_back_is_taken_again() -> None:
    work = named("work")
    first = places_take({work: 2}, seconds=60)
    second = places_take({work: 2}, seconds=60)

    assert first is not None and second is not None
    assert places_take({work: 2}, seconds=60) is None
    assert places_in_use(work, 2) == 2

    places_release(first)

    assert places_in_use(work, 2) == 1
    assert places_take({work: 2}, seconds=60) is not None


def test_a_place_is_taken_in_every_limit_or_in_none() -> None:
    every, host_a, host_b = named("all"), named("host-a"), named("host-b")
    host_full = places_take({host_a: 1}, seconds=60)
    assert host_full is not None

    assert places_take({every: 3, host_a: 1}, seconds=60) is None

    assert places_in_use(every, 3) == 0  # the place in "all" was given back
    with places_held({every: 3, host_b: 1}, seconds=60) as taken:
        assert taken is True
        assert (places_in_use(every, 3), places_in_use(host_b, 1)) == (1, 1)
    assert (places_in_use(every, 3), places_in_use(host_b, 1)) == (0, 0)


def test_a_place_another_holder_took_after_it_expired_is_not_given_back_by_the_first() -> None:
    work = named("work")
    first = places_take({work: 1}, seconds=60)
    assert first is not None
    cache.delete(first.keys[0])  # as if it expired
    second = places_take({work: 1}, seconds=60)
    assert second is not None

    places_release(first)

    assert places_in_use(work, 1) == 1
    assert places_take({work: 1}, seconds=60) is None


# --- Without Redis: the places in the SQLite file every process shares --------------------


@pytest.fixture
def file_places(settings: Any, tmp_path: Path) -> Path:
    """The embedded default's places: no Redis, the shared file in a folder of this test."""
    settings.REDIS_URL = ""
    settings.RATE_LIMIT_DATABASE = tmp_path / "rate-limits.sqlite3"
    settings.CACHES = {  # as the embedded default has it
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(tmp_path / "cache"),
        }
    }
    return Path(settings.RATE_LIMIT_DATABASE)


def test_without_redis_at_most_the_limit_take_a_place_in_the_shared_file(
    file_places: Path,
) -> None:
    work = named("work")
    first = places_take({work: 2}, seconds=60)
    second = places_take({work: 2}, seconds=60)

    assert first is not None and second is not None
    assert places_take({work: 2}, seconds=60) is None
    assert places_in_use(work, 2) == 2
    places_release(first)
    assert places_in_use(work, 2) == 1
    assert places_take({work: 2}, seconds=60) is not None
    with sqlite3.connect(file_places) as other:  # what another process reads
        assert other.execute("SELECT count(*) FROM places").fetchone() == (2,)


def test_without_redis_an_expired_place_is_taken_and_not_given_back_by_its_first_holder(
    file_places: Path,
) -> None:
    work = named("work")
    first = places_take({work: 1}, seconds=60)
    assert first is not None
    with sqlite3.connect(file_places) as other:  # its time over, as for a process that died
        other.execute("UPDATE places SET until = 0")
    second = places_take({work: 1}, seconds=60)
    assert second is not None

    places_release(first)

    assert places_in_use(work, 1) == 1
    assert places_take({work: 1}, seconds=60) is None


def _take_one(name: str, start: Any, taken: Any) -> None:
    start.wait()
    if places_take({name: 2}, seconds=60) is not None:
        with taken.get_lock():
            taken.value += 1


def test_without_redis_processes_taking_places_at_once_never_take_one_twice(
    file_places: Path,
) -> None:
    context = multiprocessing.get_context("fork")
    for _ in range(5):
        work = named("race")
        start, taken = context.Event(), context.Value("i", 0)
        processes = [context.Process(target=_take_one, args=(work, start, taken)) for _ in range(8)]
        for process in processes:
            process.start()
        start.set()
        for process in processes:
            process.join(timeout=30)
        assert [p.exitcode for p in processes] == [0] * 8
        assert taken.value == 2
