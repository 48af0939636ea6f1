"""Secrets in the admin (decisions.md, "Staff, wave 4"): an Operator never sees a signing
secret, a previous secret, a lab's Site Flow token or secret, or an API key; an Administrator
sees the signing secret masked, and a Reveal (a POST, CSRF checked) shows it and writes the
audit log; rotation is an action, not a field. A merchant's owner is never a staff account, and
merchants see the keys staff issued as "issued by the service's staff"."""

import importlib
import re
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.forms import MultiWidget
from django.test import Client

from merchants.models import ApiKey, Environment, Merchant
from merchants.services import CreatedMerchant, signing_secret_rotate
from staff.models import AuditEntry
from staff.services import staff_user_save
from tests.labs.factories import LabFactory
from tests.support.dashboard import signed_in_client
from tests.support.staff import signed_in

pytestmark = pytest.mark.django_db

TOKEN = "siteflow-token-abc123"
LAB_SECRET = "siteflow-secret-xyz789"


@pytest.fixture
def operator() -> Client:
    return signed_in(staff_user_save(username="olga")[0])


@pytest.fixture
def administrator() -> Client:
    return signed_in(staff_user_save(username="ada", administrator=True)[0])


@pytest.fixture
def rotated(merchant: CreatedMerchant) -> Environment:
    """The Sandbox environment just after a rotation: a secret and a previous one that still
    signs."""
    environment = Environment.objects.get(merchant=merchant.merchant, kind="Sandbox")
    signing_secret_rotate(environment=environment)
    environment.refresh_from_db()
    assert environment.previous_signing_secret
    return environment


def secrets(environment: Environment) -> list[str]:
    return [environment.callback_signing_secret, environment.previous_signing_secret]


def html(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def assert_admins_403(response: Any) -> None:
    assert response.status_code == 403
    assert response["Content-Type"].startswith("text/html")
    assert 'id="refusal"' in response.content.decode()


# --- Operators ------------------------------------------------------------------------------


def test_an_operators_environment_and_merchant_pages_show_no_secret(
    operator: Client, rotated: Environment
) -> None:
    pages = [
        f"/admin/merchants/environment/{rotated.pk}/change/",
        f"/admin/merchants/environment/{rotated.pk}/history/",
        "/admin/merchants/environment/",
        f"/admin/merchants/merchant/{rotated.merchant_id}/change/",
        "/admin/merchants/merchant/",
    ]
    for url in pages:
        text = html(operator, url)
        for secret in secrets(rotated):
            assert secret not in text, url
        assert "Reveal" not in text and "signing-secret-reveal" not in text, url
    assert rotated.merchant.name in html(operator, pages[0])  # the page itself is shown


def test_an_operator_cannot_reveal_rotate_or_read_keys(
    operator: Client, rotated: Environment
) -> None:
    before = secrets(rotated)

    assert_admins_403(operator.post(f"/admin/merchants/environment/{rotated.pk}/signing-secret/"))
    operator.post(
        "/admin/merchants/environment/",
        {"action": "rotate_signing_secret", "_selected_action": [rotated.pk]},
    )
    assert_admins_403(operator.get("/admin/merchants/apikey/"))

    rotated.refresh_from_db()
    assert secrets(rotated) == before
    assert not AuditEntry.objects.exists()


def test_an_operators_lab_pages_show_neither_token_nor_secret(operator: Client) -> None:
    lab: Any = LabFactory(code="gb9", siteflow_token=TOKEN, siteflow_secret=LAB_SECRET)

    for url in [f"/admin/labs/lab/{lab.pk}/change/", "/admin/labs/lab/"]:
        text = html(operator, url)
        assert TOKEN not in text and LAB_SECRET not in text, url
    text = html(operator, f"/admin/labs/lab/{lab.pk}/change/")
    assert "Token and secret saved; shown to administrators only." in text
    assert "gb9" in text


# --- Administrators -------------------------------------------------------------------------


def test_an_administrator_sees_the_secret_masked_and_no_secret_field(
    administrator: Client, rotated: Environment
) -> None:
    text = html(administrator, f"/admin/merchants/environment/{rotated.pk}/change/")

    for secret in secrets(rotated):
        assert secret not in text
    masked = re.search(r'<code id="masked-signing-secret">([^<]*)</code>', text)
    assert masked is not None
    assert masked.group(1) == "whsec_" + "•" * 12 + rotated.callback_signing_secret[-4:]
    assert 'name="previous_signing_secret"' not in text
    assert 'name="callback_signing_secret"' not in text
    assert 'id="signing-secret-reveal" method="post"' in text
    assert 'form="signing-secret-reveal"' in text


def test_a_reveal_is_a_post_with_csrf_that_shows_the_secrets_and_is_audited(
    rotated: Environment,
) -> None:
    ada, _ = staff_user_save(username="ada", administrator=True)
    client = Client(enforce_csrf_checks=True)
    client.force_login(ada)
    url = f"/admin/merchants/environment/{rotated.pk}/signing-secret/"
    page = client.get(f"/admin/merchants/environment/{rotated.pk}/change/").content.decode()
    [token] = re.findall(
        r'id="signing-secret-reveal"[^>]*><input type="hidden" name="csrfmiddlewaretoken" '
        r'value="([^"]+)"',
        page,
    )

    assert client.get(url).status_code == 405
    assert client.post(url).status_code == 403  # no CSRF token
    assert not AuditEntry.objects.exists()

    response = client.post(url, {"csrfmiddlewaretoken": token})

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    text = response.content.decode()
    assert f'<code id="signing-secret">{rotated.callback_signing_secret}</code>' in text
    assert f'<code id="previous-signing-secret">{rotated.previous_signing_secret}</code>' in text
    [entry] = AuditEntry.objects.all()
    assert (entry.username, entry.operation, entry.method, entry.success) == (
        "ada",
        "environment.signingSecret.reveal",
        "POST",
        True,
    )
    assert entry.target == f"environment {rotated.pk} ({rotated})"
    assert entry.path == url


def test_rotation_is_an_admin_action_audited(
    administrator: Client, merchant: CreatedMerchant
) -> None:
    environment = Environment.objects.get(merchant=merchant.merchant, kind="Live")
    old = environment.callback_signing_secret

    response = administrator.post(
        "/admin/merchants/environment/",
        {"action": "rotate_signing_secret", "_selected_action": [environment.pk]},
        follow=True,
    )

    environment.refresh_from_db()
    assert environment.callback_signing_secret != old
    assert environment.previous_signing_secret == old
    text = response.content.decode()
    assert f"New signing secret for {environment}" in text
    assert old not in text and environment.callback_signing_secret not in text
    [entry] = AuditEntry.objects.all()
    assert (entry.username, entry.operation) == ("ada", "environment.signingSecret.rotate")


# --- Owners and issued keys -----------------------------------------------------------------


def test_the_merchants_user_select_offers_no_staff_account_and_refuses_one(
    administrator: Client, merchant: CreatedMerchant
) -> None:
    customer = User.objects.create_user("shopkeeper", password="a-long-password-1")
    root = User.objects.create_superuser("root", "root@print.test", "a-long-password-1")
    url = f"/admin/merchants/merchant/{merchant.merchant.pk}/change/"
    response = administrator.get(url)
    options = response.context["adminform"].form.fields["user"].queryset

    assert customer in options
    assert not options.filter(is_staff=True).exists() and root not in options

    data = posted(response)
    data["user"] = str(User.objects.get(username="ada").pk)
    refused = administrator.post(url, data)

    assert refused.status_code == 200
    assert "user" in refused.context["adminform"].form.errors
    merchant.merchant.refresh_from_db()
    assert merchant.merchant.user is None

    data["user"] = str(customer.pk)
    saved = administrator.post(url, data)
    assert saved.status_code == 302, saved.context["adminform"].form.errors
    merchant.merchant.refresh_from_db()
    assert merchant.merchant.user == customer


def test_a_staff_owner_fails_model_validation_and_create_staff_refuses_an_owner(
    merchant: CreatedMerchant,
) -> None:
    ada, _ = staff_user_save(username="ada")
    merchant.merchant.user = ada
    with pytest.raises(ValidationError) as refused:
        merchant.merchant.full_clean()
    assert "user" in refused.value.message_dict

    owner = User.objects.create_user("owner@shop.test", password="a-long-password-1")
    Merchant.objects.filter(pk=merchant.merchant.pk).update(user=owner)
    with pytest.raises(CommandError, match="a merchant's owner is never a staff account"):
        call_command("create_staff", "--username", "owner@shop.test")
    owner.refresh_from_db()
    assert not owner.is_staff and not owner.groups.exists()


def test_merchants_see_staff_issued_keys_as_issued_by_the_services_staff(
    administrator: Client, merchant: CreatedMerchant
) -> None:
    environment = Environment.objects.get(merchant=merchant.merchant, kind="Sandbox")
    administrator.post(
        "/admin/merchants/environment/",
        {"action": "issue_api_key", "_selected_action": [environment.pk]},
    )

    issued = ApiKey.objects.filter(environment=environment).latest("id")
    assert issued.name == "issued by the service's staff"
    [entry] = AuditEntry.objects.all()
    assert (entry.username, entry.operation) == ("ada", "environment.apiKey.issue")
    text = html(signed_in_client(merchant.merchant), "/dashboard/keys")
    assert "issued by the service&#x27;s staff" in text
    assert "ada" not in text


def test_the_migration_renames_keys_named_after_a_staff_user(merchant: CreatedMerchant) -> None:
    staff_user_save(username="adaadmin")
    environment = Environment.objects.get(merchant=merchant.merchant, kind="Sandbox")
    ApiKey.objects.filter(environment=environment).update(name="issued by adaadmin")
    ApiKey.objects.filter(environment__merchant=merchant.merchant, environment__kind="Live").update(
        name="issued by marketing"  # the merchant's own name for a key: kept
    )
    migration = importlib.import_module(
        "merchants.migrations.0004_merchant_owner_never_staff_keys_issued_by_staff"
    )

    migration.staff_issued_keys_renamed(apps, None)

    assert set(ApiKey.objects.values_list("environment__kind", "name")) == {
        ("Sandbox", "issued by the service's staff"),
        ("Live", "issued by marketing"),
    }


def posted(response: Any) -> dict[str, Any]:
    """The admin change page's form and inline forms as the browser would post them unchanged."""
    data: dict[str, Any] = {}
    forms = [response.context["adminform"].form]
    for inline in response.context["inline_admin_formsets"]:
        forms += [inline.formset.management_form, *inline.formset.forms]
    for form in forms:
        for name, field in form.fields.items():
            value = form[name].value()
            if value is None or value is False:
                continue
            if isinstance(field.widget, MultiWidget):  # the creation time: a date and a time
                for index, part in enumerate(field.widget.decompress(value) or []):
                    data[f"{form.add_prefix(name)}_{index}"] = part
            else:
                data[form.add_prefix(name)] = value
    return data
