"""Secrets in Chromium (decisions.md, "Staff, wave 4"): an operator's environment and lab pages
show no secret; an administrator sees the signing secret masked, reveals it with the Reveal
button, and finds the reveal in the audit log."""

from dataclasses import dataclass
from typing import Any

import pytest

from merchants.models import Environment
from merchants.services import signing_secret_rotate
from staff.services import staff_user_save
from tests.labs.factories import LabFactory
from tests.merchants.factories import merchant_with_keys
from tests.support.staff import admin_sign_in

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "correct-horse-battery"
LAB_SECRET = "browser-lab-secret-4242"
LAB_TOKEN = "browser-lab-token-4242"


@dataclass(frozen=True)
class Secrets:
    environment: int
    lab: int
    current: str
    previous: str


@pytest.fixture
def secrets(transactional_db: None) -> Secrets:
    # Made before the browser starts (see test_pages.py): no ORM calls inside its event loop.
    staff_user_save(username="olga", password=PASSWORD)
    staff_user_save(username="ada", password=PASSWORD, administrator=True)
    merchant = merchant_with_keys(name="Browser Prints").merchant
    environment = Environment.objects.get(merchant=merchant, kind="Sandbox")
    signing_secret_rotate(environment=environment)
    environment.refresh_from_db()
    lab = LabFactory.create(code="gb8", siteflow_token=LAB_TOKEN, siteflow_secret=LAB_SECRET)
    return Secrets(
        environment.pk,
        lab.pk,
        environment.callback_signing_secret,
        environment.previous_signing_secret,
    )


def test_an_operators_environment_and_lab_pages_show_no_secret(
    secrets: Secrets, page: Any, live_server: Any
) -> None:
    base = live_server.url
    admin_sign_in(page, base, "olga", PASSWORD)

    page.goto(f"{base}/admin/merchants/environment/{secrets.environment}/change/")

    shown = page.inner_text("#content-main")
    assert "Browser Prints" in shown
    assert "Signing secret" not in shown
    assert page.locator("#masked-signing-secret").count() == 0
    assert page.locator("#reveal-signing-secret").count() == 0
    html = page.content()
    assert secrets.current not in html and secrets.previous not in html
    assert "whsec_" not in html

    page.goto(f"{base}/admin/labs/lab/{secrets.lab}/change/")
    assert "Token and secret saved; shown to administrators only." in page.inner_text(
        "#content-main"
    )
    assert LAB_SECRET not in page.content() and LAB_TOKEN not in page.content()


def test_an_administrator_reveals_the_secret_and_the_reveal_is_in_the_audit_log(
    secrets: Secrets, page: Any, live_server: Any
) -> None:
    base = live_server.url
    admin_sign_in(page, base, "ada", PASSWORD)
    page.goto(f"{base}/admin/merchants/environment/{secrets.environment}/change/")

    masked = page.inner_text("#masked-signing-secret")
    assert masked == "whsec_" + "•" * 12 + secrets.current[-4:]
    assert secrets.current not in page.content()
    assert page.locator("input[name=previous_signing_secret]").count() == 0

    page.click("#reveal-signing-secret")

    page.wait_for_selector("#signing-secret")
    assert page.inner_text("#signing-secret") == secrets.current
    assert page.inner_text("#previous-signing-secret") == secrets.previous
    page.goto(f"{base}/admin/staff/auditentry/")
    row = page.locator("#result_list tbody tr", has_text="environment.signingSecret.reveal")
    assert row.count() == 1
    assert "ada" in row.inner_text()
