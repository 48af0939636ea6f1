"""Writes for merchant accounts, environments and keys."""

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from common.errors import ValidationFailed
from merchants.keys import (
    MIN_KEY_LENGTH,
    api_key_digest,
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
    if len(clear) < MIN_KEY_LENGTH:
        raise ValidationFailed.single(
            "key", "TooShort", f"An API key must have at least {MIN_KEY_LENGTH} characters."
        )
    digest = api_key_digest(clear)
    if ApiKey.objects.filter(digest=digest).exists():
        raise ValidationFailed.single("key", "AlreadyExists", "This API key is already in use.")
    api_key = ApiKey.objects.create(
        environment=environment, name=name, prefix=key_prefix(clear), digest=digest
    )
    return api_key, clear


def api_key_revoke(*, api_key: ApiKey) -> None:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])


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
