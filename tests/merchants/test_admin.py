import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from merchants.keys import api_key_digest
from merchants.models import ApiKey, Environment
from merchants.services import CreatedMerchant


@pytest.fixture
def staff(db: None) -> Client:
    user = User.objects.create_superuser("ops", "ops@example.com", "a-long-password-1")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("page", ["merchant", "environment", "apikey"])
def test_admin_lists_merchants_environments_and_keys(
    staff: Client, merchant: CreatedMerchant, page: str
) -> None:
    response = staff.get(f"/admin/merchants/{page}/")
    assert response.status_code == 200
    assert "Acme Prints" in response.content.decode()


def test_api_key_list_shows_prefixes_never_keys(staff: Client, merchant: CreatedMerchant) -> None:
    html = staff.get("/admin/merchants/apikey/").content.decode()
    assert merchant.sandbox_api_key[:12] in html
    assert merchant.sandbox_api_key not in html


def test_issuing_a_key_from_the_admin_shows_it_once(
    staff: Client, merchant: CreatedMerchant
) -> None:
    environment = Environment.objects.get(merchant=merchant.merchant, kind="Live")

    response = staff.post(
        "/admin/merchants/environment/",
        {"action": "issue_api_key", "_selected_action": [environment.pk]},
        follow=True,
    )

    html = response.content.decode()
    [key] = re.findall(r"sk_live_[A-Za-z0-9_-]{43}", html)
    assert ApiKey.objects.filter(environment=environment, digest=api_key_digest(key)).exists()
    assert key not in staff.get("/admin/merchants/apikey/").content.decode()


def test_revoking_keys_from_the_admin(staff: Client, merchant: CreatedMerchant) -> None:
    key = ApiKey.objects.get(digest=api_key_digest(merchant.sandbox_api_key))

    staff.post("/admin/merchants/apikey/", {"action": "revoke", "_selected_action": [key.pk]})

    key.refresh_from_db()
    assert key.revoked_at is not None
    response = Client(headers={"X-API-Key": merchant.sandbox_api_key}).get("/v4.0/orders")
    assert response.status_code == 401
