import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from merchants.keys import api_key_digest
from merchants.models import ApiKey, Environment, Merchant
from merchants.services import CreatedMerchant
from tests.support.admin_forms import admin_change_post

FULL_WIDTH_GBP = "\uff27\uff22\uff30"  # GBP in full-width letters


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


@pytest.mark.usefixtures("catalogue")
@pytest.mark.parametrize(
    ("currency", "message"),
    [
        ("XYZ", "&#x27;XYZ&#x27; is not a currency orders can be priced in; use one of "),
        (
            FULL_WIDTH_GBP,
            f"&#x27;{FULL_WIDTH_GBP}&#x27; is not an upper-case ISO 4217 currency code.",
        ),
        ("gbp", "&#x27;gbp&#x27; is not an upper-case ISO 4217 currency code."),
    ],
)
def test_the_merchant_admin_refuses_a_currency_orders_cannot_be_priced_in(
    staff: Client, merchant: CreatedMerchant, currency: str, message: str
) -> None:
    url = f"/admin/merchants/merchant/{merchant.merchant.pk}/change/"

    response = admin_change_post(staff, url, {"billing_currency": currency})

    assert response.status_code == 200
    assert message in response.content.decode()
    assert Merchant.objects.get(pk=merchant.merchant.pk).billing_currency == "GBP"


@pytest.mark.usefixtures("catalogue")
def test_the_merchant_admin_saves_a_currency_orders_can_be_priced_in(
    staff: Client, merchant: CreatedMerchant
) -> None:
    url = f"/admin/merchants/merchant/{merchant.merchant.pk}/change/"

    response = admin_change_post(staff, url, {"billing_currency": "EUR"})

    assert response.status_code == 302
    assert Merchant.objects.get(pk=merchant.merchant.pk).billing_currency == "EUR"


@pytest.mark.parametrize(
    ("callback_url", "message"),
    [
        ("https://hooks.example.com:0/in", "port 0 cannot be connected to."),
        ("https://user:pw@hooks.example.com/in", "URLs with credentials are not fetched."),
    ],
)
def test_the_environment_admin_refuses_a_callback_url_that_cannot_be_sent_to(
    staff: Client, merchant: CreatedMerchant, callback_url: str, message: str
) -> None:
    environment = Environment.objects.get(merchant=merchant.merchant, kind="Live")
    page = f"/admin/merchants/environment/{environment.pk}/change/"
    inline = f"/admin/merchants/merchant/{merchant.merchant.pk}/change/"
    live = next(
        index
        for index, kind in enumerate(
            Environment.objects.filter(merchant=merchant.merchant).values_list("kind", flat=True)
        )
        if kind == "Live"
    )

    alone = admin_change_post(staff, page, {"callback_url": callback_url})
    within = admin_change_post(staff, inline, {f"environments-{live}-callback_url": callback_url})

    for response in (alone, within):
        assert response.status_code == 200
        assert message in response.content.decode()
    assert Environment.objects.get(pk=environment.pk).callback_url == ""
