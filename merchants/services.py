"""Writes for merchant accounts, environments and keys."""

from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from common.errors import ValidationFailed
from common.keys import key_digest_new, key_revoke
from merchants.keys import (
    generate_api_key,
    generate_signing_secret,
    key_prefix,
)
from merchants.models import (
    ApiKey,
    BillingMode,
    Environment,
    EnvironmentKind,
    Merchant,
    PauseMode,
)

# How long the previous signing secret still signs callbacks after a rotation.
SIGNING_SECRET_OVERLAP = timedelta(hours=24)
# The name of a key the service's staff issued: merchants never see a staff username (the
# audit log says who issued it).
STAFF_ISSUED_KEY_NAME = "issued by the service's staff"


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
    billing_mode: str = BillingMode.INVOICE,
    key_name: str = "initial",
    owner: User | None = None,
) -> CreatedMerchant:
    """Create a merchant (signed in to the dashboard by ``owner``, a user who is not staff,
    when given) with its Sandbox and Live environments and one key for each, named
    ``key_name``."""
    if pause_indefinite:
        pause_mode, minutes = PauseMode.INDEFINITE, 0
    elif pause_minutes:
        pause_mode, minutes = PauseMode.MINUTES, pause_minutes
    else:
        pause_mode, minutes = PauseMode.NONE, 0
    merchant = Merchant.objects.create(
        name=name,
        email=email,
        billing_currency=currency.upper(),
        billing_mode=billing_mode,
        user=owner,
    )
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
        _, keys[kind] = api_key_create(environment=environment, name=key_name, key=given)
    return CreatedMerchant(merchant, keys[EnvironmentKind.SANDBOX], keys[EnvironmentKind.LIVE])


def environment_settings_update(
    *, environment: Environment, callback_url: str, pause_mode: str, pause_minutes: int
) -> None:
    """Set the default callback URL and the pause window (minutes count only for ``Minutes``)."""
    if pause_mode == PauseMode.MINUTES and pause_minutes < 1:
        raise ValidationFailed.single(
            "pauseMinutes", "Invalid", "A pause of some minutes needs at least one minute."
        )
    environment.callback_url = callback_url
    environment.pause_mode = pause_mode
    environment.pause_minutes = pause_minutes if pause_mode == PauseMode.MINUTES else 0
    environment.save(update_fields=["callback_url", "pause_mode", "pause_minutes"])


def merchant_currency_update(*, merchant: Merchant, currency: str) -> None:
    """The currency the merchant is billed in (the billing mode is staff's to change)."""
    merchant.billing_currency = currency.upper()
    merchant.save(update_fields=["billing_currency"])


@transaction.atomic
def signing_secret_rotate(*, environment: Environment) -> str:
    """A new signing secret; the old one keeps signing callbacks (beside the new one) for
    ``SIGNING_SECRET_OVERLAP``, so receivers can switch without losing a delivery."""
    locked = Environment.objects.select_for_update().get(pk=environment.pk)
    locked.previous_signing_secret = locked.callback_signing_secret
    locked.previous_signing_secret_until = timezone.now() + SIGNING_SECRET_OVERLAP
    locked.callback_signing_secret = generate_signing_secret()
    locked.save(
        update_fields=[
            "previous_signing_secret",
            "previous_signing_secret_until",
            "callback_signing_secret",
        ]
    )
    environment.refresh_from_db()
    return locked.callback_signing_secret
