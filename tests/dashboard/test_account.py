"""The account: password reset by mail with Django's own views (decisions.md, wave 3), the
sign-in message in the form's words; the catalogue page."""

import re
from decimal import Decimal
from typing import Any

import pytest
from django.conf import settings
from django.core import mail
from django.test import Client
from rest_framework.test import APIClient

from labs.models import Lab
from labs.selectors import countries_shipped_to
from merchants.services import CreatedMerchant
from products.models import Product
from tests.support.dashboard import PASSWORD, merchant_sign_in_create, signed_in_client

pytestmark = pytest.mark.django_db
LINK = re.compile(r"(\S+)(/dashboard/password-reset/[^/\s]+/[^/\s]+/)")


def reset_link(client: Client, email: str) -> str:
    response = client.post("/dashboard/password-reset", {"email": email})
    assert response.status_code == 302
    assert response["Location"] == "/dashboard/password-reset/sent"
    [message] = mail.outbox
    assert message.to == [email]
    assert message.subject == "Reset your Print API password"
    found = LINK.search(str(message.body))
    assert found, message.body
    assert found.group(1) == settings.LIVE_BASE_URL
    return found.group(2)


def test_a_password_is_reset_from_the_mailed_link_once(merchant: CreatedMerchant) -> None:
    user = merchant_sign_in_create(merchant.merchant)
    client = Client()
    link = reset_link(client, user.email)

    form = client.get(link, follow=True)
    assert form.status_code == 200
    assert "Choose a new password" in form.content.decode()
    set_password_url = form.redirect_chain[-1][0]
    done = client.post(
        set_password_url,
        {"new_password1": "a-new-long-passphrase-7", "new_password2": "a-new-long-passphrase-7"},
    )

    assert done.status_code == 302
    assert done["Location"] == "/dashboard/password-reset/done"
    assert "Password changed" in client.get(done["Location"]).content.decode()
    signed_in = Client().post(
        "/dashboard/login", {"username": user.email, "password": "a-new-long-passphrase-7"}
    )
    assert signed_in.status_code == 302 and signed_in["Location"] == "/dashboard/"
    again = Client().get(link, follow=True).content.decode()
    assert "This link no longer works" in again


def test_the_reset_link_is_built_on_the_configured_base_url_whatever_the_host(
    merchant: CreatedMerchant, settings: Any
) -> None:
    user = merchant_sign_in_create(merchant.merchant)
    settings.LIVE_BASE_URL = "https://print.example.com"
    settings.ALLOWED_HOSTS = ["*"]

    response = Client().post(
        "/dashboard/password-reset",
        {"email": user.email},
        HTTP_HOST="attacker.example",
        HTTP_X_FORWARDED_HOST="attacker.example:8443",
    )

    assert response.status_code == 302
    [message] = mail.outbox
    assert "attacker.example" not in message.body
    found = LINK.search(str(message.body))
    assert found, message.body
    assert found.group(1) == "https://print.example.com"
    assert Client().get(found.group(2), follow=True).status_code == 200


def test_the_new_password_is_checked_with_the_fields_messages(merchant: CreatedMerchant) -> None:
    user = merchant_sign_in_create(merchant.merchant)
    client = Client()
    form = client.get(reset_link(client, user.email), follow=True)

    refused = client.post(
        form.redirect_chain[-1][0], {"new_password1": "abc", "new_password2": "abd"}
    )

    assert refused.status_code == 200
    assert "The two password fields didn\u2019t match." in refused.content.decode()
    user.refresh_from_db()
    assert user.check_password(PASSWORD)


def test_a_reset_refuses_a_new_password_easy_to_guess(merchant: CreatedMerchant) -> None:
    user = merchant_sign_in_create(merchant.merchant)
    client = Client()
    form = client.get(reset_link(client, user.email), follow=True)
    set_password_url = form.redirect_chain[-1][0]
    old_hash = type(user).objects.get(pk=user.pk).password

    refused = client.post(
        set_password_url, {"new_password1": "Passw0rd!!", "new_password2": "Passw0rd!!"}
    )

    assert refused.status_code == 200
    assert "This password is too easy to guess." in refused.content.decode()
    assert type(user).objects.get(pk=user.pk).password == old_hash


def test_an_unknown_address_gets_the_same_page_and_no_mail(merchant: CreatedMerchant) -> None:
    merchant_sign_in_create(merchant.merchant)

    response = Client().post(
        "/dashboard/password-reset", {"email": "nobody@shop.test"}, follow=True
    )

    assert "If an account uses that address" in response.content.decode()
    assert mail.outbox == []


def test_the_login_page_links_to_the_reset_and_speaks_of_the_email_address(
    merchant: CreatedMerchant,
) -> None:
    user = merchant_sign_in_create(merchant.merchant)

    page = Client().get("/dashboard/login").content.decode()
    wrong = Client().post("/dashboard/login", {"username": user.email, "password": "nope"})

    assert 'href="/dashboard/password-reset"' in page
    html = wrong.content.decode()
    assert "That email address and password do not match an account." in html
    assert "correct username" not in html  # Django's own words for its field name


@pytest.mark.usefixtures("catalogue")
def test_the_catalogue_page_prices_one_copy_to_the_chosen_destination_as_a_quote_does(
    merchant: CreatedMerchant, sandbox_api: APIClient
) -> None:
    owner = signed_in_client(merchant.merchant)

    page = owner.get("/dashboard/catalogue?country=us&category=Canvas").content.decode()

    canvases = Product.objects.filter(category="Canvas", is_active=True).order_by("sku")
    assert canvases and all(f'id="product-{p.sku}"' in page for p in canvases)
    assert "GLOBAL-PHO-4X6" not in page  # another category
    product = canvases[0]
    wrap = product.variants.order_by("id")[0].attributes
    quote = sandbox_api.post(
        "/v4.0/quotes",
        {
            "destinationCountryCode": "US",
            "items": [
                {
                    "sku": product.sku,
                    "copies": 1,
                    "attributes": wrap,
                    "assets": [{"printArea": "default"}],
                }
            ],
        },
        format="json",
    ).json()
    cheapest = min(Decimal(q["costSummary"]["totalCost"]["amount"]) for q in quote["quotes"])
    row = page.split(f'id="product-{product.sku}"', 1)[1].split("</tr>", 1)[0]
    assert f"{cheapest} GBP" in row
    # Every country some product of any category reaches is a destination to choose.
    select = page.split('id="c-country"', 1)[1].split("</select>", 1)[0]
    offered = re.findall(r'<option value="([A-Z]{2})"', select)
    assert offered == countries_shipped_to() and '<option value="US" selected>' in page


@pytest.mark.usefixtures("catalogue")
def test_the_live_catalogue_prices_at_the_labs_live_orders_may_use(
    merchant: CreatedMerchant, sandbox_api: APIClient, live_api: APIClient, settings: Any
) -> None:
    """Where the simulator may not make Live orders, the Live catalogue shows the price of a
    Live quote (at gb1, the one lab with a real connector), not the simulator lab us1's."""
    settings.SIMULATOR_PRODUCES_LIVE = False
    Lab.objects.filter(code="gb1").update(
        connector="siteflow",
        siteflow_base_url="https://lab.example/api",
        siteflow_token="token",
        siteflow_secret="secret",
    )
    owner = signed_in_client(merchant.merchant)

    def cheapest(api: APIClient) -> Decimal:
        quote = api.post(
            "/v4.0/quotes",
            {
                "destinationCountryCode": "US",
                "items": [
                    {"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"printArea": "default"}]}
                ],
            },
            format="json",
        ).json()
        return min(Decimal(q["costSummary"]["totalCost"]["amount"]) for q in quote["quotes"])

    def shown() -> str:
        page = owner.get("/dashboard/catalogue?country=US&category=Photo").content.decode()
        return page.split('id="product-GLOBAL-PHO-4X6"', 1)[1].split("</tr>", 1)[0]

    sandbox_row = shown()
    owner.post("/dashboard/environment", {"kind": "Live"})
    live_row = shown()

    assert cheapest(live_api) == Decimal("12.56")  # gb1's Standard to the rest of the world
    assert cheapest(sandbox_api) < cheapest(live_api)  # us1, the simulator lab
    assert f"{cheapest(live_api)} GBP" in live_row
    assert f"{cheapest(sandbox_api)} GBP" in sandbox_row
    assert f"{cheapest(sandbox_api)} GBP" not in live_row
