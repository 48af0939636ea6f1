"""Without Redis, rate limits count per process in a window of buckets, shared through the
cache at most every second and before any refusal."""

from pathlib import Path

import pytest
from django.core.cache import caches

from api import rate_limits
from api.rate_limits import WINDOW_BUCKETS, bucket_count_request


@pytest.fixture
def file_cache(settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(tmp_path / "cache"),
        }
    }
    monkeypatch.setattr(rate_limits, "_windows", {})
    yield caches["default"]
    caches["default"].clear()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1_000_000.0 * 60 + 10.0]  # 10 s into a bucket of a one-minute window (5 s buckets)
    monkeypatch.setattr(rate_limits.time, "time", lambda: now[0])
    return now


def test_the_limit_passes_then_the_wait_is_until_the_oldest_bucket_leaves(
    file_cache, clock: list[float]
) -> None:  # type: ignore[no-untyped-def]
    # When 3 requests are counted against a limit of 3, then a fourth
    answers = [bucket_count_request("k", 3, 60) for _ in range(3)]
    refused = bucket_count_request("k", 3, 60)

    # Then the three pass and the fourth waits until their bucket (started at 10 s) has left
    assert answers == [None, None, None]
    assert refused == pytest.approx(60.0)

    # And once that bucket is out of the window the next request passes
    clock[0] += 60.0
    assert bucket_count_request("k", 3, 60) is None


def test_another_processes_counts_are_read_before_a_refusal(
    file_cache, clock: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    # Given a process that counted a limit of 3 and published them at a later exchange
    monkeypatch.setattr(rate_limits.os, "getpid", lambda: 111)
    assert [bucket_count_request("k", 3, 60) for _ in range(3)] == [None, None, None]
    clock[0] += 1.0
    assert bucket_count_request("k", 3, 60) is not None
    # When a second process, which read nothing yet, asks twice
    monkeypatch.setattr(rate_limits.os, "getpid", lambda: 222)
    monkeypatch.setattr(rate_limits, "_windows", {})
    answers = [bucket_count_request("k", 3, 60), bucket_count_request("k", 3, 60)]

    # Then it sees the first one's three at its first exchange and refuses both
    assert [answer is not None for answer in answers] == [True, True]
    assert file_cache.get("k") == {111: {12000002: 3}, 222: {}}


def test_memory_and_the_entry_stay_small_whatever_the_rate(file_cache, clock) -> None:  # type: ignore[no-untyped-def]
    for _ in range(5000):  # 5000 requests spread over two minutes
        assert bucket_count_request("k", 10**9, 60) is None
        clock[0] += 0.024

    window = rate_limits._windows["k"]
    assert len(window.own) <= 2 * WINDOW_BUCKETS
    entry = file_cache.get("k")
    assert len(next(iter(entry.values()))) <= WINDOW_BUCKETS


def test_a_cleared_cache_restarts_the_count(file_cache, clock: list[float]) -> None:  # type: ignore[no-untyped-def]
    assert [bucket_count_request("k", 2, 60) for _ in range(2)] == [None, None]
    assert bucket_count_request("k", 2, 60) is not None
    file_cache.clear()
    assert bucket_count_request("k", 2, 60) is None
