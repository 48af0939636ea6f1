"""Issuing (shown once) and revoking staff keys in the admin; the audit log is read-only."""

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from staff.keys import staff_api_key_digest
from staff.models import AuditEntry, StaffApiKey
from staff.services import audit_entry_record, staff_api_key_create, staff_user_save
from tests.staff.factories import StaffUserFactory

pytestmark = pytest.mark.django_db

KEY = re.compile(r"sk_staff_[A-Za-z0-9_-]{43}")


@pytest.fixture
def admin_client() -> Client:
    user = User.objects.create_superuser("root", "root@print.test", "a-long-password-1")
    client = Client()
    client.force_login(user)
    return client


def test_issuing_a_staff_key_shows_it_once(admin_client: Client) -> None:
    ops = StaffUserFactory.create(username="ops")

    response = admin_client.post(
        "/admin/staff/staffapikey/add/", {"user": ops.pk, "name": "laptop"}, follow=True
    )

    html = response.content.decode()
    [key] = set(KEY.findall(html))
    assert "New staff key for ops" in html
    api_key = StaffApiKey.objects.get()
    assert (api_key.user, api_key.name, api_key.digest) == (
        ops,
        "laptop",
        staff_api_key_digest(key),
    )
    assert key not in admin_client.get("/admin/staff/staffapikey/").content.decode()
    assert (
        key
        not in admin_client.get(f"/admin/staff/staffapikey/{api_key.pk}/change/").content.decode()
    )


def test_keys_are_issued_to_staff_users_only(admin_client: Client) -> None:
    customer = User.objects.create_user("customer", password="a-long-password-1")

    response = admin_client.post("/admin/staff/staffapikey/add/", {"user": customer.pk})

    assert response.status_code == 200  # the form again, with its error
    assert not StaffApiKey.objects.exists()


def test_revoking_staff_keys(admin_client: Client) -> None:
    operator, _ = staff_user_save(username="ops")
    api_key, clear = staff_api_key_create(user=operator)
    other, other_clear = staff_api_key_create(user=api_key.user)

    admin_client.post(
        "/admin/staff/staffapikey/", {"action": "revoke", "_selected_action": [api_key.pk]}
    )

    api_key.refresh_from_db()
    other.refresh_from_db()
    assert api_key.revoked_at is not None
    assert other.revoked_at is None
    probe = "/v4.0/fulfilmentLocations/zz1/capabilities"  # 404 once authenticated
    assert Client(headers={"X-API-Key": clear}).get(probe).status_code == 401
    assert Client(headers={"X-API-Key": other_clear}).get(probe).status_code == 404


def test_the_audit_log_is_listed_and_read_only(admin_client: Client) -> None:
    ops = StaffUserFactory.create(username="ops")
    entry = audit_entry_record(
        user=ops, operation="shipment.cancel", target="order ord_1 shipment shp_2", success=True
    )

    listing = admin_client.get("/admin/staff/auditentry/")

    assert listing.status_code == 200
    assert "shipment.cancel" in listing.content.decode()
    refused = admin_client.get("/admin/staff/auditentry/add/")
    assert refused.status_code == 403 and refused["Content-Type"].startswith("text/html")
    admin_client.post(f"/admin/staff/auditentry/{entry.pk}/delete/", {"post": "yes"})
    assert AuditEntry.objects.filter(pk=entry.pk).exists()
