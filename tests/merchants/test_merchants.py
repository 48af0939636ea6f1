import hashlib
import io

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from merchants.models import ApiKey, Environment, Merchant, PauseMode
from merchants.services import api_key_create, merchant_create


@pytest.mark.django_db
def test_creating_a_merchant_creates_sandbox_and_live_with_a_key_each() -> None:
    created = merchant_create(name="Acme", email="a@acme.test")

    kinds = sorted(
        Environment.objects.filter(merchant=created.merchant).values_list("kind", flat=True)
    )
    assert kinds == ["Live", "Sandbox"]
    assert created.sandbox_api_key.startswith("sk_sandbox_")
    assert created.live_api_key.startswith("sk_live_")
    secrets = set(Environment.objects.values_list("callback_signing_secret", flat=True))
    assert len(secrets) == 2 and all(s.startswith("whsec_") for s in secrets)


@pytest.mark.django_db
def test_keys_are_not_recoverable_from_the_database() -> None:
    created = merchant_create(name="Acme")

    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM merchants_apikey")
        dump = repr(cursor.fetchall())
    for clear in (created.sandbox_api_key, created.live_api_key):
        assert clear not in dump
        assert clear[12:] not in dump
        assert hashlib.sha256(clear.encode()).hexdigest() in dump


@pytest.mark.django_db
def test_the_key_selects_the_environment() -> None:
    from api.authentication import ApiKeyAuthentication

    created = merchant_create(name="Acme")

    class FakeRequest:
        def __init__(self, key: str) -> None:
            self.headers = {"X-API-Key": key}

    sandbox, _ = ApiKeyAuthentication().authenticate(FakeRequest(created.sandbox_api_key))  # type: ignore[arg-type,misc]
    live, _ = ApiKeyAuthentication().authenticate(FakeRequest(created.live_api_key))  # type: ignore[arg-type,misc]
    assert (sandbox.environment.kind, live.environment.kind) == ("Sandbox", "Live")
    assert sandbox.merchant == live.merchant == created.merchant


@pytest.mark.django_db
def test_several_keys_are_active_at_once_and_revocation_is_per_key(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ROOT_URLCONF = "tests.support.plumbing_urls"
    created = merchant_create(name="Acme")
    environment = Environment.objects.get(merchant=created.merchant, kind="Sandbox")
    _, second_clear = api_key_create(environment=environment, name="rotation")

    def status(key: str) -> int:
        return Client(headers={"X-API-Key": key}).get("/v4.0/testProbes/echo").status_code

    assert (status(created.sandbox_api_key), status(second_clear)) == (200, 200)
    from merchants.services import api_key_revoke

    api_key_revoke(
        api_key=ApiKey.objects.get(
            digest=hashlib.sha256(created.sandbox_api_key.encode()).hexdigest()
        )
    )
    assert (status(created.sandbox_api_key), status(second_clear)) == (401, 200)


@pytest.mark.django_db
def test_create_merchant_command_prints_keys_and_uses_given_ones() -> None:
    out = io.StringIO()
    call_command(
        "create_merchant", "--name", "Shop", "--email", "s@shop.test",
        "--sandbox-api-key", "sk_sandbox_given_key_0001",
        "--live-api-key", "sk_live_given_key_0000001",
        "--callback-url", "https://shop.test/hooks", "--pause-minutes", "30", "--currency", "usd",
        stdout=out,
    )  # fmt: skip

    lines = out.getvalue().splitlines()
    assert "SANDBOX_API_KEY=sk_sandbox_given_key_0001" in lines
    assert "LIVE_API_KEY=sk_live_given_key_0000001" in lines
    merchant = Merchant.objects.get(name="Shop")
    assert merchant.billing_currency == "USD"
    for environment in merchant.environments.all():
        assert environment.callback_url == "https://shop.test/hooks"
        assert (environment.pause_mode, environment.pause_minutes) == (PauseMode.MINUTES, 30)


@pytest.mark.django_db
def test_create_merchant_command_indefinite_pause() -> None:
    out = io.StringIO()
    call_command("create_merchant", "--name", "Held", "--pause-indefinite", stdout=out)
    assert set(Environment.objects.values_list("pause_mode", flat=True)) == {PauseMode.INDEFINITE}
    assert (
        sum(
            line.startswith(("SANDBOX_API_KEY=", "LIVE_API_KEY="))
            for line in out.getvalue().splitlines()
        )
        == 2
    )


@pytest.mark.django_db
def test_a_key_in_use_cannot_be_given_twice() -> None:
    from django.core.management.base import CommandError

    merchant_create(name="A", sandbox_api_key="sk_sandbox_same_key_000000")
    with pytest.raises(CommandError, match="already in use"):
        call_command(
            "create_merchant",
            "--name",
            "B",
            "--sandbox-api-key",
            "sk_sandbox_same_key_000000",
            stdout=io.StringIO(),
        )
    assert Merchant.objects.filter(name="B").count() == 0


@pytest.mark.django_db
def test_given_keys_must_be_long_and_only_a_quarter_is_kept_in_clear() -> None:
    from common.errors import ValidationFailed

    with pytest.raises(ValidationFailed, match="at least 24"):
        merchant_create(name="Short", sandbox_api_key="sk_sandbox_short_key_01")
    created = merchant_create(name="Long", sandbox_api_key="sk_sandbox_long_given_key_0001")

    stored = ApiKey.objects.get(digest=hashlib.sha256(created.sandbox_api_key.encode()).hexdigest())
    assert stored.prefix == "sk_sand"
    assert len(stored.prefix) <= len(created.sandbox_api_key) // 4


def test_create_merchant_refuses_a_currency_without_an_exchange_rate(catalogue: None) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="XYZ has no exchange rate"):
        call_command("create_merchant", "--name", "Odd", "--currency", "XYZ", stdout=io.StringIO())
    assert not Merchant.objects.filter(name="Odd").exists()
