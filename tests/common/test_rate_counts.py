"""Without Redis, rate limits count in one SQLite file that every process shares: no window
passes more than the limit, however many processes count at once."""

import multiprocessing
from pathlib import Path

import pytest
from django.core.cache import caches
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from api import rate_limits
from api.authentication import WrongKeyThrottle
from common import rate_counts
from common.rate_counts import sqlite_count_request


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1_000_000.0 * 60 + 10.25]  # 10.25 s into a minute (one-second buckets)
    monkeypatch.setattr(rate_counts.time, "time", lambda: now[0])
    return now


def test_the_limit_passes_then_the_wait_is_until_the_oldest_bucket_leaves(
    tmp_path: Path, clock: list[float]
) -> None:
    path = tmp_path / "counts.sqlite3"

    # When 3 requests are counted against a limit of 3, then a fourth
    answers = [sqlite_count_request(path=path, key="k", limit=3, seconds=60) for _ in range(3)]
    clock[0] += 30.0
    refused = sqlite_count_request(path=path, key="k", limit=3, seconds=60)

    # Then the three pass and the fourth waits until their bucket (10 s to 11 s) has left
    assert answers == [None, None, None]
    assert refused == pytest.approx(30.75)
    # And another key counts apart
    assert sqlite_count_request(path=path, key="other", limit=3, seconds=60) is None

    # Until then it is refused; once that bucket is out of the window the next one passes
    clock[0] += 30.7
    assert sqlite_count_request(path=path, key="k", limit=3, seconds=60) is not None
    clock[0] += 0.1
    assert sqlite_count_request(path=path, key="k", limit=3, seconds=60) is None


def counted_in_a_process(path: Path, tries: int, limit: int) -> int:
    return sum(
        sqlite_count_request(path=path, key="shared", limit=limit, seconds=60) is None
        for _ in range(tries)
    )


def test_processes_counting_at_once_pass_exactly_the_limit_together(tmp_path: Path) -> None:
    # Given four processes (as gunicorn's workers) asking 200 times each against 300 a minute
    path = tmp_path / "counts.sqlite3"
    sqlite_count_request(path=path, key="warm", limit=1, seconds=60)  # the file exists

    # When they count at once
    with multiprocessing.get_context("fork").Pool(4) as pool:
        counted = pool.starmap(counted_in_a_process, [(path, 200, 300)] * 4)

    # Then exactly the limit passed, shared between them
    assert sum(counted) == 300
    assert sqlite_count_request(path=path, key="shared", limit=300, seconds=60) is not None


def test_rows_of_expired_windows_are_deleted(tmp_path: Path, clock: list[float]) -> None:
    path = tmp_path / "counts.sqlite3"
    for second in range(180):  # a new key every second for three minutes: each counted once
        assert sqlite_count_request(path=path, key=f"ip{second}", limit=5, seconds=60) is None
        clock[0] += 1.0

    # Expired rows are deleted once a minute (at 0, 60 and 120 s): the 60 keys of the first
    # minute had left their window by the last purge, the others not yet
    connection = rate_counts._connection(path)
    keys = [key for (key,) in connection.execute("SELECT key FROM window_counts ORDER BY until")]
    assert keys == [f"ip{second}" for second in range(60, 180)]


def wrong_key_request() -> Request:
    return Request(APIRequestFactory().get("/v4.0/orders", REMOTE_ADDR="203.0.113.9"))


def test_a_throttle_without_redis_counts_in_the_file(
    settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    # Given the embedded default's cache (no Redis) and a wrong-key limit of 2 a minute
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(tmp_path / "cache"),
        }
    }
    settings.RATE_LIMIT_DATABASE = tmp_path / "rate-limits.sqlite3"
    monkeypatch.setattr(WrongKeyThrottle, "THROTTLE_RATES", {"wrong_key": "2/min"})

    throttles = [WrongKeyThrottle() for _ in range(3)]
    answers = [t.allow_request(wrong_key_request(), None) for t in throttles]  # type: ignore[arg-type]

    assert answers == [True, True, False]
    wait = throttles[2].wait()
    assert wait is not None and 59 < wait <= 61
    assert caches["default"].get("throttle_wrong_key_203.0.113.9") is None  # not in the cache
    (count,) = (
        rate_counts._connection(settings.RATE_LIMIT_DATABASE)
        .execute("SELECT sum(n) FROM window_counts WHERE key = 'throttle_wrong_key_203.0.113.9'")
        .fetchone()
    )
    assert count == 2


def test_a_counter_that_cannot_be_opened_lets_the_request_through(
    settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    settings.RATE_LIMIT_DATABASE = tmp_path / "missing-folder" / "rate-limits.sqlite3"
    monkeypatch.setattr(WrongKeyThrottle, "THROTTLE_RATES", {"wrong_key": "1/min"})
    failures = rate_limits.RATE_LIMIT_FAILURES["count"]

    answers = [WrongKeyThrottle().allow_request(wrong_key_request(), None) for _ in range(3)]  # type: ignore[arg-type]

    assert answers == [True, True, True]
    assert rate_limits.RATE_LIMIT_FAILURES["count"] == failures + 3
