"""Sign-up, the verification mail and completing a registration (page and API)."""

import re
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core import mail
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from dashboard.throttling import RegistrationThrottle
from merchants.models import ApiKey, Environment, Merchant, Registration
from merchants.registration import registration_start
from tests.support.dashboard import failure_codes

pytestmark = pytest.mark.django_db
TOKEN_IN_LINK = re.compile(r"\S+/dashboard/verify\?token=(\S+)")
BASE_URL = "https://print.example.com"
FORGED: dict[str, Any] = {
    "HTTP_HOST": "attacker.example",
    "HTTP_X_FORWARDED_HOST": "attacker.example:8443",
}


def signup(client: Client, **changes: str) -> tuple[int, str]:
    form = {"name": "Acme Prints", "email": "Owner@Acme.test", "password": "a-long-passphrase-9"}
    form.update(changes)
    response = client.post("/dashboard/signup", form)
    return response.status_code, response.content.decode()


def mailed_token() -> str:
    [message] = mail.outbox
    match = TOKEN_IN_LINK.search(str(message.body))
    assert match, message.body
    assert match.group(0).startswith(f"{settings.LIVE_BASE_URL}/dashboard/verify?token=")
    return match.group(1)


def complete(token: object) -> tuple[int, dict]:
    response = APIClient().post("/v4.0/registration/complete", {"token": token}, format="json")
    return response.status_code, response.json()


def test_sign_up_mails_a_verification_link_and_creates_nothing_yet() -> None:
    status, _ = signup(Client())

    assert status == 200
    [message] = mail.outbox
    assert message.to == ["owner@acme.test"]
    assert "48 hours" in message.body
    assert Registration.objects.get().email == "owner@acme.test"
    assert Merchant.objects.count() == 0 and User.objects.count() == 0


def test_sign_up_refuses_a_weak_password_and_a_bad_email_with_the_fields_messages() -> None:
    status, html = signup(Client(), email="not-an-email", password="short")

    assert status == 400
    assert "Enter a valid email address." in html
    assert "This password is too short." in html
    assert mail.outbox == [] and Registration.objects.count() == 0


def test_sign_up_form_needs_the_csrf_token() -> None:
    client = Client(enforce_csrf_checks=True)
    status, _ = signup(client)

    assert status == 403
    assert Registration.objects.count() == 0


def test_completing_creates_the_merchant_with_both_environments_and_working_keys() -> None:
    signup(Client())

    status, body = complete(mailed_token())

    assert status == 200
    merchant = Merchant.objects.get()
    assert body == {
        "outcome": "Created",
        "merchant": {"id": str(merchant.pk), "name": "Acme Prints", "email": "owner@acme.test"},
        "sandboxApiKey": body["sandboxApiKey"],
        "liveApiKey": body["liveApiKey"],
        "traceParent": body["traceParent"],
    }
    assert body["sandboxApiKey"].startswith("sk_sandbox_")
    assert body["liveApiKey"].startswith("sk_live_")
    assert sorted(Environment.objects.values_list("kind", flat=True)) == ["Live", "Sandbox"]
    assert merchant.user is not None and merchant.user.check_password("a-long-passphrase-9")
    assert merchant.billing_mode == "Card"  # self-registered merchants pay by card
    for key in (body["sandboxApiKey"], body["liveApiKey"]):
        response = APIClient().get("/v4.0/orders", HTTP_X_API_KEY=key)
        assert response.status_code == 200, response.content


def test_a_used_token_is_refused_and_creates_nothing_more() -> None:
    signup(Client())
    token = mailed_token()
    complete(token)

    status, body = complete(token)

    assert status == 400
    assert failure_codes(body, "token") == ["TokenUsed"]
    assert Merchant.objects.count() == 1 and ApiKey.objects.count() == 2


@pytest.mark.parametrize("token", ["nonsense", "1:1u2v3w:forged-signature", ""])
def test_an_unknown_token_is_refused(token: str) -> None:
    status, body = complete(token)

    assert status == 400
    assert body["outcome"] == "ValidationFailed"
    assert "token" in body["data"]["failures"]
    assert Merchant.objects.count() == 0


def test_a_token_older_than_48_hours_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 49 * 3600)
    _, token = registration_start(name="Late", email="late@prints.test", password="x-long-pass-1")
    monkeypatch.setattr(time, "time", real)

    status, body = complete(token)

    assert status == 400
    assert failure_codes(body, "token") == ["TokenExpired"]
    assert Merchant.objects.count() == 0


def test_a_token_47_hours_old_still_works(monkeypatch: pytest.MonkeyPatch) -> None:
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 47 * 3600)
    _, token = registration_start(name="Slow", email="slow@prints.test", password="x-long-pass-1")
    monkeypatch.setattr(time, "time", real)

    status, _ = complete(token)

    assert status == 200


def test_a_body_that_is_not_a_token_is_a_validation_failure_not_a_500() -> None:
    for body in ({}, {"token": 5}, {"token": "a", "extra": 1}, ["token"]):
        response = APIClient().post("/v4.0/registration/complete", body, format="json")
        assert response.status_code == 400, (body, response.content)
        assert response.json()["outcome"] == "ValidationFailed"


def test_the_verify_page_asks_first_then_creates_the_account_and_shows_the_keys_once() -> None:
    signup(Client())
    token = mailed_token()
    client = Client()

    shown = client.get(f"/dashboard/verify?token={token}")
    assert shown.status_code == 200 and Merchant.objects.count() == 0

    created = client.post("/dashboard/verify", {"token": token})
    html = created.content.decode()
    assert created.status_code == 200
    assert re.search(r"sk_sandbox_\S+", html) and re.search(r"sk_live_\S+", html)
    assert client.get("/dashboard/").status_code == 200  # signed in

    again = Client().post("/dashboard/verify", {"token": token})
    assert again.status_code == 400
    assert "already been used" in again.content.decode()
    assert "sk_live_" not in again.content.decode()


def test_sign_up_and_completion_are_rate_limited(
    monkeypatch: pytest.MonkeyPatch, settings: Any, tmp_path: Path
) -> None:
    cache.clear()
    monkeypatch.setattr(RegistrationThrottle, "rate", "2/hour", raising=False)
    client = Client()

    assert [signup(client, email=f"a{i}@prints.test")[0] for i in range(3)] == [200, 200, 429]
    assert Registration.objects.count() == 2
    cache.clear()  # the counts with Redis; without, they are in a file: a new one
    settings.RATE_LIMIT_DATABASE = tmp_path / "rate-limits-again.sqlite3"
    assert [complete(token)[0] for token in ("x", "y")] == [400, 400]
    status, body = complete("z")
    assert status == 429 and body["outcome"] == "TooManyRequests"
    assert (
        "Retry-After"
        in APIClient().post("/v4.0/registration/complete", {"token": "z"}, format="json").headers
    )
    cache.clear()


def test_signing_up_with_a_registered_address_answers_as_for_a_new_one_and_mails_its_owner() -> (
    None
):
    _, fresh = signup(Client(), email="new@acme.test")
    signup(Client())
    complete(mailed_token_to("owner@acme.test"))
    mail.outbox.clear()

    status, html = signup(Client(), password="another-long-passphrase-3")

    assert status == 200
    assert _without_csrf(html) == _without_csrf(fresh).replace("new@acme.test", "owner@acme.test")
    [message] = mail.outbox
    assert message.to == ["owner@acme.test"]
    assert message.subject == "Someone tried to sign up with your email address"
    assert f"{settings.LIVE_BASE_URL}/dashboard/password-reset" in message.body
    assert "verify" not in message.body
    assert Registration.objects.filter(email="owner@acme.test").count() == 1  # the first only
    assert User.objects.count() == 1


def _without_csrf(html: str) -> str:
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)


def mailed_token_to(address: str) -> str:
    [message] = [m for m in mail.outbox if m.to == [address]]
    match = TOKEN_IN_LINK.search(str(message.body))
    assert match, message.body
    return match.group(1)


@pytest.mark.parametrize(
    ("password", "message"),
    [
        ("owner@acme.test", "The password is too similar to the"),
        ("Acme Prints 1", "The password is too similar to the"),
        ("4815162342", "This password is entirely numeric."),
        (" " * 12, "This password is only spaces"),
        ("kx7-Rq2-z", "This password is too short. It must contain at least 10 characters."),
    ],
)
def test_sign_up_refuses_passwords_like_the_account_all_digits_blank_or_short(
    password: str, message: str
) -> None:
    status, html = signup(Client(), password=password)

    assert status == 400
    assert message in html.replace("&#x27;", "'")
    assert mail.outbox == [] and Registration.objects.count() == 0


@pytest.mark.parametrize(
    ("password", "warning"),
    [
        ("Passw0rd!!", "This is similar to a commonly used password."),
        ("abcabcabca", 'Repeats like "abcabcabc" are only slightly harder to guess than "abc".'),
        ("1111111111a", 'Repeats like "aaa" are easy to guess.'),
        (" a a a a a", 'Repeats like "abcabcabc" are only slightly harder to guess than "abc".'),
    ],
)
def test_sign_up_refuses_passwords_easy_to_guess_saying_why(password: str, warning: str) -> None:
    status, html = signup(Client(), password=password)

    assert status == 400
    assert f"This password is too easy to guess. {warning}" in html.replace("&quot;", '"')
    assert mail.outbox == [] and Registration.objects.count() == 0


def test_sign_up_takes_a_password_of_a_few_unrelated_words() -> None:
    status, _ = signup(Client(), password="velvet-otter-harbour")

    assert status == 200
    assert Registration.objects.count() == 1


def test_the_registration_endpoint_is_in_the_openapi_document() -> None:
    document = Client().get("/v4.0/schema?format=json").json()
    operation = document["paths"]["/v4.0/registration/complete"]["post"]
    response = operation["responses"]["200"]["content"]["application/json"]["schema"]
    request = operation["requestBody"]["content"]["application/json"]["schema"]
    schemas = document["components"]["schemas"]
    assert schemas[request["$ref"].rsplit("/", 1)[1]]["required"] == ["token"]
    shape = schemas[response["$ref"].rsplit("/", 1)[1]]
    assert set(shape["properties"]) == {
        "outcome", "merchant", "sandboxApiKey", "liveApiKey", "traceParent",
    }  # fmt: skip
    assert operation.get("security", [{}]) in ([{}], [])  # no key needed


def test_the_verification_link_is_built_on_the_configured_base_url_whatever_the_host(
    settings,  # type: ignore[no-untyped-def]
) -> None:
    settings.LIVE_BASE_URL = BASE_URL
    settings.ALLOWED_HOSTS = ["*"]
    form = {"name": "Acme Prints", "email": "owner@acme.test", "password": "a-long-passphrase-9"}

    response = Client().post("/dashboard/signup", form, **FORGED)

    assert response.status_code == 200
    [message] = mail.outbox
    assert "attacker.example" not in message.body
    [link] = [line for line in str(message.body).splitlines() if "/dashboard/verify" in line]
    assert link.startswith(f"{BASE_URL}/dashboard/verify?token=")


def test_the_mail_to_a_registered_address_links_to_the_configured_base_url_whatever_the_host(
    settings,  # type: ignore[no-untyped-def]
) -> None:
    signup(Client())
    complete(mailed_token_to("owner@acme.test"))
    mail.outbox.clear()
    settings.LIVE_BASE_URL = BASE_URL
    settings.ALLOWED_HOSTS = ["*"]
    form = {"name": "Acme Prints", "email": "owner@acme.test", "password": "a-long-passphrase-9"}

    Client().post("/dashboard/signup", form, **FORGED)

    [message] = mail.outbox
    assert "attacker.example" not in message.body
    assert f"To sign in: {BASE_URL}/dashboard/login\n" in message.body
    assert f"Forgotten your password? {BASE_URL}/dashboard/password-reset\n" in message.body
