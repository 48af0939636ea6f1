"""Writes for merchant accounts, environments and keys."""

from dataclasses import dataclass

from django.db import transaction

from common.keys import key_digest_new, key_revoke
from merchants.keys import (
    generate_api_key,
    generate_signing_secret,
    key_prefix,
)
from merchants.models import ApiKey, Environment, EnvironmentKind, Merchant, PauseMode


@dataclass(frozen=True)
class CreatedMerchant:
    merchant: Merchant
    sandbox_api_key: str
    live_api_key: str


def api_key_create(
    *, environment: Environment, name: str = "", key: str | None = None
) -> tuple[ApiKey, str]:
    """Create a key and return it with its clear text, which is never stored."""
    clear = key or generate_api_key(environment.kind)
    digest = key_digest_new(ApiKey, clear=clear, label="An API key")
    api_key = ApiKey.objects.create(
        environment=environment, name=name, prefix=key_prefix(clear), digest=digest
    )
    return api_key, clear


def api_key_revoke(*, api_key: ApiKey) -> None:
    key_revoke(key=api_key)


@transaction.atomic
def merchant_create(
    *,
    name: str,
    email: str = "",
    sandbox_api_key: str | None = None,
    live_api_key: str | None = None,
    callback_url: str = "",
    pause_minutes: int | None = None,
    pause_indefinite: bool = False,
    currency: str = "GBP",
) -> CreatedMerchant:
    """Create a merchant with its Sandbox and Live environments and one key for each."""
    if pause_indefinite:
        pause_mode, minutes = PauseMode.INDEFINITE, 0
    elif pause_minutes:
        pause_mode, minutes = PauseMode.MINUTES, pause_minutes
    else:
        pause_mode, minutes = PauseMode.NONE, 0
    merchant = Merchant.objects.create(name=name, email=email, billing_currency=currency.upper())
    keys: dict[str, str] = {}
    for kind, given in (
        (EnvironmentKind.SANDBOX, sandbox_api_key),
        (EnvironmentKind.LIVE, live_api_key),
    ):
        environment = Environment.objects.create(
            merchant=merchant,
            kind=kind,
            callback_url=callback_url,
            pause_mode=pause_mode,
            pause_minutes=minutes,
            callback_signing_secret=generate_signing_secret(),
        )
        _, keys[kind] = api_key_create(environment=environment, name="initial", key=given)
    return CreatedMerchant(merchant, keys[EnvironmentKind.SANDBOX], keys[EnvironmentKind.LIVE])
