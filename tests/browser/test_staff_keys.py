"""Issuing a staff API key in the admin (shown once) and revoking it, in Chromium."""

import re
from typing import Any

import pytest

from staff.services import staff_user_save

pytestmark = pytest.mark.django_db(transaction=True)

PROBE = "/v4.0/fulfilmentLocations/zz1/capabilities"  # 404 once authenticated, else 401


@pytest.fixture
def administrator_and_staff(transactional_db: None) -> None:
    # Made before the browser starts (see test_pages.py).
    staff_user_save(username="root", password="correct-horse-battery", administrator=True)
    # An operator: a staff key can do what its user's role can (no role, nothing).
    staff_user_save(username="ops", email="ops@example.com", password="another-horse-battery")


def test_issue_a_staff_key_shown_once_then_revoke_it(
    administrator_and_staff: None, page: Any, live_server: Any
) -> None:
    base = live_server.url
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "correct-horse-battery")
    page.click("input[type=submit]")
    page.wait_for_selector("text=Site administration")

    page.goto(f"{base}/admin/staff/staffapikey/add/")
    page.select_option("#id_user", label="ops")
    page.fill("#id_name", "browser")
    page.click("input[name=_save]")

    message = page.locator(".messagelist").inner_text()
    [key] = re.findall(r"sk_staff_[A-Za-z0-9_-]{43}", message)
    assert "New staff key for ops" in message
    assert page.request.get(f"{base}{PROBE}", headers={"X-API-Key": key}).status == 404

    page.goto(f"{base}/admin/staff/staffapikey/")
    assert key not in page.content()
    row = page.locator("tr", has_text="browser")
    row.locator("input[type=checkbox]").check()
    page.select_option("select[name=action]", "revoke")
    page.click("button[name=index]")

    assert "Revoked 1 staff key(s)." in page.locator(".messagelist").inner_text()
    assert page.request.get(f"{base}{PROBE}", headers={"X-API-Key": key}).status == 401
