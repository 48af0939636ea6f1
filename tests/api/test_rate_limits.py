"""Rate limits count atomically in Redis: concurrent requests never pass more than the limit."""

import threading
import uuid
from typing import Any

import pytest
import redis
from django.conf import settings
from django.core.cache import cache
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from api.authentication import ApiClient
from api.throttling import ApiKeyRateThrottle
from merchants.selectors import api_key_authenticate
from merchants.services import CreatedMerchant

pytestmark = pytest.mark.skipif(
    not settings.REDIS_URL, reason="atomic counting is Redis's (REDIS_URL unset)"
)


def environment_request(merchant: CreatedMerchant) -> tuple[Request, int]:
    """A request of the merchant's Sandbox environment, as authentication leaves it."""
    api_key = api_key_authenticate(key=merchant.sandbox_api_key)
    assert api_key is not None
    request = Request(APIRequestFactory().get("/v4.0/orders"))
    request.user = ApiClient(api_key)  # type: ignore[assignment]
    return request, api_key.environment.pk


def test_concurrent_requests_of_one_environment_pass_exactly_the_limit(
    merchant: CreatedMerchant, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a limit of 100 requests a minute and 400 requests arriving at once on 16 threads
    cache.clear()
    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "100/min"})
    request, _ = environment_request(merchant)
    threads, per_thread = 16, 25
    start = threading.Barrier(threads)
    answers: list[bool] = []
    waits: list[float | None] = []
    lock = threading.Lock()

    def client() -> None:
        start.wait()
        for _ in range(per_thread):
            throttle = ApiKeyRateThrottle()
            allowed = throttle.allow_request(request, None)  # type: ignore[arg-type]
            with lock:
                answers.append(allowed)
                if not allowed:
                    waits.append(throttle.wait())

    # When they are counted
    workers = [threading.Thread(target=client) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)

    # Then exactly the limit passes, and the others are told to wait for the oldest to expire
    assert len(answers) == threads * per_thread
    assert answers.count(True) == 100
    assert all(wait is not None and 55 < wait <= 60 for wait in waits)
    cache.clear()


def test_each_counted_request_is_one_redis_round_trip(
    merchant: CreatedMerchant, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.clear()
    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "3/min"})
    request, environment_pk = environment_request(merchant)
    ApiKeyRateThrottle().allow_request(request, None)  # type: ignore[arg-type]  # loads the script
    marker = f"rate-limit-test-{uuid.uuid4().hex}"
    watcher = redis.Redis.from_url(settings.REDIS_URL)
    commands: list[dict[str, Any]] = []

    with watcher.monitor() as monitor:
        answers = [
            ApiKeyRateThrottle().allow_request(request, None)  # type: ignore[arg-type]
            for _ in range(4)
        ]
        watcher.get(marker)
        for command in monitor.listen():
            if marker in command["command"]:
                break
            commands.append(command)

    # The commands the service sent (not the script's own) that name the throttle's key.
    key = f"throttle_api_key_env{environment_pk}"
    sent = [c for c in commands if c["client_type"] != "lua" and key in c["command"]]
    assert answers == [True, True, False, False]
    assert [c["command"].split()[0] for c in sent] == ["EVALSHA"] * 4
    cache.clear()
