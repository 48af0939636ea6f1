"""On the embedded default (no Redis), the rate limits hold across every web process: a real
gunicorn of two workers passes exactly the limit of wrong keys per client address, and of
requests per environment, however the requests are spread between its workers."""

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from merchants.services import CreatedMerchant
from tests.support.web import Web, gunicorn_serving, needs_shared_database

pytestmark = [needs_shared_database, pytest.mark.django_db(transaction=True)]


def statuses(web: Web, key: str, count: int) -> list[requests.Response]:
    """``count`` GETs of the order list with ``key``, eight at a time, each on a connection
    of its own (so gunicorn hands them to either worker)."""

    def one(_: int) -> requests.Response:
        return requests.get(f"{web.url}/v4.0/orders", headers={"X-API-Key": key}, timeout=30)

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, range(count)))


def workers_that_answered(access_log: Path) -> set[str]:
    return {line.split()[0] for line in access_log.read_text().splitlines() if line.strip()}


def test_two_web_workers_without_redis_pass_exactly_each_limit_together(
    merchant: CreatedMerchant, tmp_path: Path
) -> None:
    # Given the embedded settings without Redis, served by two gunicorn workers, with limits
    # of 40 wrong keys a minute per address and 30 requests a minute per environment
    access_log = tmp_path / "access.log"
    with gunicorn_serving(
        workers=2,
        DJANGO_SETTINGS_MODULE="config.settings.local",
        REDIS_URL="",
        VAR_DIR=str(tmp_path / "var"),
        WRONG_KEY_RATE_LIMIT="40/min",
        API_RATE_LIMIT="30/min",
        GUNICORN_CMD_ARGS=f"--access-logfile {access_log} --access-logformat '%(p)s %(s)s'",
    ) as web:
        # When 100 requests with a wrong key arrive, eight at a time
        wrong = statuses(web, "not-a-key-of-anyone-at-all", 100)
        # And 60 with the merchant's Sandbox key, then one with its Live key
        sandbox = statuses(web, merchant.sandbox_api_key, 60)
        live = statuses(web, merchant.live_api_key, 1)

    # Then both workers answered, and together they passed exactly each limit
    assert len(workers_that_answered(access_log)) == 2
    assert Counter(r.status_code for r in wrong) == {401: 40, 429: 60}
    assert Counter(r.status_code for r in sandbox) == {200: 30, 429: 30}
    assert [r.status_code for r in live] == [200]  # the other environment has its own budget
    refused = next(r for r in wrong if r.status_code == 429)
    assert refused.json()["outcome"] == "TooManyRequests"
    assert 55 <= refused.json()["data"]["retryAfterSeconds"] <= 61
    assert (tmp_path / "var" / "rate-limits.sqlite3").exists()
