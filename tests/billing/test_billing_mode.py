"""Billing is the service's decision: merchants who sign up pay by card (tests/dashboard),
the dashboard shows the mode and cannot change it, and staff switch it in the admin."""

from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from merchants.models import BillingMode, Merchant
from merchants.services import CreatedMerchant
from staff.services import staff_user_save
from tests.support.dashboard import signed_in_client
from tests.support.orders import fetch, order_create_via_api

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]


class _Form(HTMLParser):
    """What a browser would post from a page's form: inputs, checked boxes, chosen options."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, Any] = {}
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        name = a.get("name")
        if tag == "input" and name and a.get("type") not in ("submit", "button"):
            if a.get("type") not in ("checkbox", "radio") or "checked" in a:
                self.values[name] = a.get("value") or ""
        elif tag == "select":
            self._select = name
        elif tag == "option" and self._select and "selected" in a:
            self.values[self._select] = a.get("value") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None


def form_values(page: str) -> dict[str, Any]:
    parser = _Form()
    parser.feed(page)
    return parser.values


def test_an_administrator_switches_a_card_merchant_to_invoice_in_the_admin(
    card: CreatedMerchant, live_api: APIClient
) -> None:
    user, _ = staff_user_save(username="ada", password="a-long-password-1", administrator=True)
    staff = Client()
    staff.force_login(user)
    url = f"/admin/merchants/merchant/{card.merchant.pk}/change/"
    form = form_values(staff.get(url).content.decode())

    response = staff.post(url, {**form, "billing_currency": "GBP", "billing_mode": "Invoice"})

    errors = response.context["adminform"].form.errors if response.status_code == 200 else None
    assert response.status_code == 302, (errors, form)
    assert Merchant.objects.get(pk=card.merchant.pk).billing_mode == BillingMode.INVOICE
    order_id = order_create_via_api(live_api)
    assert fetch(live_api, order_id)["status"]["stage"] == "InProgress"  # no payment wait


def test_the_dashboard_shows_the_billing_mode_and_offers_no_way_to_change_it(
    card: CreatedMerchant,
) -> None:
    owner = signed_in_client(card.merchant)

    settings_page = owner.get("/dashboard/settings").content.decode()
    owner.post(
        "/dashboard/settings",
        {"pause_mode": "None", "billing_currency": "GBP", "billing_mode": "Invoice"},
    )

    assert "by card" in settings_page and 'name="billing_mode"' not in settings_page
    assert Merchant.objects.get(pk=card.merchant.pk).billing_mode == BillingMode.CARD
