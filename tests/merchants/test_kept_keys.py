"""API keys kept in process memory: reused while the accounts version stands, so a revoked key
(or a changed environment) is seen by the very next request of every process."""

from typing import Any

import pytest
import requests
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from merchants.keys import api_key_digest
from merchants.models import ApiKey, Environment, PauseMode
from merchants.selectors import ApiKeyCache
from merchants.services import CreatedMerchant, api_key_revoke, environment_settings_update
from tests.support.orders import order_create_via_api
from tests.support.web import gunicorn_serving, needs_shared_database

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_client(db: None) -> Client:
    user = User.objects.create_superuser("ops", "ops@example.com", "a-long-password-1")
    client = Client()
    client.force_login(user)
    return client


def sandbox_key(merchant: CreatedMerchant) -> ApiKey:
    return ApiKey.objects.get(digest=api_key_digest(merchant.sandbox_api_key))


def admin_revoke(client: Client, key: ApiKey) -> None:
    response = client.post(
        "/admin/merchants/apikey/", {"action": "revoke", "_selected_action": [key.pk]}
    )
    assert response.status_code == 302


def key_queries(api: APIClient) -> list[str]:
    """The statements of one list request that read the key table."""
    with CaptureQueriesContext(connection) as captured:
        assert api.get("/v4.0/orders").status_code == 200
    return [q["sql"] for q in captured.captured_queries if "merchants_apikey" in q["sql"]]


def test_a_key_seen_once_is_not_read_again(sandbox_api: APIClient) -> None:
    assert sandbox_api.get("/v4.0/orders").status_code == 200  # read, and its use recorded

    assert key_queries(sandbox_api) == []


def test_a_key_revoked_by_the_service_is_refused_by_the_very_next_request(
    merchant: CreatedMerchant, sandbox_api: APIClient
) -> None:
    assert key_queries(sandbox_api) != []
    assert key_queries(sandbox_api) == []  # kept now

    api_key_revoke(api_key=sandbox_key(merchant))

    response = sandbox_api.get("/v4.0/orders")
    assert response.status_code == 401
    assert response.json()["outcome"] == "Unauthorized"


def test_a_key_revoked_in_the_admin_is_refused_by_the_very_next_request(
    merchant: CreatedMerchant, sandbox_api: APIClient, superuser_client: Client
) -> None:
    sandbox_api.get("/v4.0/orders")
    assert key_queries(sandbox_api) == []

    admin_revoke(superuser_client, sandbox_key(merchant))

    assert sandbox_api.get("/v4.0/orders").status_code == 401
    assert sandbox_api.post("/v4.0/orders", {}, format="json").status_code == 401


def test_another_process_that_kept_the_key_refuses_it_after_revocation(
    merchant: CreatedMerchant,
) -> None:
    other_process = ApiKeyCache()
    kept = other_process.authenticate(key=merchant.sandbox_api_key)
    assert kept is not None
    with CaptureQueriesContext(connection) as captured:
        assert other_process.authenticate(key=merchant.sandbox_api_key) is not None
    assert [q for q in captured.captured_queries if "merchants_apikey" in q["sql"]] == []

    api_key_revoke(api_key=kept)

    assert other_process.authenticate(key=merchant.sandbox_api_key) is None


def test_a_changed_environment_is_used_by_the_very_next_order(
    catalogue: None, merchant: CreatedMerchant, sandbox_api: APIClient
) -> None:
    order_create_via_api(sandbox_api)  # the key and its environment kept

    environment_settings_update(
        environment=Environment.objects.get(merchant=merchant.merchant, kind="Sandbox"),
        callback_url="",
        pause_mode=PauseMode.INDEFINITE,
        pause_minutes=0,
    )

    order_create_via_api(sandbox_api, outcome="OnHold")


def test_each_request_gets_its_own_key_objects(merchant: CreatedMerchant) -> None:
    cache = ApiKeyCache()
    first = cache.authenticate(key=merchant.sandbox_api_key)
    second = cache.authenticate(key=merchant.sandbox_api_key)
    assert first is not None and second is not None

    first.environment.callback_url = "https://changed.example.com/in-memory-only"

    assert second.environment is not first.environment
    assert second.environment.callback_url == ""
    assert second.environment.merchant.name == "Acme Prints"


@needs_shared_database
@pytest.mark.django_db(transaction=True)
def test_a_running_server_refuses_a_key_revoked_in_the_admin_at_once(
    merchant: CreatedMerchant, superuser_client: Client
) -> None:
    # A real gunicorn process that has the key in memory when it is revoked in this one.
    with gunicorn_serving(workers=1) as web, requests.Session() as session:
        session.headers["X-API-Key"] = merchant.sandbox_api_key

        def status() -> Any:
            return session.get(f"{web.url}/v4.0/orders", timeout=30).status_code

        assert status() == 200
        assert status() == 200  # from memory now
        admin_revoke(superuser_client, sandbox_key(merchant))

        response = session.get(f"{web.url}/v4.0/orders", timeout=30)
        assert response.status_code == 401
        assert response.json()["outcome"] == "Unauthorized"
